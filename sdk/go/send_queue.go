package nixmsg

import (
	"encoding/json"
	"fmt"
	"time"
)

// sendOutcome is the end of one Send call.
type sendOutcome struct {
	result SendResult
	err    error
}

// queueEntry is one held send.
type queueEntry struct {
	frame     sendFrame
	done      chan sendOutcome // buffered 1; receives exactly one outcome
	rid       string           // "" when not in flight
	notBefore time.Time
	retry     *Backoff
}

// settleOutcome says what a `resp` did to a send.
type settleOutcome int

const (
	settleUnknown settleOutcome = iota
	settleDone
	settleRetry
)

// sendQueue is the in-memory send queue of spec 9 ("发送"): at most capacity sends held (in
// flight included), at most maxInFlight published without a response, the same id and content
// when replayed after a reconnect, and rate_limited answers retried with backoff. Its owner locks.
type sendQueue struct {
	capacity    int
	maxInFlight int
	random      func() float64
	entries     []*queueEntry // in the order of Send calls; replay keeps it
	byRid       map[string]*queueEntry
	closed      error
}

func newSendQueue(capacity, maxInFlight int, random func() float64) *sendQueue {
	return &sendQueue{capacity: capacity, maxInFlight: maxInFlight, random: random, byRid: map[string]*queueEntry{}}
}

// size is the number of sends held, in flight included.
func (q *sendQueue) size() int { return len(q.entries) }

// inFlight is the number of sends published and waiting for their `resp`.
func (q *sendQueue) inFlight() int { return len(q.byRid) }

// add queues a send; it fails at once with queue_full, or with the error the queue closed with.
func (q *sendQueue) add(f sendFrame) (*queueEntry, error) {
	if q.closed != nil {
		return nil, q.closed
	}
	if len(q.entries) >= q.capacity {
		return nil, newError(CodeQueueFull, fmt.Sprintf("The send queue already holds %d messages", q.capacity))
	}
	e := &queueEntry{frame: f, done: make(chan sendOutcome, 1)}
	q.entries = append(q.entries, e)
	return e, nil
}

// take returns the next send to publish under a new rid, or nil when the window is full or
// nothing is due.
func (q *sendQueue) take(now time.Time, rid func() string) *queueEntry {
	if len(q.byRid) >= q.maxInFlight {
		return nil
	}
	for _, e := range q.entries {
		if e.rid == "" && !e.notBefore.After(now) {
			e.rid = rid()
			q.byRid[e.rid] = e
			return e
		}
	}
	return nil
}

// nextDueAt is the earliest time a send waiting for a retry becomes due.
func (q *sendQueue) nextDueAt(now time.Time) (time.Time, bool) {
	var at time.Time
	found := false
	for _, e := range q.entries {
		if e.rid != "" || !e.notBefore.After(now) {
			continue
		}
		if !found || e.notBefore.Before(at) {
			at, found = e.notBefore, true
		}
	}
	return at, found
}

// has reports whether rid belongs to a send in flight.
func (q *sendQueue) has(rid string) bool { _, ok := q.byRid[rid]; return ok }

// settle applies the `resp` of a send: success or a final error ends the call; rate_limited
// puts the send back with a backoff delay (spec 9: not a failure).
func (q *sendQueue) settle(rid string, ok bool, data json.RawMessage, rerr *Error, now time.Time) settleOutcome {
	e, found := q.byRid[rid]
	if !found {
		return settleUnknown
	}
	delete(q.byRid, rid)
	e.rid = ""
	if !ok && rerr != nil && rerr.Code == "rate_limited" {
		if e.retry == nil {
			e.retry = NewBackoff()
			if q.random != nil {
				e.retry.Random = q.random
			}
		}
		e.notBefore = now.Add(e.retry.Next())
		return settleRetry
	}
	q.drop(e)
	if ok {
		var d struct {
			ID       string `json:"id"`
			SendAtMs int64  `json:"send_at_ms"`
			State    string `json:"state"`
		}
		_ = json.Unmarshal(data, &d)
		r := SendResult{ID: firstNonEmpty(d.ID, e.frame.ID), SendAtMs: d.SendAtMs, State: MessageState(firstNonEmpty(d.State, "dispatched"))}
		e.done <- sendOutcome{result: r}
	} else {
		if rerr == nil {
			rerr = newError(CodeBadResponse, "Send failed without an error")
		}
		e.done <- sendOutcome{err: rerr}
	}
	return settleDone
}

// forget removes a send that is not in flight (its caller gave up); false when it is in flight.
func (q *sendQueue) forget(e *queueEntry) bool {
	if e.rid != "" {
		return false
	}
	q.drop(e)
	return true
}

func (q *sendQueue) drop(e *queueEntry) {
	for i, x := range q.entries {
		if x == e {
			q.entries = append(q.entries[:i:i], q.entries[i+1:]...)
			return
		}
	}
}

// requeueInFlight: the connection is gone; sends in flight wait to be published again, unchanged.
func (q *sendQueue) requeueInFlight() {
	for _, e := range q.byRid {
		e.rid = ""
	}
	clear(q.byRid)
}

// closeUnsent ends the sends not published now (waiting for their turn or a retry) with err and
// refuses new ones with it; the ones in flight stay until their `resp` or close.
func (q *sendQueue) closeUnsent(err error) {
	if q.closed == nil {
		q.closed = err
	}
	kept := q.entries[:0]
	var unsent []*queueEntry
	for _, e := range q.entries {
		if e.rid == "" {
			unsent = append(unsent, e)
		} else {
			kept = append(kept, e)
		}
	}
	q.entries = kept
	for _, e := range unsent {
		e.done <- sendOutcome{err: err}
	}
}

// close ends every held send with err and refuses new ones with it (spec 9).
func (q *sendQueue) close(err error) {
	if q.closed == nil {
		q.closed = err
	}
	entries := q.entries
	q.entries = nil
	clear(q.byRid)
	for _, e := range entries {
		e.done <- sendOutcome{err: err}
	}
}
