package nixmsg

// Behaviour of spec 9 beyond the checklist, as sdk/ts/test/integration/server_events.test.ts:
// fatal frames, admin kicks, panicking handlers, manual acks and revoked frames, presence, the
// directory, group events, and closing a stalled connection.

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

func TestFatalDisabledStopsWithoutReconnect(t *testing.T) {
	h := needServer(t)
	ep := h.endpoint(t)
	p := startProxy(t, h.address())
	a := online(t, "ws://"+p.address()+"/mqtt", ep, Options{})
	if st := h.admin(t, "PATCH", "/api/admin/endpoints/"+ep.ID, map[string]any{"enabled": false}); st != 200 {
		t.Fatalf("disable: HTTP %d", st)
	}
	ev, err := a.states.waitFor(func(e ConnectionEvent) bool { return e.State == StateKicked }, "kicked", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Reason != "disabled" {
		t.Fatalf("reason %q", ev.Reason)
	}
	_, err = a.c.SendText(ctx15(t), Endpoint(ep.ID), "x")
	wantCode(t, err, CodeKicked)
	if err := p.accepted.expectNone(nil, "a reconnect after fatal", noReconnectWindow); err != nil {
		t.Fatal(err)
	}
}

func TestAdminKickReconnectsWithToken(t *testing.T) {
	h := needServer(t)
	ep := h.endpoint(t)
	a := online(t, h.info.WsURL, ep, Options{})
	if st := h.admin(t, "POST", "/api/admin/endpoints/"+ep.ID+"/kick", map[string]any{}); st != 200 {
		t.Fatalf("kick: HTTP %d", st)
	}
	if _, err := a.states.waitFor(func(e ConnectionEvent) bool { return e.State == StateReconnecting }, "reconnecting", waitTimeout); err != nil {
		t.Fatal(err)
	}
	if _, err := a.states.waitCount(2, func(e ConnectionEvent) bool { return e.State == StateOnline }, "online again", waitTimeout); err != nil {
		t.Fatal(err)
	}
	if n := a.sessions.count(nil); n != 1 {
		t.Fatalf("%d tokens: the reconnect must use the token", n)
	}
	if self, err := a.c.Self(ctx15(t)); err != nil || self.ID != ep.ID {
		t.Fatalf("self %v", err)
	}
}

func TestPanickingHandlerGetsTheMessageAgain(t *testing.T) {
	h := needServer(t)
	ea, eb := h.endpoint(t), h.endpoint(t)
	a := online(t, h.info.WsURL, ea, Options{})
	b := track(t, h.info.WsURL, eb.ID, Password(eb.Password), Options{})
	var calls atomic.Int32
	b.c.OnMessage(func(m Message) error {
		if calls.Add(1) == 1 {
			panic("the application failed")
		}
		return nil
	})
	if err := b.c.Connect(ctx15(t)); err != nil {
		t.Fatal(err)
	}
	sent, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "handle me", WithKeep())
	if err != nil {
		t.Fatal(err)
	}
	// Not acked: the server pushes it again after ack_timeout_seconds (2 s in the harness).
	receipt, err := a.receipts.waitFor(func(r Receipt) bool { return r.ID == sent.ID }, "the receipt", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if receipt.State != "accepted" || calls.Load() != 2 {
		t.Fatalf("receipt %s after %d calls, want accepted after 2", receipt.State, calls.Load())
	}
	if b.errs.count(nil) < 1 {
		t.Fatal("the panic must reach OnCallbackError")
	}
}

func TestManualAckRecalledMessageIsRevoked(t *testing.T) {
	h := needServer(t)
	ea, eb := h.endpoint(t), h.endpoint(t)
	a := online(t, h.info.WsURL, ea, Options{})
	b := online(t, h.info.WsURL, eb, Options{ManualAck: true})
	sent, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "recall after push", WithKeep())
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.messages.waitFor(byID(sent.ID), "the message", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := a.c.Recall(ctx15(t), sent.ID); err != nil || r.Result != "recalled" {
		t.Fatalf("recall %+v %v", r, err)
	}
	rev, err := b.revoked.waitFor(func(r Revoked) bool { return r.ID == sent.ID }, "revoked", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if rev != (Revoked{ID: sent.ID, From: ea.ID, Reason: "recalled"}) {
		t.Fatalf("revoked %+v", rev)
	}
	if err := b.c.Ack(ctx15(t), got); err != nil { // too late: not sent
		t.Fatal(err)
	}
	kept, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "acked by hand", WithKeep())
	if err != nil {
		t.Fatal(err)
	}
	m2, err := b.messages.waitFor(byID(kept.ID), "the second message", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.c.Ack(ctx15(t), m2); err != nil {
		t.Fatal(err)
	}
	receipt, err := a.receipts.waitFor(func(r Receipt) bool { return r.ID == kept.ID }, "receipt", waitTimeout)
	if err != nil || receipt.State != "accepted" {
		t.Fatalf("receipt %+v %v", receipt, err)
	}
	if a.receipts.count(func(r Receipt) bool { return r.ID == sent.ID }) != 0 {
		t.Fatal("a recall has no receipt")
	}
}

func TestPresenceDirectoryAndWatchAfterReconnect(t *testing.T) {
	h := needServer(t)
	ea, eb := h.namedEndpoint(t, "Alpha"), h.namedEndpoint(t, "Beta")
	p := startProxy(t, h.address())
	a := online(t, "ws://"+p.address()+"/mqtt", ea, Options{})
	if err := a.c.WatchPresence(ctx15(t), []string{eb.ID}); err != nil {
		t.Fatal(err)
	}
	b := online(t, h.info.WsURL, eb, Options{})
	on, err := a.presence.waitFor(func(e PresenceEvent) bool { return e.ID == eb.ID && e.Online }, "B online", waitTimeout)
	if err != nil || on.AtMs <= 0 {
		t.Fatalf("presence %+v %v", on, err)
	}
	list, err := a.c.Presence(ctx15(t), []string{ea.ID, eb.ID, "nobody-here"})
	if err != nil || len(list) != 3 || !list[0].Online || !list[1].Online || !list[2].NotFound {
		t.Fatalf("presence %+v %v", list, err)
	}
	dir, err := a.c.Directory(ctx15(t), "beta", ListOptions{})
	if err != nil || !slices.ContainsFunc(dir.Items, func(e DirectoryEntry) bool { return e.ID == eb.ID && e.Name == "Beta" && e.Online }) {
		t.Fatalf("directory %+v %v", dir, err)
	}
	_ = b.c.Close(ctx15(t))
	if _, err := a.presence.waitFor(func(e PresenceEvent) bool { return e.ID == eb.ID && !e.Online }, "B offline", waitTimeout); err != nil {
		t.Fatal(err)
	}

	// The server forgets the watch with the connection; the SDK sends it again.
	p.cut()
	if _, err := a.states.waitCount(2, func(e ConnectionEvent) bool { return e.State == StateOnline }, "A online again", waitTimeout); err != nil {
		t.Fatal(err)
	}
	if _, err := a.c.Self(ctx15(t)); err != nil { // the re-sent watch was handled before this
		t.Fatal(err)
	}
	online(t, h.info.WsURL, eb, Options{})
	if _, err := a.presence.waitCount(2, func(e PresenceEvent) bool { return e.ID == eb.ID && e.Online }, "B online, seen again", waitTimeout); err != nil {
		t.Fatal(err)
	}

	name, delay := "Alpha 2", int64(0)
	if err := a.c.UpdateSelf(ctx15(t), SelfUpdate{Name: &name, DefaultDelayMs: &delay}); err != nil {
		t.Fatal(err)
	}
	if self, err := a.c.Self(ctx15(t)); err != nil || self.Name != "Alpha 2" {
		t.Fatalf("self %+v %v", self, err)
	}
}

func TestGroupEventsReachMembers(t *testing.T) {
	h := needServer(t)
	ea, eb := h.endpoint(t), h.endpoint(t)
	a := online(t, h.info.WsURL, ea, Options{})
	b := online(t, h.info.WsURL, eb, Options{})
	g, err := a.c.Groups().Create(ctx15(t), "room", Members(eb.ID)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.c.Groups().Rename(ctx15(t), g.GroupID, "room 2"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.groupEvs.waitFor(func(e GroupEvent) bool { return e.GroupID == g.GroupID && e.Event == "renamed" }, "renamed", waitTimeout); err != nil {
		t.Fatal(err)
	}
	if err := a.c.Groups().Dissolve(ctx15(t), g.GroupID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.groupEvs.waitFor(func(e GroupEvent) bool { return e.GroupID == g.GroupID && e.Event == "dissolved" }, "dissolved", waitTimeout); err != nil {
		t.Fatal(err)
	}
	_, err = b.c.Groups().Get(ctx15(t), g.GroupID, ListOptions{})
	wantCode(t, err, CodeNotFound) // a dissolved group cannot be read
}

func TestCloseOnStalledConnectionFailsSendInFlight(t *testing.T) {
	h := needServer(t)
	ea, eb := h.endpoint(t), h.endpoint(t)
	p := startProxy(t, h.address())
	a := online(t, "ws://"+p.address()+"/mqtt", ea, Options{})
	p.setHoldDown(true) // no PUBACK and no resp come back
	failed := make(chan error, 1)
	go func() {
		_, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "stalled")
		failed <- err
	}()
	waitQueued(t, a.c, 1)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = a.c.Close(ctx)
	// Close drains until ctx ends, then gives up what is left (closeWait more at most).
	if d := time.Since(start); d > 5*time.Second+closeWait {
		t.Fatalf("close took %v", d)
	}
	wantCode(t, <-failed, CodeClosed)
	if a.c.State() != StateOffline {
		t.Fatalf("state %s", a.c.State())
	}
}
