package nixmsg

import (
	"context"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
)

// publishTimeout bounds one publish of the hello (which waits for its PUBACK).
const publishTimeout = 30 * time.Second

// outbox holds the frames of one connection waiting to be published on the up topic, and
// publishes them in order from its own goroutine. Once the handshake has shown which paho
// client carries the connection, frames are written without waiting for each PUBACK (requests
// are answered by `resp`, not by PUBACK). Closing it drops what was not written: sends are
// replayed by the send queue on the next connection (spec 9 "发送").
type outbox struct {
	cm     *autopaho.ConnectionManager
	topic  string
	mu     sync.Mutex
	frames [][]byte
	cli    *paho.Client
	closed bool
	wake   chan struct{}
}

func newOutbox(cm *autopaho.ConnectionManager, topic string) *outbox {
	o := &outbox{cm: cm, topic: topic, wake: make(chan struct{}, 1)}
	go o.loop()
	return o
}

func (o *outbox) push(frame []byte) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.frames = append(o.frames, frame)
	o.mu.Unlock()
	o.signal()
}

// useClient makes later publishes asynchronous on cli.
func (o *outbox) useClient(cli *paho.Client) {
	o.mu.Lock()
	o.cli = cli
	o.mu.Unlock()
}

func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.frames = nil
	o.mu.Unlock()
	o.signal()
}

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *outbox) loop() {
	for {
		o.mu.Lock()
		if o.closed {
			o.mu.Unlock()
			return
		}
		if len(o.frames) == 0 {
			o.mu.Unlock()
			<-o.wake
			continue
		}
		frame := o.frames[0]
		o.frames = o.frames[1:]
		cli := o.cli
		o.mu.Unlock()
		p := &paho.Publish{Topic: o.topic, QoS: 1, Payload: frame}
		ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
		if cli != nil {
			_, _ = cli.PublishWithOptions(ctx, p, paho.PublishOptions{Method: paho.PublishMethod_AsyncSend})
		} else {
			_, _ = o.cm.Publish(ctx, p)
		}
		cancel()
	}
}
