package nixmsg

import "sync"

// msgState is where a received message stands.
type msgState int

const (
	msgQueued msgState = iota + 1
	msgDelivered
	msgAcked
	msgRevoked
)

type receiptState int

const (
	receiptHandling receiptState = iota + 1
	receiptDone
)

// receiverHost is what the receiver needs from the client.
type receiverHost interface {
	// sendAck sends `ack` and returns data.result; false when it could not be sent or answered
	// (the server pushes the message again, and it is acked again then). It blocks.
	sendAck(from, id string) (string, bool)
	// beginAck publishes `ack` now, without blocking, and returns the wait for its data.result
	// (nil when it could not be published). The wait ends at the latest when the client stops.
	beginAck(from, id string) func() (string, bool)
	// spawn runs fn on a goroutine the client counts (Close waits for it).
	spawn(fn func())
	// sendReceiptAck sends `receipt_ack`, best effort, without blocking.
	sendReceiptAck(receiptID string)
	// callbackError reports a failed handler.
	callbackError(err error)
}

// receiver holds the receiving rules of spec 9 ("接收") and spec 6.4 (`revoked`): dedup by
// from + id, serial handlers, acks in auto or manual mode, receipts deduped by receipt_id and
// acked after their handler.
type receiver struct {
	host        receiverHost
	manual      bool
	run         *serial
	messages    listeners[Message]
	receipts    listeners[Receipt]
	revoked     listeners[Revoked]
	presence    listeners[PresenceEvent]
	groupEvents listeners[GroupEvent]

	mu           sync.Mutex
	seen         *dedupCache[msgState]
	receiptsSeen *dedupCache[receiptState]
	held         []Message
	closed       bool          // nothing more reaches the application
	delivering   chan struct{} // closed when the running message handler's ack went out
}

func newReceiver(host receiverHost, manual bool, dedupCapacity int, run *serial) *receiver {
	r := &receiver{
		host: host, manual: manual, run: run,
		seen: newDedupCache[msgState](dedupCapacity), receiptsSeen: newDedupCache[receiptState](dedupCapacity),
	}
	r.messages.onAdd = r.release
	return r
}

// message handles a `msg` (spec 6.3, 9).
func (r *receiver) message(m Message) {
	key := messageKey(m.From, m.ID)
	r.mu.Lock()
	state, known := r.seen.get(key)
	if known && state == msgAcked {
		r.mu.Unlock()
		// The earlier ack may have been lost; without a new one the server pushes forever.
		r.autoAck(m.From, m.ID)
		return
	}
	if known { // queued, delivered but not acked, or revoked
		r.mu.Unlock()
		return
	}
	r.seen.set(key, msgQueued)
	r.mu.Unlock()
	r.enqueue(m, key)
}

func (r *receiver) enqueue(m Message, key string) {
	r.run.push(func() {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return // closing: it stays unacked and comes again at the next login
		}
		if state, _ := r.seen.get(key); state == msgRevoked {
			r.mu.Unlock()
			return // withdrawn before the application saw it
		}
		if r.messages.size() == 0 {
			// Without an OnMessage handler, messages wait (unacked) without blocking the rest.
			r.held = append(r.held, m)
			r.mu.Unlock()
			return
		}
		r.seen.set(key, msgDelivered)
		delivering := make(chan struct{})
		r.delivering = delivering
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.delivering = nil
			r.mu.Unlock()
			close(delivering)
		}()
		if err := r.messages.run(m); err != nil {
			r.host.callbackError(err)
			// No ack: forget it, so that the server's next push is processed again.
			r.mu.Lock()
			if state, _ := r.seen.get(key); state == msgDelivered {
				r.seen.remove(key)
			}
			r.mu.Unlock()
			return
		}
		r.mu.Lock()
		auto := false
		if state, _ := r.seen.get(key); !r.manual && state == msgDelivered {
			r.seen.set(key, msgAcked)
			auto = true
		}
		r.mu.Unlock()
		if auto {
			// Published before the task ends, so that a Close waiting for it drains this ack.
			r.autoAck(m.From, m.ID)
		}
	})
}

// close stops handing anything to the application: messages and receipts still waiting for
// their turn are dropped (unacked, so the server pushes them again at the next login).
func (r *receiver) close() {
	r.mu.Lock()
	r.closed = true
	r.held = nil
	r.mu.Unlock()
}

// settled returns a channel closed once the message handler running now has returned and its
// automatic ack was published (closed at once when none runs).
func (r *receiver) settled() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.delivering == nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return r.delivering
}

// autoAck publishes the ack now and waits for its result on a counted goroutine.
func (r *receiver) autoAck(from, id string) {
	wait := r.host.beginAck(from, id)
	if wait == nil {
		return
	}
	r.host.spawn(func() {
		result, ok := wait()
		r.acked(from, id, result, ok)
	})
}

// release re-queues the messages held while there was no OnMessage handler.
func (r *receiver) release() {
	r.mu.Lock()
	held := r.held
	r.held = nil
	r.mu.Unlock()
	for _, m := range held {
		r.enqueue(m, messageKey(m.From, m.ID))
	}
}

// manualAck acks a message the application has handled (manual mode). A revoked message is not
// acked. When the ack cannot be sent now, the next push of the message is acked at once.
func (r *receiver) manualAck(from, id string) {
	key := messageKey(from, id)
	r.mu.Lock()
	if state, _ := r.seen.get(key); state == msgRevoked {
		r.mu.Unlock()
		return
	}
	r.seen.set(key, msgAcked)
	r.mu.Unlock()
	r.ack(from, id)
}

func (r *receiver) ack(from, id string) {
	result, ok := r.host.sendAck(from, id)
	r.acked(from, id, result, ok)
}

func (r *receiver) acked(from, id, result string, ok bool) {
	// spec 9: an ack whose result is not `accepted` counts as `revoked`.
	if ok && result != "accepted" {
		ev := Revoked{ID: id, From: from, Reason: result}
		r.run.push(func() { r.report(r.revoked.run(ev)) })
	}
}

func (r *receiver) report(err error) {
	if err != nil {
		r.host.callbackError(err)
	}
}

// revoke handles a `revoked` frame (spec 6.4).
func (r *receiver) revoke(ev Revoked) {
	key := messageKey(ev.From, ev.ID)
	r.mu.Lock()
	state, _ := r.seen.get(key)
	switch state {
	case msgQueued:
		r.seen.set(key, msgRevoked) // dropped when its turn comes
	case msgDelivered:
		r.seen.set(key, msgRevoked) // not acked any more; tell the application
		r.run.push(func() { r.report(r.revoked.run(ev)) })
	}
	r.mu.Unlock()
}

// receipt handles a `receipt` (spec 6.4): deduped by receipt_id, always acked.
func (r *receiver) receipt(rc Receipt) {
	r.mu.Lock()
	state, _ := r.receiptsSeen.get(rc.ReceiptID)
	if state == receiptDone {
		r.mu.Unlock()
		r.host.sendReceiptAck(rc.ReceiptID)
		return
	}
	if state == receiptHandling {
		r.mu.Unlock()
		return
	}
	r.receiptsSeen.set(rc.ReceiptID, receiptHandling)
	r.mu.Unlock()
	r.run.push(func() {
		if !r.open() {
			return
		}
		if err := r.receipts.run(rc); err != nil {
			r.host.callbackError(err)
			r.mu.Lock()
			r.receiptsSeen.remove(rc.ReceiptID)
			r.mu.Unlock()
			return
		}
		r.mu.Lock()
		r.receiptsSeen.set(rc.ReceiptID, receiptDone)
		r.mu.Unlock()
		r.host.sendReceiptAck(rc.ReceiptID)
	})
}

// presenceEvent handles a `presence` notice (spec 6.5): best effort, no ack.
func (r *receiver) presenceEvent(ev PresenceEvent) {
	r.run.push(func() {
		if r.open() {
			r.report(r.presence.run(ev))
		}
	})
}

// open reports whether handlers may still be called (not closing).
func (r *receiver) open() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.closed
}

// groupEvent handles a `group_event` (spec 6.7): best effort, no ack.
func (r *receiver) groupEvent(ev GroupEvent) {
	r.run.push(func() {
		if r.open() {
			r.report(r.groupEvents.run(ev))
		}
	})
}
