package nixmsg

// Checklist items 5, 6 and 7 (sdk/conformance/checklist.md, spec 9 接入清单): recall within a
// delay, scheduled sends, and keeping messages for offline recipients.

import (
	"testing"
	"time"
)

func TestChecklist05RecallWithin10sDelay(t *testing.T) {
	h := needServer(t)
	ea, eb := h.endpoint(t), h.endpoint(t)
	a := online(t, h.info.WsURL, ea, Options{})
	b := online(t, h.info.WsURL, eb, Options{})
	recalled, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "recall me", WithDelay(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// Due no earlier than the recalled one: it would have been pushed first (spec 7.5 order).
	marker, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "marker", WithDelay(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if recalled.State != "scheduled" {
		t.Fatalf("state %s", recalled.State)
	}
	r, err := a.c.Recall(ctx15(t), recalled.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r != (RecallResult{Result: "recalled"}) {
		t.Fatalf("recall %+v", r)
	}
	st, err := a.c.Status(ctx15(t), recalled.ID, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "completed" || st.Reason != "recalled" {
		t.Fatalf("status %+v", st)
	}
	if _, err := b.messages.waitFor(byID(marker.ID), "the marker after its delay", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := b.messages.count(byID(recalled.ID)); n != 0 {
		t.Fatal("the recalled message arrived")
	}
	if n := a.receipts.count(func(r Receipt) bool { return r.ID == recalled.ID }); n != 0 {
		t.Fatal("a recall sends no receipt")
	}
}

func TestChecklist06Scheduled2sAhead(t *testing.T) {
	h := needServer(t)
	ea, eb := h.endpoint(t), h.endpoint(t)
	a := online(t, h.info.WsURL, ea, Options{})
	b := online(t, h.info.WsURL, eb, Options{})
	at := time.Now().Add(2 * time.Second)
	sent, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "at time", WithSendAt(at))
	if err != nil {
		t.Fatal(err)
	}
	if sent.State != "scheduled" {
		t.Fatalf("state %s", sent.State)
	}
	want := at.Add(a.c.ClockOffset()).UnixMilli()
	if d := sent.SendAtMs - want; d > 1 || d < -1 {
		t.Fatalf("send_at_ms %d, want %d (sendAt converted with the clock offset)", sent.SendAtMs, want)
	}
	got, err := b.messages.waitFor(byID(sent.ID), "the scheduled message", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	arrived := b.c.ServerNow().UnixMilli()
	if got.SendAtMs != sent.SendAtMs {
		t.Fatalf("send_at_ms %d, want %d", got.SendAtMs, sent.SendAtMs)
	}
	if arrived < sent.SendAtMs-100 {
		t.Fatalf("arrived %d ms early", sent.SendAtMs-arrived)
	}
	if arrived > sent.SendAtMs+3000 {
		t.Fatalf("arrived %d ms late", arrived-sent.SendAtMs)
	}
}

func TestChecklist07KeptForOfflineExpiredNeverArrives(t *testing.T) {
	h := needServer(t)
	ea, eb := h.endpoint(t), h.endpoint(t)
	a := online(t, h.info.WsURL, ea, Options{})
	// B is offline. A message that is not kept is dropped; a kept one waits.
	dropped, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "not kept")
	if err != nil {
		t.Fatal(err)
	}
	kept, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "kept", WithKeep(), WithTTL(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	short, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "kept 1 s", WithKeep(), WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.receipts.waitFor(func(r Receipt) bool { return r.ID == dropped.ID }, "the dropped receipt", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if d.State != "dropped" {
		t.Fatalf("receipt %+v", d)
	}
	e, err := a.receipts.waitFor(func(r Receipt) bool { return r.ID == short.ID }, "the expired receipt", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if e.State != "expired" || e.EndpointID != eb.ID {
		t.Fatalf("receipt %+v", e)
	}

	// B comes online later: it gets the kept message, not the dropped or the expired one.
	b := online(t, h.info.WsURL, eb, Options{})
	got, err := b.messages.waitFor(byID(kept.ID), "the kept message", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if got.Text() != "kept" {
		t.Fatalf("body %q", got.Text())
	}
	marker, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "marker")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.messages.waitFor(byID(marker.ID), "the marker", waitTimeout); err != nil {
		t.Fatal(err)
	}
	if b.messages.count(byID(dropped.ID)) != 0 || b.messages.count(byID(short.ID)) != 0 {
		t.Fatal("the dropped or the expired message arrived")
	}
	acc, err := a.receipts.waitFor(func(r Receipt) bool { return r.ID == kept.ID }, "the kept receipt", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if acc.State != "accepted" {
		t.Fatalf("receipt %+v", acc)
	}
}
