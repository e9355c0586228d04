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
		go r.ack(m.From, m.ID)
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
		r.mu.Unlock()
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
			go r.ack(m.From, m.ID)
		}
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
	r.run.push(func() { r.report(r.presence.run(ev)) })
}

// groupEvent handles a `group_event` (spec 6.7): best effort, no ack.
func (r *receiver) groupEvent(ev GroupEvent) {
	r.run.push(func() { r.report(r.groupEvents.run(ev)) })
}
