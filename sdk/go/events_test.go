package nixmsg

import (
	"fmt"
	"sync"
	"time"
)

// waitTimeout is how long a test waits for an expected event by default.
const waitTimeout = 15 * time.Second

// events records callbacks; waitFor waits for a match with a bounded timeout, expectNone
// checks that none matching arrives within a window (no fixed sleeps to synchronize).
type events[T any] struct {
	mu      sync.Mutex
	items   []T
	changed chan struct{}
}

func newEvents[T any]() *events[T] { return &events[T]{changed: make(chan struct{})} }

func (e *events[T]) push(item T) {
	e.mu.Lock()
	e.items = append(e.items, item)
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
}

func (e *events[T]) all() []T {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]T(nil), e.items...)
}

func (e *events[T]) count(pred func(T) bool) int {
	n := 0
	for _, it := range e.all() {
		if pred == nil || pred(it) {
			n++
		}
	}
	return n
}

// waitCount waits until n items match and returns the n-th.
func (e *events[T]) waitCount(n int, pred func(T) bool, what string, timeout time.Duration) (T, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		seen := 0
		for _, it := range e.items {
			if pred == nil || pred(it) {
				seen++
				if seen == n {
					e.mu.Unlock()
					return it, nil
				}
			}
		}
		ch := e.changed
		e.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			var zero T
			return zero, fmt.Errorf("timed out after %v waiting for %d × %s; got %d", timeout, n, what, seen)
		}
	}
}

func (e *events[T]) waitFor(pred func(T) bool, what string, timeout time.Duration) (T, error) {
	return e.waitCount(1, pred, what, timeout)
}

// expectNone fails if an item matching pred arrives within window.
func (e *events[T]) expectNone(pred func(T) bool, what string, window time.Duration) error {
	before := e.count(pred)
	deadline := time.NewTimer(window)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		ch := e.changed
		e.mu.Unlock()
		if e.count(pred) != before {
			return fmt.Errorf("unexpected %s", what)
		}
		select {
		case <-ch:
		case <-deadline.C:
			if e.count(pred) != before {
				return fmt.Errorf("unexpected %s", what)
			}
			return nil
		}
	}
}
