package nixmsg

// Checklist item 17 (sdk/conformance/checklist.md): the client's lifecycle. Close right after a
// handler returns loses no ack; Close drains what is in flight within its bound and fails the
// rest with "closed"; Close is idempotent from any state; every call after Close fails with
// "closed"; no goroutine outlives Close or a stop for good.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
)

const (
	lifecycleKept = 5
	baselineWait  = 5 * time.Second
)

// closeRounds is the number of rounds of 17a: 20, or NIXMSG_CLOSE_ROUNDS for the on-demand
// reproduction (sdk/conformance/close_after_handler.sh).
func closeRounds(t *testing.T) int {
	t.Helper()
	v := os.Getenv("NIXMSG_CLOSE_ROUNDS")
	if v == "" {
		return 20
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("NIXMSG_CLOSE_ROUNDS must be a positive integer, not %q", v)
	}
	return n
}

// backToBaseline polls (bounded) until no more goroutines run than base; it fails with the
// stacks of the ones left.
func backToBaseline(t *testing.T, base int, what string) {
	t.Helper()
	deadline := time.Now().Add(baselineWait)
	for {
		n := runtime.NumGoroutine()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%s: %d goroutines outlived the client (%d, baseline %d):\n%s",
				what, n-base, n, base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// adminGet makes an admin API GET through the harness and decodes `data` of the answer.
func adminGet(t *testing.T, h *harness, path string, data any) {
	t.Helper()
	raw, err := h.command(map[string]any{"cmd": "admin", "method": "GET", "path": path})
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Status int `json:"status"`
		Body   struct {
			Data json.RawMessage `json:"data"`
		} `json:"body"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.Status != 200 {
		t.Fatalf("GET %s: %d %s %v", path, r.Status, raw, err)
	}
	if err := json.Unmarshal(r.Body.Data, data); err != nil {
		t.Fatal(err)
	}
}

// deliveryStates returns the state of the delivery of each of from's messages to `to`.
func deliveryStates(t *testing.T, h *harness, from, to string) map[string]string {
	t.Helper()
	var list struct {
		Items []struct {
			Seq int64  `json:"seq"`
			ID  string `json:"id"`
		} `json:"items"`
	}
	adminGet(t, h, fmt.Sprintf("/api/admin/messages?sender=%s&recipient=%s", from, to), &list)
	out := map[string]string{}
	for _, m := range list.Items {
		var d struct {
			Items []struct {
				State string `json:"state"`
			} `json:"items"`
		}
		adminGet(t, h, fmt.Sprintf("/api/admin/messages/%d", m.Seq), &d)
		if len(d.Items) > 0 {
			out[m.ID] = d.Items[0].State
		}
	}
	return out
}

func TestChecklist17aCloseAsTheHandlerReturnsLosesNoAck(t *testing.T) {
	h := needServer(t)
	base := runtime.NumGoroutine()
	ea := h.endpoint(t)
	a := online(t, h.info.WsURL, ea, Options{})
	rounds := closeRounds(t)
	redelivered, notAccepted := 0, 0
	for round := 1; round <= rounds; round++ {
		eb := h.endpoint(t)
		var ids []string
		for i := 1; i <= lifecycleKept; i++ {
			r, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), fmt.Sprintf("r%d-%d", round, i),
				WithKeep(), WithTTL(600*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.ID)
		}
		b, err := New(h.info.WsURL, eb.ID, Password(eb.Password), Options{})
		if err != nil {
			t.Fatal(err)
		}
		fifth := make(chan struct{}, 1)
		seen := 0
		b.OnMessage(func(Message) error {
			if seen++; seen == lifecycleKept {
				fifth <- struct{}{} // wakes the test, which closes as this handler returns
			}
			return nil
		})
		if err := b.Connect(ctx15(t)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-fifth:
		case <-time.After(waitTimeout):
			t.Fatalf("round %d: the five messages did not arrive", round)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t0 := time.Now()
		if err := b.Close(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if took := time.Since(t0); took > 7*time.Second {
			t.Fatalf("round %d: Close took %v", round, took)
		}
		// Right after Close, without a retry loop: Close waited for the ack responses.
		states := deliveryStates(t, h, ea.ID, eb.ID)
		for _, id := range ids {
			if states[id] != "accepted" {
				notAccepted++
			}
		}
		again := online(t, h.info.WsURL, eb, Options{})
		marker, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "marker", WithKeep())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := again.messages.waitFor(byID(marker.ID), "the marker", waitTimeout); err != nil {
			t.Fatal(err)
		}
		redelivered += again.messages.count(func(m Message) bool { return slices.Contains(ids, m.ID) })
		_ = again.c.Close(context.Background())
	}
	// The reproduction's result line (sdk/conformance/close_after_handler.sh reads it).
	t.Logf("rounds=%d redelivered=%d not_accepted=%d", rounds, redelivered, notAccepted)
	if redelivered != 0 || notAccepted != 0 {
		t.Fatalf("%d messages delivered again at the next login, %d deliveries not accepted right after Close",
			redelivered, notAccepted)
	}
	_ = a.c.Close(context.Background())
	backToBaseline(t, base, "17a")
}

func TestChecklist17bCloseDrainsThenFailsTheRestWithClosed(t *testing.T) {
	h := needServer(t)
	base := runtime.NumGoroutine()
	ea := h.endpoint(t)
	b := online(t, h.info.WsURL, h.endpoint(t), Options{})
	// Drain: the send's response arrives during Close. The proxy keeps it back until Close has
	// begun, so a fast server cannot answer before the send is seen in flight.
	proxy := startProxy(t, h.address())
	a := online(t, "ws://"+proxy.address()+"/mqtt", ea, Options{})
	type outcome struct {
		r   SendResult
		err error
	}
	sending := make(chan outcome, 1)
	proxy.setPauseDown(true)
	go func() {
		r, err := a.c.SendText(context.Background(), Endpoint(b.c.EndpointID()), "in flight")
		sending <- outcome{r, err}
	}()
	waitInFlight(t, a.c, 1, 0)
	closing := make(chan error, 1)
	go func() { closing <- a.c.Close(context.Background()) }()
	waitCloseStarted(t, a.c)
	proxy.setPauseDown(false)
	if err := <-closing; err != nil {
		t.Fatal(err)
	}
	sent := <-sending
	if sent.err != nil || len(sent.r.ID) != 36 {
		t.Fatalf("the send in flight during Close: %+v", sent)
	}
	if _, err := b.messages.waitFor(byID(sent.r.ID), "the drained send", waitTimeout); err != nil {
		t.Fatal(err)
	}

	// Bound: responses never arrive; Close gives up at its deadline and fails them with closed.
	a2 := online(t, "ws://"+proxy.address()+"/mqtt", ea, Options{})
	proxy.setHoldDown(true)
	codes := make(chan string, 3)
	calls := []func() error{
		func() error {
			_, err := a2.c.SendText(context.Background(), Endpoint(b.c.EndpointID()), "held")
			return err
		},
		func() error { _, err := a2.c.Status(context.Background(), sent.r.ID, ListOptions{}); return err },
		func() error { _, err := a2.c.Self(context.Background()); return err },
	}
	for _, call := range calls {
		go func() { codes <- CodeOf(call()) }()
	}
	waitInFlight(t, a2.c, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	t0 := time.Now()
	_ = a2.c.Close(ctx)
	cancel()
	took := time.Since(t0)
	if took < 900*time.Millisecond || took > 4*time.Second {
		t.Fatalf("Close with a 1 s bound took %v", took)
	}
	for range calls {
		select {
		case c := <-codes:
			if c != CodeClosed {
				t.Fatalf("a call left in flight ended with %q, want closed", c)
			}
		case <-time.After(time.Second):
			t.Fatal("a call was left pending after Close")
		}
	}
	proxy.close()
	_ = b.c.Close(context.Background())
	backToBaseline(t, base, "17b")
}

// waitInFlight polls (bounded) until c has published at least sends sends and requests other
// requests that wait for their response.
// waitCloseStarted waits until a Close of c is under way.
func waitCloseStarted(t *testing.T, c *Client) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		c.mu.Lock()
		started := c.closeDone != nil
		c.mu.Unlock()
		if started {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("Close did not start")
		}
		time.Sleep(time.Millisecond)
	}
}

func waitInFlight(t *testing.T, c *Client, sends, requests int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		c.mu.Lock()
		s, r := c.queue.inFlight(), c.pending.size()
		c.mu.Unlock()
		if s >= sends && r >= requests {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("in flight: %d sends, %d requests; want %d and %d", s, r, sends, requests)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// closedPort is a local port nothing listens on.
func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	return port
}

// closeWithin fails unless Close returns nil within d.
func closeWithin(t *testing.T, c *Client, d time.Duration, what string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Close(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(d):
		t.Fatalf("%s: Close did not return within %v", what, d)
	}
}

func TestChecklist17cCloseIsIdempotentFromAnyState(t *testing.T) {
	h := needServer(t)
	base := runtime.NumGoroutine()
	// Built, never connected: New starts nothing, and Close is fine twice.
	never, err := New(h.info.WsURL, "never", Password("x"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := runtime.NumGoroutine(); n > base {
		t.Fatalf("New started %d goroutines", n-base)
	}
	closeWithin(t, never, 3*time.Second, "close before Connect")
	closeWithin(t, never, 3*time.Second, "close again")
	wantCode(t, never.Connect(context.Background()), CodeClosed)

	// Reconnecting to a port nothing listens on.
	nowhere := track(t, fmt.Sprintf("ws://127.0.0.1:%d/mqtt", closedPort(t)), "nowhere", Password("x"), Options{})
	nowhere.start(t)
	if _, err := nowhere.states.waitFor(func(e ConnectionEvent) bool { return e.State == StateReconnecting },
		"reconnecting", waitTimeout); err != nil {
		t.Fatal(err)
	}
	closeWithin(t, nowhere.c, 3*time.Second, "close while reconnecting")
	closeWithin(t, nowhere.c, 3*time.Second, "close again")

	// Online: twice in a row, then two at once.
	ep := h.endpoint(t)
	one := online(t, h.info.WsURL, ep, Options{})
	closeWithin(t, one.c, 3*time.Second, "first close")
	closeWithin(t, one.c, 3*time.Second, "second close")
	two := online(t, h.info.WsURL, ep, Options{})
	done := make(chan struct{}, 2)
	for range 2 {
		go func() { _ = two.c.Close(context.Background()); done <- struct{}{} }()
	}
	for range 2 {
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			t.Fatal("concurrent closes did not return")
		}
	}
	if s := two.c.State(); s != StateOffline {
		t.Fatalf("state after close: %s", s)
	}

	// Inside the connection handler, when it sees online.
	fromState := track(t, h.info.WsURL, ep.ID, Password(ep.Password), Options{})
	closedIn := make(chan time.Duration, 1)
	fromState.c.OnConnection(func(e ConnectionEvent) {
		if e.State == StateOnline {
			t0 := time.Now()
			_ = fromState.c.Close(context.Background())
			closedIn <- time.Since(t0)
		}
	})
	fromState.start(t)
	select {
	case d := <-closedIn:
		if d > 3*time.Second {
			t.Fatalf("Close inside the connection handler took %v", d)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Close inside the connection handler did not return")
	}

	// Inside a message handler: it does not wait for the handler it runs in.
	sender := online(t, h.info.WsURL, h.endpoint(t), Options{})
	inMsg := online(t, h.info.WsURL, ep, Options{})
	inMsg.c.OnMessage(func(Message) error {
		t0 := time.Now()
		_ = inMsg.c.Close(context.Background())
		closedIn <- time.Since(t0)
		return nil
	})
	if _, err := sender.c.SendText(ctx15(t), Endpoint(ep.ID), "close inside"); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-closedIn:
		if d > 3*time.Second {
			t.Fatalf("Close inside the message handler took %v", d)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Close inside the message handler did not return")
	}
	_ = sender.c.Close(context.Background())

	// After auth_failed and after kicked.
	refused := track(t, h.info.WsURL, ep.ID, Password("wrong-password"), Options{})
	wantCode(t, refused.c.Connect(ctx15(t)), CodeAuthFailed)
	closeWithin(t, refused.c, 3*time.Second, "close after auth_failed")
	if s := refused.c.State(); s != StateAuthFailed {
		t.Fatalf("the stop keeps its state: %s", s)
	}
	first := online(t, h.info.WsURL, ep, Options{})
	second := online(t, h.info.WsURL, ep, Options{})
	if _, err := first.states.waitFor(func(e ConnectionEvent) bool { return e.State == StateKicked },
		"kicked", waitTimeout); err != nil {
		t.Fatal(err)
	}
	closeWithin(t, first.c, 3*time.Second, "close after kicked")
	_ = second.c.Close(context.Background())
	backToBaseline(t, base, "17c")
}

func TestChecklist17dEveryCallAfterCloseFailsWithClosed(t *testing.T) {
	h := needServer(t)
	base := runtime.NumGoroutine()
	ep := h.endpoint(t)
	peer := online(t, h.info.WsURL, h.endpoint(t), Options{})
	c := online(t, h.info.WsURL, ep, Options{ManualAck: true})
	sent, err := peer.c.SendText(ctx15(t), Endpoint(ep.ID), "to ack later")
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.messages.waitFor(byID(sent.ID), "a message", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.c.Ack(ctx15(t), m); err != nil {
		t.Fatal(err)
	}
	_ = c.c.Close(context.Background())
	cl, ctx, other := c.c, context.Background(), peer.c.EndpointID()
	calls := map[string]func() error{
		"Send":   func() error { _, err := cl.SendText(ctx, Endpoint(other), "x"); return err },
		"Recall": func() error { _, err := cl.Recall(ctx, sent.ID); return err },
		"Status": func() error { _, err := cl.Status(ctx, sent.ID, ListOptions{}); return err },
		"Ack":    func() error { return cl.Ack(ctx, m) },
		"Unlock": func() error { return cl.Unlock(ctx, other, "pw") },
		"Self":   func() error { _, err := cl.Self(ctx); return err },
		"UpdateSelf": func() error {
			name := "x"
			return cl.UpdateSelf(ctx, SelfUpdate{Name: &name})
		},
		"SetTalkPassword":     func() error { return cl.SetTalkPassword(ctx, "x") },
		"ChangeLoginPassword": func() error { return cl.ChangeLoginPassword(ctx, ep.Password, "new-password-1") },
		"Presence":            func() error { _, err := cl.Presence(ctx, []string{other}); return err },
		"Directory":           func() error { _, err := cl.Directory(ctx, "", ListOptions{}); return err },
		"WatchPresence":       func() error { return cl.WatchAllPresence(ctx) },
		"Groups.List":         func() error { _, err := cl.Groups().List(ctx, ListOptions{}); return err },
		"Logout":              func() error { return cl.Logout(ctx) },
		"Ready":               func() error { _, err := cl.Ready(ctx); return err },
		"Connect":             func() error { return cl.Connect(ctx) },
	}
	t0 := time.Now()
	for name, call := range calls {
		if code := CodeOf(call()); code != CodeClosed {
			t.Errorf("%s after Close: %q, want closed", name, code)
		}
	}
	if d := time.Since(t0); d > time.Second {
		t.Fatalf("the calls after Close took %v: one waited for the server or a timeout", d)
	}
	_ = peer.c.Close(context.Background())
	backToBaseline(t, base, "17d")
}

func TestChecklist17fAStoppedClientHoldsNothingWithoutClose(t *testing.T) {
	h := needServer(t)
	ep := h.endpoint(t)
	base := runtime.NumGoroutine()
	refused, err := New(h.info.WsURL, ep.ID, Password("wrong-password"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, refused.Connect(ctx15(t)), CodeAuthFailed)
	backToBaseline(t, base, "after auth_failed")
	_, err = refused.SendText(context.Background(), Endpoint(ep.ID), "x")
	wantCode(t, err, CodeAuthFailed)

	first, err := New(h.info.WsURL, ep.ID, Password(ep.Password), Options{})
	if err != nil {
		t.Fatal(err)
	}
	kicked := make(chan ConnectionEvent, 1)
	first.OnConnection(func(e ConnectionEvent) {
		if e.State == StateKicked {
			kicked <- e
		}
	})
	if err := first.Connect(ctx15(t)); err != nil {
		t.Fatal(err)
	}
	second := online(t, h.info.WsURL, ep, Options{})
	select {
	case e := <-kicked:
		if e.Reason != "taken_over" {
			t.Fatalf("kicked with %q", e.Reason)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the first login was not kicked")
	}
	_ = second.c.Close(context.Background())
	backToBaseline(t, base, "after kicked")
	_, err = first.Self(context.Background())
	wantCode(t, err, CodeKicked)
}
