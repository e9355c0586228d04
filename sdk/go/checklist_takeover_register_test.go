package nixmsg

// Checklist items 10, 12 and 14 (sdk/conformance/checklist.md, spec 9 接入清单): takeover by a
// second login, registration, and the browser item (JavaScript only).

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestChecklist10SecondLoginKicksFirstNoReconnect(t *testing.T) {
	h := needServer(t)
	ep := h.endpoint(t)
	p := startProxy(t, h.address())
	first := online(t, "ws://"+p.address()+"/mqtt", ep, Options{})
	second := online(t, h.info.WsURL, ep, Options{Transport: TCP})
	kicked, err := first.states.waitFor(func(e ConnectionEvent) bool { return e.State == StateKicked }, "kicked", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if kicked.Reason != "taken_over" || kicked.Err == nil || kicked.Err.Code != CodeKicked {
		t.Fatalf("kicked event %+v", kicked)
	}
	_, err = first.c.SendText(ctx15(t), Endpoint(ep.ID), "after the kick")
	wantCode(t, err, CodeKicked)
	if err := p.accepted.expectNone(nil, "a reconnect after the kick", noReconnectWindow); err != nil {
		t.Fatal(err)
	}
	if n := p.accepted.count(nil); n != 1 {
		t.Fatalf("%d connections through the proxy", n)
	}
	if n := first.states.count(func(e ConnectionEvent) bool { return e.State == StateReconnecting }); n != 0 {
		t.Fatalf("the kicked client reported reconnecting %d times", n)
	}
	if first.c.State() != StateKicked || second.c.State() != StateOnline {
		t.Fatalf("states %s, %s", first.c.State(), second.c.State())
	}
	if self, err := second.c.Self(ctx15(t)); err != nil || self.ID != ep.ID {
		t.Fatalf("the second stays in: %v", err)
	}
}

func TestChecklist12Registration(t *testing.T) {
	h := needServer(t)
	ctx := ctx15(t)
	url := h.info.WsURL
	t.Cleanup(func() {
		if t.Failed() && os.Getenv("DEBUGLOG") != "" {
			b, _ := os.ReadFile(h.info.LogFile)
			t.Log(string(b[max(0, len(b)-6000):]))
		}
	})
	h.registration(t, false, "")
	_, err := Register(ctx, url, "whatever-code", RegisterOptions{ID: "reg-closed", LoginPassword: "password-1"})
	wantCode(t, err, "registration_closed")
	var e *Error
	if !asError2(err, &e) || e.Status != 403 {
		t.Fatalf("want HTTP 403, got %v", err)
	}
	h.registration(t, true, "code-one-1111")
	_, err = Register(ctx, url, "wrong-code-000", RegisterOptions{ID: "reg-wrong", LoginPassword: "password-1"})
	wantCode(t, err, "registration_code_invalid")

	id := fmt.Sprintf("reg-go-%d", os.Getpid())
	r, err := Register(ctx, url, "code-one-1111", RegisterOptions{ID: id, LoginPassword: "password-1", Name: "门口"})
	if err != nil {
		t.Fatal(err)
	}
	if r != (RegisterResult{ID: id}) {
		t.Fatalf("register %+v: no password may come back", r)
	}
	a := online(t, url, endpointInfo{ID: id, Password: "password-1"}, Options{})
	self, err := a.c.Self(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if self.Name != "门口" || self.Source != "self" {
		t.Fatalf("self %+v", self)
	}
	_ = a.c.Close(ctx)
	_, err = Register(ctx, url, "code-one-1111", RegisterOptions{ID: id, LoginPassword: "password-1"})
	wantCode(t, err, "id_taken")

	gen, err := Register(ctx, url, "code-one-1111", RegisterOptions{Name: "generated"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(gen.ID, "e_") || len(gen.LoginPassword) != 20 {
		t.Fatalf("generated %q with a %d-character password", gen.ID, len(gen.LoginPassword))
	}
	g := online(t, url, endpointInfo{ID: gen.ID, Password: gen.LoginPassword}, Options{})
	_ = g.c.Close(ctx)

	h.registration(t, true, "code-two-2222")
	_, err = Register(ctx, url, "code-one-1111", RegisterOptions{ID: "reg-old-code"})
	wantCode(t, err, "registration_code_invalid")
	again := online(t, url, endpointInfo{ID: id, Password: "password-1"}, Options{})
	if s, err := again.c.Self(ctx); err != nil || s.ID != id {
		t.Fatalf("registered endpoints still log in: %v", err)
	}
	next, err := Register(ctx, h.info.TCPURL, "code-two-2222", RegisterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(next.ID, "e_") {
		t.Fatalf("the TCP URL maps to the same HTTP API: %q", next.ID)
	}
}

func TestChecklist14BrowserOtherOrigin(t *testing.T) {
	t.Skip("checklist 14 applies to the JavaScript SDK only: a Go program does not run in a browser page")
}

var _ = context.Background
