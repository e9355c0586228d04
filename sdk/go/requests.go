package nixmsg

import "encoding/json"

// respOutcome is the answer to one request other than `send`.
type respOutcome struct {
	data json.RawMessage
	err  error
}

// pendingRequests are requests other than `send` waiting for their `resp`, matched by rid
// (spec 6). Timeouts are the waiting caller's. Its owner locks.
type pendingRequests struct {
	m map[string]chan respOutcome
}

func newPendingRequests() *pendingRequests {
	return &pendingRequests{m: map[string]chan respOutcome{}}
}

// wait registers rid; the channel receives exactly one outcome unless forget is called.
func (p *pendingRequests) wait(rid string) chan respOutcome {
	ch := make(chan respOutcome, 1)
	p.m[rid] = ch
	return ch
}

// size is the number of requests waiting for their `resp`.
func (p *pendingRequests) size() int { return len(p.m) }

// forget drops rid (its caller gave up).
func (p *pendingRequests) forget(rid string) { delete(p.m, rid) }

// settle applies a `resp`; false when rid is not waited for.
func (p *pendingRequests) settle(rid string, ok bool, data json.RawMessage, rerr *Error) bool {
	ch, found := p.m[rid]
	if !found {
		return false
	}
	delete(p.m, rid)
	if ok {
		ch <- respOutcome{data: data}
	} else {
		if rerr == nil {
			rerr = newError(CodeBadResponse, "Request failed without an error")
		}
		ch <- respOutcome{err: rerr}
	}
	return true
}

// failAll fails every waiting request with err (the connection is gone).
func (p *pendingRequests) failAll(err error) {
	for rid, ch := range p.m {
		ch <- respOutcome{err: err}
		delete(p.m, rid)
	}
}
