package nixmsg

import "container/list"

// dedupCache is a bounded record of what happened to each received item (spec 9 "接收"):
// insertion ordered, the oldest record is dropped when the capacity (default 10,000) is exceeded.
// It is not safe for concurrent use; its owner locks.
type dedupCache[S any] struct {
	capacity int
	order    *list.List // of string keys, oldest first
	items    map[string]*dedupItem[S]
}

type dedupItem[S any] struct {
	state S
	elem  *list.Element
}

func newDedupCache[S any](capacity int) *dedupCache[S] {
	if capacity < 1 {
		panic("nixmsg: dedup capacity must be at least 1")
	}
	return &dedupCache[S]{capacity: capacity, order: list.New(), items: map[string]*dedupItem[S]{}}
}

// size returns the number of records held.
func (d *dedupCache[S]) size() int { return len(d.items) }

// get returns the state recorded for key.
func (d *dedupCache[S]) get(key string) (S, bool) {
	it, ok := d.items[key]
	if !ok {
		var zero S
		return zero, false
	}
	return it.state, true
}

// set records state for key; a new key may push out the oldest record.
func (d *dedupCache[S]) set(key string, state S) {
	if it, ok := d.items[key]; ok {
		it.state = state
		return
	}
	d.items[key] = &dedupItem[S]{state: state, elem: d.order.PushBack(key)}
	for len(d.items) > d.capacity {
		oldest := d.order.Front()
		d.order.Remove(oldest)
		delete(d.items, oldest.Value.(string))
	}
}

// remove forgets key, so that the next arrival is processed again.
func (d *dedupCache[S]) remove(key string) {
	if it, ok := d.items[key]; ok {
		d.order.Remove(it.elem)
		delete(d.items, key)
	}
}

// messageKey is the dedup key of a message: sender and message id (spec 9).
func messageKey(from, id string) string { return from + "\x00" + id }
