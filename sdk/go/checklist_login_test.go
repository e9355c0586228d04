package nixmsg

// Checklist items 1, 13 and 15 (sdk/conformance/checklist.md, spec 9 接入清单): login, password
// change, session tokens.

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// noReconnectWindow is longer than the first reconnect delay (1 s + 30% jitter).
const noReconnectWindow = 2500 * time.Millisecond

func TestChecklist01LoginAndHandshakeParameters(t *testing.T) {
	h := needServer(t)
	ep := h.endpoint(t)
	a := online(t, h.info.WsURL, ep, Options{})
	info, ok := a.c.ServerInfo()
	if !ok {
		t.Fatal("no server info")
	}
	if info.MaxBodyBytes != 262144 || info.MaxMetaBytes != 4096 || info.MaxFrameBytes != 786432 {
		t.Fatalf("limits %+v", info)
	}
	if info.AckTimeoutSeconds != 2 {
		t.Fatalf("ack_timeout_seconds %d, want the harness's 2", info.AckTimeoutSeconds)
	}
	if info.MaxTTLSeconds <= 0 || info.MaxScheduleSeconds <= 0 {
		t.Fatalf("limits %+v", info)
	}
	if !regexp.MustCompile(`^\d+\.\d+\.\d+`).MatchString(info.ServerVersion) {
		t.Fatalf("server_version %q", info.ServerVersion)
	}
	if off := a.c.ClockOffset(); off > time.Second || off < -time.Second {
		t.Fatalf("clock offset %v", off)
	}
	var states []ConnectionState
	for _, s := range a.states.all() {
		states = append(states, s.State)
	}
	if len(states) != 2 || states[0] != StateConnecting || states[1] != StateOnline {
		t.Fatalf("states %v, want [connecting online]", states)
	}
	tokens := a.sessions.all()
	if len(tokens) != 1 || !strings.HasPrefix(tokens[0], "nst_") {
		t.Fatalf("session tokens %d (%v)", len(tokens), len(tokens) == 1 && strings.HasPrefix(tokens[0], "nst_"))
	}
	if a.c.SessionToken() != tokens[0] {
		t.Fatal("SessionToken differs from the OnSession token")
	}
	if self, err := a.c.Self(ctx15(t)); err != nil || self.ID != ep.ID {
		t.Fatalf("self %q %v", self.ID, err)
	}

	// Raw TCP only when asked for; the same handshake.
	tcp := online(t, h.info.WsURL, ep, Options{Transport: TCP})
	if info, _ := tcp.c.ServerInfo(); info.MaxFrameBytes != 786432 {
		t.Fatalf("TCP limits %+v", info)
	}
	if tcp.c.link.o.url.Scheme != "mqtt" {
		t.Fatalf("TCP client connected with %s", tcp.c.link.o.url)
	}
	if self, err := tcp.c.Self(ctx15(t)); err != nil || self.ID != ep.ID {
		t.Fatalf("self over TCP %q %v", self.ID, err)
	}
}

func TestChecklist13PasswordChangeOldFailsNoReconnect(t *testing.T) {
	h := needServer(t)
	ep := h.endpoint(t)
	a := online(t, h.info.WsURL, ep, Options{})
	wantCode(t, a.c.ChangeLoginPassword(ctx15(t), "not-the-password", "new-password-1"), "unauthorized")
	if err := a.c.ChangeLoginPassword(ctx15(t), ep.Password, "new-password-1"); err != nil {
		t.Fatal(err)
	}
	second, err := a.sessions.waitCount(2, nil, "the second token", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if second == a.sessions.all()[0] || a.c.SessionToken() != second {
		t.Fatal("the change must issue a new, different token that reconnects use")
	}
	_ = a.c.Close(ctx15(t))

	b := online(t, h.info.WsURL, endpointInfo{ID: ep.ID, Password: "new-password-1"}, Options{})
	if self, err := b.c.Self(ctx15(t)); err != nil || self.ID != ep.ID {
		t.Fatalf("self %v", err)
	}
	_ = b.c.Close(ctx15(t))

	p := startProxy(t, h.address())
	old := track(t, "ws://"+p.address()+"/mqtt", ep.ID, Password(ep.Password), Options{})
	queued := make(chan error, 1)
	go func() {
		_, err := old.c.SendText(ctx15(t), Endpoint(ep.ID), "queued before the refusal")
		queued <- err
	}()
	// The send is queued before the handshake starts.
	waitQueued(t, old.c, 1)
	old.start(t)
	ev, err := old.states.waitFor(func(e ConnectionEvent) bool { return e.State == StateAuthFailed }, "auth_failed", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Reason != "bad_credentials" || ev.Err == nil || ev.Err.Code != CodeAuthFailed {
		t.Fatalf("auth_failed event %+v", ev)
	}
	wantCode(t, <-queued, CodeAuthFailed)
	_, err = old.c.Ready(ctx15(t))
	wantCode(t, err, CodeAuthFailed)
	if n := p.accepted.count(nil); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
	if err := p.accepted.expectNone(nil, "a reconnect after auth_failed", noReconnectWindow); err != nil {
		t.Fatal(err)
	}
	if old.c.State() != StateAuthFailed {
		t.Fatalf("state %s", old.c.State())
	}
}

// waitQueued waits until the client's send queue holds n sends.
func waitQueued(t *testing.T, c *Client, n int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		c.mu.Lock()
		size := c.queue.size()
		c.mu.Unlock()
		if size >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue holds %d sends, want %d", size, n)
		}
		time.Sleep(5 * time.Millisecond) // polling an in-memory counter, bounded by the deadline
	}
}

func TestChecklist15SessionTokens(t *testing.T) {
	h := needServer(t)
	ep := h.endpoint(t)
	p := startProxy(t, h.address())
	proxied := "ws://" + p.address() + "/mqtt"

	// Password login through a proxy we can cut: the SDK's own reconnect uses the token.
	a := online(t, proxied, ep, Options{})
	token := a.sessions.all()[0]
	if !strings.HasPrefix(token, "nst_") {
		t.Fatal("no nst_ token")
	}
	p.cut()
	if _, err := a.states.waitFor(func(e ConnectionEvent) bool { return e.State == StateReconnecting }, "reconnecting", waitTimeout); err != nil {
		t.Fatal(err)
	}
	if _, err := a.states.waitCount(2, func(e ConnectionEvent) bool { return e.State == StateOnline }, "online again", waitTimeout); err != nil {
		t.Fatal(err)
	}
	if n := len(a.sessions.all()); n != 1 || a.c.SessionToken() != token {
		t.Fatalf("a token reconnect must issue no new token (%d tokens)", n)
	}
	_ = a.c.Close(ctx15(t))

	// An application restart: connect with the saved token.
	b := track(t, h.info.WsURL, ep.ID, SessionToken(token), Options{})
	if err := b.c.Connect(ctx15(t)); err != nil {
		t.Fatal(err)
	}
	if n := len(b.sessions.all()); n != 0 {
		t.Fatalf("a token login issued %d tokens", n)
	}

	// A password login elsewhere takes over (0x8E) and replaces the token.
	c := online(t, h.info.WsURL, ep, Options{})
	kicked, err := b.states.waitFor(func(e ConnectionEvent) bool { return e.State == StateKicked }, "kicked", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if kicked.Reason != "taken_over" {
		t.Fatalf("kicked reason %q", kicked.Reason)
	}
	newToken := c.sessions.all()[0]
	if newToken == token {
		t.Fatal("the password login must issue a new token")
	}

	stale := track(t, proxied, ep.ID, SessionToken(token), Options{})
	stale.start(t)
	refused, err := stale.states.waitFor(func(e ConnectionEvent) bool { return e.State == StateAuthFailed }, "auth_failed", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if refused.Reason != "session_invalid" {
		t.Fatalf("reason %q", refused.Reason)
	}
	if err := p.accepted.expectNone(nil, "a reconnect after session_invalid", noReconnectWindow); err != nil {
		t.Fatal(err)
	}

	// Logout invalidates the token and stops the client.
	if err := c.c.Logout(ctx15(t)); err != nil {
		t.Fatal(err)
	}
	off, err := c.states.waitFor(func(e ConnectionEvent) bool { return e.State == StateOffline }, "offline", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if off.Reason != "logout" {
		t.Fatalf("offline reason %q", off.Reason)
	}
	_, err = c.c.Self(ctx15(t))
	wantCode(t, err, CodeClosed)
	if !errorsIs(err, ErrClosed) {
		t.Fatal("errors.Is(err, ErrClosed) is false")
	}
	after := track(t, h.info.WsURL, ep.ID, SessionToken(newToken), Options{})
	after.start(t)
	gone, err := after.states.waitFor(func(e ConnectionEvent) bool { return e.State == StateAuthFailed }, "auth_failed", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if gone.Reason != "session_invalid" {
		t.Fatalf("reason %q", gone.Reason)
	}
}
