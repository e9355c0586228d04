package nixmsg

import (
	"fmt"
	"sync"
)

// listeners is a set of application handlers; add returns the function that removes one.
type listeners[A any] struct {
	mu    sync.Mutex
	next  int
	fns   map[int]func(A) error
	order []int
	onAdd func() // called after every add, outside the lock
}

func (l *listeners[A]) add(fn func(A) error) func() {
	l.mu.Lock()
	if l.fns == nil {
		l.fns = map[int]func(A) error{}
	}
	id := l.next
	l.next++
	l.fns[id] = fn
	l.order = append(l.order, id)
	onAdd := l.onAdd
	l.mu.Unlock()
	if onAdd != nil {
		onAdd()
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.fns, id)
	}
}

func (l *listeners[A]) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.fns)
}

func (l *listeners[A]) snapshot() []func(A) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]func(A) error, 0, len(l.fns))
	for _, id := range l.order {
		if fn, ok := l.fns[id]; ok {
			out = append(out, fn)
		}
	}
	return out
}

// run calls every handler in turn; the first error or panic stops it and is returned.
func (l *listeners[A]) run(arg A) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("nixmsg: handler panicked: %v", r)
		}
	}()
	for _, fn := range l.snapshot() {
		if err := fn(arg); err != nil {
			return err
		}
	}
	return nil
}

// runOne calls fn with arg, turning a panic into an error.
func (l *listeners[A]) runOne(fn func(A), arg A) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("nixmsg: handler panicked: %v", r)
		}
	}()
	fn(arg)
	return nil
}

// serial runs tasks one at a time, in the order they were queued, on its own goroutine: the
// application's handlers never run concurrently with each other (spec 9).
type serial struct {
	mu      sync.Mutex
	tasks   []func()
	wake    chan struct{}
	stopped bool
	done    chan struct{}
}

func newSerial() *serial {
	s := &serial{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.loop()
	return s
}

// push queues a task; after stop it is dropped.
func (s *serial) push(task func()) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.tasks = append(s.tasks, task)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// stop lets the queued tasks run, then ends the goroutine.
func (s *serial) stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *serial) loop() {
	defer close(s.done)
	for {
		s.mu.Lock()
		if len(s.tasks) == 0 {
			stopped := s.stopped
			s.mu.Unlock()
			if stopped {
				return
			}
			<-s.wake
			continue
		}
		task := s.tasks[0]
		s.tasks = s.tasks[1:]
		s.mu.Unlock()
		task()
	}
}
