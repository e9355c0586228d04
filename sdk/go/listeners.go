package nixmsg

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
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

// add registers fn; a nil fn panics with a bad_request *Error (a programming error, like a nil
// http.Handler).
func (l *listeners[A]) add(fn func(A) error) func() {
	if fn == nil {
		panic(newError(CodeBadRequest, "The handler is nil"))
	}
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

// serial runs tasks one at a time, in the order they were queued, on a goroutine of its own
// that exists only while there are tasks: the application's handlers never run concurrently
// with each other (spec 9), and an idle or stopped client holds no goroutine.
type serial struct {
	mu      sync.Mutex
	tasks   []func()
	running bool
	gid     uint64        // the goroutine running tasks now, 0 when idle
	idle    chan struct{} // closed when the running goroutine ends; nil when none runs
	stopped bool
}

func newSerial() *serial { return &serial{} }

// push queues a task, starting the goroutine if none runs; after stop it is dropped.
func (s *serial) push(task func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.tasks = append(s.tasks, task)
	if !s.running {
		s.running = true
		s.idle = make(chan struct{})
		go s.loop(s.idle)
	}
}

// stop lets the queued tasks run, then drops new ones.
func (s *serial) stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
}

// current reports whether the caller runs on the serial goroutine (inside a handler).
func (s *serial) current() bool {
	id := goroutineID()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running && s.gid == id
}

// done returns a channel closed once no goroutine runs tasks (at once when idle).
func (s *serial) done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return s.idle
}

func (s *serial) loop(idle chan struct{}) {
	id := goroutineID()
	for {
		s.mu.Lock()
		if len(s.tasks) == 0 {
			s.running = false
			s.gid = 0
			s.mu.Unlock()
			close(idle)
			return
		}
		task := s.tasks[0]
		s.tasks = s.tasks[1:]
		s.gid = id
		s.mu.Unlock()
		task()
	}
}

// goroutineID is the id of the calling goroutine, parsed from the first line of its stack
// ("goroutine 18 [running]:"). Only Close uses it, to know whether it was called from a
// handler, where waiting for that handler to return would never end.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}
