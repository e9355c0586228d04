package nixmsg

// Unit tests of the receiving rules (spec 9 "接收"): dedup, serial handlers, a failing or
// panicking handler means no ack, re-acks without a second callback, revoked messages.

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeHost records acks; ackResult is what the server answers.
type fakeHost struct {
	mu        sync.Mutex
	acks      *events[string]
	receipts  *events[string]
	errs      *events[error]
	ackResult string
}

func newFakeHost() *fakeHost {
	return &fakeHost{acks: newEvents[string](), receipts: newEvents[string](), errs: newEvents[error](), ackResult: "accepted"}
}

func (h *fakeHost) sendAck(from, id string) (string, bool) {
	h.acks.push(from + "/" + id)
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ackResult, true
}
func (h *fakeHost) beginAck(from, id string) func() (string, bool) {
	return func() (string, bool) { return h.sendAck(from, id) }
}
func (h *fakeHost) spawn(fn func())          { go fn() }
func (h *fakeHost) sendReceiptAck(id string) { h.receipts.push(id) }
func (h *fakeHost) callbackError(err error)  { h.errs.push(err) }
func msg(id string) Message                  { return Message{ID: id, From: "a", To: Endpoint("b")} }
func isAck(key string) func(string) bool     { return func(s string) bool { return s == key } }
func barrier(r *receiver) { // waits until every handler queued so far has run
	done := make(chan struct{})
	r.run.push(func() { close(done) })
	<-done
}

func TestReceiverPanickingHandlerMeansNoAck(t *testing.T) {
	host := newFakeHost()
	r := newReceiver(host, false, 100, newSerial())
	calls := 0
	r.messages.add(func(m Message) error {
		calls++
		if calls == 1 {
			panic("boom")
		}
		if calls == 2 {
			return errors.New("not now")
		}
		return nil
	})
	r.message(msg("1"))
	barrier(r)
	if host.acks.count(nil) != 0 || host.errs.count(nil) != 1 {
		t.Fatalf("a panic must not ack (acks %d, errors %d)", host.acks.count(nil), host.errs.count(nil))
	}
	r.message(msg("1")) // the server pushes it again
	barrier(r)
	if host.acks.count(nil) != 0 || calls != 2 {
		t.Fatalf("an error must not ack (calls %d)", calls)
	}
	r.message(msg("1"))
	if _, err := host.acks.waitFor(isAck("a/1"), "the ack", time.Second*5); err != nil {
		t.Fatal(err)
	}
	r.message(msg("1")) // the ack was lost: re-ack without calling back
	if _, err := host.acks.waitCount(2, isAck("a/1"), "the re-ack", time.Second*5); err != nil {
		t.Fatal(err)
	}
	barrier(r)
	if calls != 3 {
		t.Fatalf("the handler ran %d times, want 3", calls)
	}
}

func TestReceiverDedupAndRevoke(t *testing.T) {
	host := newFakeHost()
	r := newReceiver(host, true, 100, newSerial()) // manual mode
	revoked := newEvents[Revoked]()
	r.revoked.add(func(v Revoked) error { revoked.push(v); return nil })
	// Without an OnMessage handler messages wait, unacked.
	r.message(msg("1"))
	r.message(msg("1")) // a duplicate while queued
	barrier(r)
	got := newEvents[Message]()
	r.messages.add(func(m Message) error { got.push(m); return nil })
	if _, err := got.waitFor(byID("1"), "the held message", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	barrier(r)
	if got.count(nil) != 1 || host.acks.count(nil) != 0 {
		t.Fatalf("manual mode: %d calls, %d acks", got.count(nil), host.acks.count(nil))
	}
	// Delivered but not acked, then revoked: the application is told and the ack is skipped.
	r.revoke(Revoked{ID: "1", From: "a", Reason: "recalled"})
	if _, err := revoked.waitFor(func(v Revoked) bool { return v.ID == "1" }, "revoked", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	r.manualAck("a", "1")
	if host.acks.count(nil) != 0 {
		t.Fatal("a revoked message must not be acked")
	}
	// An ack answered with a final state other than accepted counts as revoked (spec 9).
	host.mu.Lock()
	host.ackResult = "expired"
	host.mu.Unlock()
	r.message(msg("2"))
	if _, err := got.waitFor(byID("2"), "message 2", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	r.manualAck("a", "2")
	ev, err := revoked.waitFor(func(v Revoked) bool { return v.ID == "2" }, "revoked by ack", 5*time.Second)
	if err != nil || ev.Reason != "expired" {
		t.Fatalf("revoked %+v %v", ev, err)
	}
	// Receipts are deduped by receipt_id and acked after the handler.
	seen := 0
	r.receipts.add(func(Receipt) error { seen++; return nil })
	r.receipt(Receipt{ReceiptID: "9"})
	r.receipt(Receipt{ReceiptID: "9"})
	if _, err := host.receipts.waitFor(func(s string) bool { return s == "9" }, "receipt ack", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	barrier(r)
	if seen != 1 {
		t.Fatalf("receipt handler ran %d times", seen)
	}
}
