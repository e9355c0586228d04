package nixmsg

// Checklist items 2, 3, 4 and 11 (sdk/conformance/checklist.md, spec 9 接入清单): one-to-one
// messages, sends across a disconnect, resends and lost acks, and the local size limit.

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

func TestChecklist02OneToOneDeliveredOnce(t *testing.T) {
	h := needServer(t)
	ea, eb := h.endpoint(t), h.endpoint(t)
	a := online(t, h.info.WsURL, ea, Options{})
	b := online(t, h.info.WsURL, eb, Options{Transport: TCP})
	sent, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "你好 <b>&", WithMeta(map[string]any{"k": "v"}))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(sent.ID) || sent.State != "dispatched" {
		t.Fatalf("send result %+v", sent)
	}
	got, err := b.messages.waitFor(byID(sent.ID), "the message", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if got.Text() != "你好 <b>&" || got.Binary || got.From != ea.ID || got.To != Endpoint(eb.ID) {
		t.Fatalf("message %+v", got)
	}
	if !reflect.DeepEqual(got.Meta, map[string]any{"k": "v"}) || got.SendAtMs != sent.SendAtMs {
		t.Fatalf("meta %v send_at_ms %d, want %d", got.Meta, got.SendAtMs, sent.SendAtMs)
	}
	receipt, err := a.receipts.waitFor(func(r Receipt) bool { return r.ID == sent.ID }, "receipt", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if receipt.State != "accepted" || receipt.EndpointID != eb.ID {
		t.Fatalf("receipt %+v", receipt)
	}

	data := []byte{0, 1, 2, 253, 254, 255}
	bin, err := a.c.Send(ctx15(t), Endpoint(eb.ID), data, WithContentType("application/x-test"))
	if err != nil {
		t.Fatal(err)
	}
	gotBin, err := b.messages.waitFor(byID(bin.ID), "the binary message", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotBin.Body, data) || !gotBin.Binary || gotBin.ContentType != "application/x-test" {
		t.Fatalf("binary message %+v", gotBin)
	}
	if n := b.messages.count(byID(sent.ID)); n != 1 {
		t.Fatalf("the handler ran %d times", n)
	}
}

func TestChecklist03SendWhileDisconnectedDeliveredOnce(t *testing.T) {
	h := needServer(t)
	ea, eb := h.endpoint(t), h.endpoint(t)
	p := startProxy(t, h.address())
	a := online(t, "ws://"+p.address()+"/mqtt", ea, Options{})
	b := online(t, h.info.WsURL, eb, Options{})
	p.setRefuse(true)
	p.cut()
	if _, err := a.states.waitFor(func(e ConnectionEvent) bool { return e.State == StateReconnecting }, "reconnecting", waitTimeout); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		r   SendResult
		err error
	}
	pending := make(chan outcome, 1)
	go func() {
		r, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "sent while offline", WithKeep())
		pending <- outcome{r, err}
	}()
	waitQueued(t, a.c, 1)
	if n := b.messages.count(nil); n != 0 {
		t.Fatalf("B got %d messages while A was offline", n)
	}
	p.setRefuse(false)
	out := <-pending
	if out.err != nil {
		t.Fatal(out.err)
	}
	if _, err := b.messages.waitFor(byID(out.r.ID), "the queued message", waitTimeout); err != nil {
		t.Fatal(err)
	}
	marker, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "marker")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.messages.waitFor(byID(marker.ID), "the marker", waitTimeout); err != nil {
		t.Fatal(err)
	}
	if b.messages.count(byID(out.r.ID)) != 1 || b.messages.count(nil) != 2 {
		t.Fatalf("B got %d messages", b.messages.count(nil))
	}
}

func TestChecklist04aLostResponseResentWithSameID(t *testing.T) {
	h := needServer(t)
	ea, eb := h.endpoint(t), h.endpoint(t)
	p := startProxy(t, h.address())
	a := online(t, "ws://"+p.address()+"/mqtt", ea, Options{})
	b := online(t, h.info.WsURL, eb, Options{})
	p.setHoldDown(true) // the server commits the send; its resp never reaches A
	type outcome struct {
		r   SendResult
		err error
	}
	pending := make(chan outcome, 1)
	go func() {
		r, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "resp lost", WithKeep())
		pending <- outcome{r, err}
	}()
	got, err := b.messages.waitFor(func(m Message) bool { return m.Text() == "resp lost" }, "the message", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	p.cut()
	p.setHoldDown(false)
	out := <-pending // resent after the reconnect; the server answers for the original
	if out.err != nil {
		t.Fatal(out.err)
	}
	if out.r.ID != got.ID {
		t.Fatalf("id %s, B got %s", out.r.ID, got.ID)
	}
	marker, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "marker")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.messages.waitFor(byID(marker.ID), "the marker", waitTimeout); err != nil {
		t.Fatal(err)
	}
	if n := b.messages.count(byID(out.r.ID)); n != 1 {
		t.Fatalf("delivered %d times", n)
	}
	st, err := a.c.Status(ctx15(t), out.r.ID, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Items) != 1 || st.Items[0].EndpointID != eb.ID {
		t.Fatalf("status %+v", st)
	}
}

func TestChecklist04bLostAckReackedWithoutSecondCallback(t *testing.T) {
	h := needServer(t)
	ea, eb := h.endpoint(t), h.endpoint(t)
	p := startProxy(t, h.address())
	a := online(t, h.info.WsURL, ea, Options{})
	b := online(t, "ws://"+p.address()+"/mqtt", eb, Options{})
	var calls atomic.Int32
	b.c.OnMessage(func(Message) error {
		// The connection dies while the application handles the message: its ack is lost.
		if calls.Add(1) == 1 {
			p.cut()
		}
		return nil
	})
	sent, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "ack lost", WithKeep())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.states.waitFor(func(e ConnectionEvent) bool { return e.State == StateReconnecting }, "reconnecting", waitTimeout); err != nil {
		t.Fatal(err)
	}
	receipt, err := a.receipts.waitFor(func(r Receipt) bool { return r.ID == sent.ID }, "the receipt", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if receipt.State != "accepted" {
		t.Fatalf("receipt %+v: the re-ack must reach the server", receipt)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the application saw the message %d times", n)
	}
	if n := b.messages.count(byID(sent.ID)); n != 1 {
		t.Fatalf("recorded %d times", n)
	}
}

func TestChecklist11OverLimitFailsLocally(t *testing.T) {
	h := needServer(t)
	ea, eb := h.endpoint(t), h.endpoint(t)
	a := online(t, h.info.WsURL, ea, Options{})
	b := online(t, h.info.WsURL, eb, Options{})
	_, err := a.c.Send(ctx15(t), Endpoint(eb.ID), make([]byte, 262145))
	wantCode(t, err, CodeBodyTooLarge)
	_, err = a.c.SendText(ctx15(t), Endpoint(eb.ID), strings.Repeat("x", 262145))
	wantCode(t, err, CodeBodyTooLarge)
	_, err = a.c.SendText(ctx15(t), Endpoint(eb.ID), strings.Repeat("\x01", 262144))
	wantCode(t, err, CodeFrameTooLarge)
	if a.c.State() != StateOnline {
		t.Fatalf("state %s: nothing was published, the connection stays", a.c.State())
	}
	big := make([]byte, 262144)
	for i := range big {
		big[i] = byte(i)
	}
	sent, err := a.c.Send(ctx15(t), Endpoint(eb.ID), big)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.messages.waitFor(byID(sent.ID), "the 256 KiB message", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Body, big) {
		t.Fatal("the 256 KiB body changed")
	}
	if n := a.states.count(func(e ConnectionEvent) bool { return e.State == StateReconnecting }); n != 0 {
		t.Fatalf("%d reconnects", n)
	}
}
