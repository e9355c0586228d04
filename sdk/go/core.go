package nixmsg

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"log"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// ClientName is the `client` name sent in `hello` (spec 6.1).
const ClientName = "go-sdk/0.1.0"

// DefaultCloseTimeout bounds Close when its context has no deadline.
const DefaultCloseTimeout = 5 * time.Second

// Options are the settings of New. The zero value means the defaults of spec 9.
type Options struct {
	// Transport is WebSocket (default) or TCP; raw TCP is used only when asked for (spec 9).
	Transport Transport
	// ManualAck acks messages only on Ack; by default a message is acked when OnMessage's
	// handler returns nil.
	ManualAck bool
	// KeepAlive is the MQTT keep alive, 10–600 s (default 30 s, spec 5).
	KeepAlive time.Duration
	// ConnectTimeout bounds CONNECT, SUBSCRIBE and `hello` together (default 30 s, spec 9).
	ConnectTimeout time.Duration
	// MaxReceiveBytes is declared in `hello`, at least 1024 (default 786,432).
	MaxReceiveBytes int
	// QueueCapacity is how many sends are held in memory, in flight included (default 1,000).
	QueueCapacity int
	// MaxInFlight is how many sends are published without a response yet (default 100).
	MaxInFlight int
	// DedupCapacity is how many received messages are remembered for dedup (default 10,000).
	DedupCapacity int
	// RequestTimeout bounds each request other than Send (default 30 s).
	RequestTimeout time.Duration
	// TLSConfig is used for wss:// and mqtts:// (a private CA, or a test certificate).
	TLSConfig *tls.Config
	// OnCallbackError receives errors returned by, and panics of, handlers (default log.Printf).
	OnCallbackError func(error)

	random func() float64 // jitter source, for tests
}

// Client is a connection to a NixMsg server as one endpoint (spec 9). Create it with New, add
// handlers, then Connect. It reconnects by itself until it is closed, logged out, taken over, or
// refused. All methods are safe for concurrent use.
type Client struct {
	endpointID      string
	o               Options
	link            *link
	run             *serial
	recv            *receiver
	sessions        listeners[string]
	connections     listeners[ConnectionEvent]
	onCallbackError func(error)
	groups          *Groups

	mu          sync.Mutex
	queue       *sendQueue
	pending     *pendingRequests
	connState   ConnectionState
	stopErr     *Error
	info        *ServerInfo
	offset      time.Duration
	issuedToken string
	rid         uint64
	pumpTimer   *time.Timer
	ready       bool          // online, and the handlers of `online` have run
	readyCh     chan struct{} // closed when ready becomes true
	stoppedCh   chan struct{} // closed when the client stops for good
	watching    map[string]any
	closingErr  *Error        // set when Close began: new calls fail with it
	closeDone   chan struct{} // closed when the first Close returned
	drainCh     chan struct{} // closed when nothing is in flight any more, while closing

	workers sync.WaitGroup // goroutines the client started (ack waits, receipt acks, ...)
}

// New creates a client for endpointID at serverURL (ws, wss, http, https, mqtt or mqtts; the
// transport decides how it connects). It does not connect yet: add handlers, then call Connect.
func New(serverURL, endpointID string, credential Credential, o Options) (*Client, error) {
	if endpointID == "" {
		return nil, newError(CodeBadRequest, "The endpoint id is empty")
	}
	if credential.password == "" && credential.token == "" {
		return nil, newError(CodeBadRequest, "The credential is empty")
	}
	if o.Transport == "" {
		o.Transport = WebSocket
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = 30 * time.Second
	}
	if o.KeepAlive < 10*time.Second || o.KeepAlive > 600*time.Second {
		return nil, newError(CodeBadRequest, "KeepAlive must be 10–600 s")
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 30 * time.Second
	}
	if o.MaxReceiveBytes == 0 {
		o.MaxReceiveBytes = defaultMaxFrameBytes
	}
	if o.MaxReceiveBytes < 1024 {
		return nil, newError(CodeBadRequest, "MaxReceiveBytes must be at least 1024")
	}
	o.QueueCapacity = defaultInt(o.QueueCapacity, 1000)
	o.MaxInFlight = defaultInt(o.MaxInFlight, 100)
	o.DedupCapacity = defaultInt(o.DedupCapacity, 10_000)
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	raw, err := ConnectionURL(serverURL, o.Transport)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &Error{Code: CodeBadRequest, Message: "Cannot parse server URL", Err: err}
	}
	c := &Client{
		endpointID: endpointID, o: o, run: newSerial(), connState: StateConnecting,
		readyCh: make(chan struct{}), stoppedCh: make(chan struct{}),
		queue:   newSendQueue(o.QueueCapacity, o.MaxInFlight, o.random),
		pending: newPendingRequests(),
	}
	c.onCallbackError = o.OnCallbackError
	if c.onCallbackError == nil {
		c.onCallbackError = func(err error) { log.Printf("nixmsg: handler failed: %v", err) }
	}
	c.recv = newReceiver(c, o.ManualAck, o.DedupCapacity, c.run)
	c.groups = &Groups{c: c}
	c.link = newLink(linkOptions{
		url: u, endpointID: endpointID, credential: credential,
		keepAlive: uint16(o.KeepAlive / time.Second), connectTimeout: o.ConnectTimeout,
		maxReceiveBytes: o.MaxReceiveBytes, clientName: ClientName, tlsConfig: o.TLSConfig,
		nextRid: c.nextRid, random: o.random,
	}, (*linkHost)(c))
	return c, nil
}

func defaultInt(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// EndpointID returns the endpoint id this client logs in as.
func (c *Client) EndpointID() string { return c.endpointID }

// State returns the current connection state.
func (c *Client) State() ConnectionState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connState
}

// ServerInfo returns the limits from the last handshake; false before the first.
func (c *Client) ServerInfo() (ServerInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.info == nil {
		return ServerInfo{}, false
	}
	return *c.info, true
}

// ClockOffset returns the server clock minus the local clock, measured at the last handshake
// (spec 9 "时间").
func (c *Client) ClockOffset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset
}

// ServerNow returns the server's current time as this client estimates it.
func (c *Client) ServerNow() time.Time { return time.Now().Add(c.ClockOffset()) }

// SessionToken returns the token reconnects use; "" until a password login completes.
func (c *Client) SessionToken() string { return c.link.sessionToken() }

// Connect starts connecting (once) and waits until the client is online, stops for good
// (the error is then "kicked", "auth_failed" or "closed"), or ctx ends. When ctx ends first the
// client keeps connecting in the background; call Ready to wait again.
func (c *Client) Connect(ctx context.Context) error {
	if err := c.stopError(); err != nil {
		return err
	}
	if err := c.link.start(); err != nil {
		return &Error{Code: CodeBadRequest, Message: "Cannot start the connection: " + err.Error(), Err: err}
	}
	_, err := c.Ready(ctx)
	return err
}

// Ready waits until the client is online and returns the server limits; it fails when the
// client stops for good first, or when ctx ends: then with "timeout" (a deadline) or "canceled",
// whose Err is the last connection error ("network" or "tls", with the dial or TLS error
// inside) when an attempt failed, else the context's error; errors.Is(err,
// context.DeadlineExceeded) holds either way.
func (c *Client) Ready(ctx context.Context) (ServerInfo, error) {
	for {
		c.mu.Lock()
		if c.stopErr != nil {
			err := c.stopErr
			c.mu.Unlock()
			return ServerInfo{}, err
		}
		if c.ready && c.info != nil {
			info := *c.info
			c.mu.Unlock()
			return info, nil
		}
		if c.closingErr != nil {
			err := c.closingErr
			c.mu.Unlock()
			return ServerInfo{}, err
		}
		readyCh, stoppedCh := c.readyCh, c.stoppedCh
		c.mu.Unlock()
		select {
		case <-readyCh:
		case <-stoppedCh:
		case <-ctx.Done():
			// Say why it is not online yet: the last connection error, if any.
			return ServerInfo{}, ctxError(ctx, "Not online", c.link.lastError())
		}
	}
}

// Close disconnects and stops for good (spec 9). New calls fail with "closed" at once, and so do
// sends not yet published. Close waits for the message handler running now (unless it is
// called from a handler) so that its automatic ack goes out, then until ctx ends (without a
// deadline: DefaultCloseTimeout) for the acks, requests and sends in flight to be answered;
// what is left then fails with "closed". It returns once the connection and the client's
// goroutines have ended, at most 2 s after that. It can be called any number of times, concurrently, before
// Connect, while reconnecting, from a handler, and after the client stopped; it returns nil.
func (c *Client) Close(ctx context.Context) error {
	inHandler := c.run.current()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCloseTimeout)
		defer cancel()
	}
	c.mu.Lock()
	if c.closeDone != nil { // another Close is under way or done
		done := c.closeDone
		c.mu.Unlock()
		if !inHandler {
			select {
			case <-done:
			case <-ctx.Done():
			}
		}
		return nil
	}
	c.closeDone = make(chan struct{})
	defer close(c.closeDone)
	drained := true
	if c.stopErr == nil {
		closed := &Error{Code: CodeClosed, Message: "Client closed", Reason: "closed"}
		c.closingErr = closed
		c.queue.closeUnsent(closed)
		c.mu.Unlock()
		c.recv.close() // first, so that no handler starts after settled() looked
		if !inHandler {
			select {
			case <-c.recv.settled():
			case <-ctx.Done():
			}
		}
		c.mu.Lock()
		c.drainCh = make(chan struct{})
		drainCh := c.drainCh
		c.checkDrainedLocked()
		c.mu.Unlock()
		select {
		case <-drainCh:
		case <-ctx.Done():
			drained = false
		}
	} else {
		c.mu.Unlock()
	}
	// Past the bound, what is left is given up at once: no polite DISCONNECT. Ending the
	// connection and the goroutines gets closeWait more, whether ctx has ended or not.
	c.link.stopWith(stopCause{state: StateOffline, reason: "closed"}, !drained)
	end, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	c.link.wait(end)
	if !inHandler {
		c.waitWorkers(end)
	}
	return nil
}

// checkDrainedLocked ends Close's drain once nothing is in flight; c.mu is held.
func (c *Client) checkDrainedLocked() {
	if c.drainCh != nil && c.pending.size() == 0 && c.queue.inFlight() == 0 {
		close(c.drainCh)
		c.drainCh = nil
	}
}

// waitWorkers waits (until ctx ends) for the handler goroutine and the client's own goroutines.
func (c *Client) waitWorkers(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		c.workers.Wait()
		<-c.run.done()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// spawn runs fn on a goroutine that Close waits for.
func (c *Client) spawn(fn func()) {
	c.workers.Add(1)
	go func() {
		defer c.workers.Done()
		fn()
	}()
}

// stopError is the error every call fails with once the client stopped or began closing.
func (c *Client) stopError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopErr != nil {
		return c.stopErr
	}
	if c.closingErr != nil {
		return c.closingErr
	}
	return nil
}

// OnSession adds a handler for each new session token (spec 5, 9): after a password login and
// after ChangeLoginPassword. Save it and connect with SessionToken next time. A token issued
// before the handler was added is passed to it at once. The returned func removes the handler.
func (c *Client) OnSession(fn func(token string)) func() {
	mustHandler(fn == nil)
	remove := c.sessions.add(func(t string) error { fn(t); return nil })
	c.mu.Lock()
	token := c.issuedToken
	c.mu.Unlock()
	if token != "" {
		c.run.push(func() { c.report(callOne(fn, token)) })
	}
	return remove
}

// OnConnection adds a handler for every connection state change.
func (c *Client) OnConnection(fn func(ConnectionEvent)) func() {
	mustHandler(fn == nil)
	return c.connections.add(func(e ConnectionEvent) error { fn(e); return nil })
}

// mustHandler panics with a bad_request *Error when a handler is nil: a programming error,
// reported where it is made (like http.Handle with a nil handler) rather than at the first event.
func mustHandler(isNil bool) {
	if isNil {
		panic(newError(CodeBadRequest, "The handler is nil"))
	}
}

// OnMessage adds a handler called once per received message, serially with every other
// handler. In auto mode the message is acked when the handler returns nil; an error or a panic
// leaves it unacked, so the server pushes it again. Messages that arrive before any OnMessage
// handler exists wait, unacked. A nil fn panics with a bad_request *Error (as do the other On…
// methods).
func (c *Client) OnMessage(fn func(Message) error) func() { return c.recv.messages.add(fn) }

// OnReceipt adds a handler called once per receipt (spec 6.4); the receipt is acked after the
// handler returns nil.
func (c *Client) OnReceipt(fn func(Receipt) error) func() { return c.recv.receipts.add(fn) }

// OnRevoked adds a handler called when a message handed to the application was withdrawn
// before its ack (spec 6.4, 9).
func (c *Client) OnRevoked(fn func(Revoked)) func() {
	mustHandler(fn == nil)
	return c.recv.revoked.add(func(r Revoked) error { fn(r); return nil })
}

// OnPresence adds a handler for online/offline notices of watched endpoints (spec 6.5).
func (c *Client) OnPresence(fn func(PresenceEvent)) func() {
	mustHandler(fn == nil)
	return c.recv.presence.add(func(e PresenceEvent) error { fn(e); return nil })
}

// OnGroupEvent adds a handler for changes of groups this endpoint is in (spec 6.7).
func (c *Client) OnGroupEvent(fn func(GroupEvent)) func() {
	mustHandler(fn == nil)
	return c.recv.groupEvents.add(func(e GroupEvent) error { fn(e); return nil })
}

// Send sends body as bytes (base64 on the wire) and waits for the server's answer (spec 6.2).
// It works while disconnected: the send waits in the queue and is resent with the same id and
// content after a reconnect. It fails locally with body_too_large, meta_too_large,
// frame_too_large or queue_full. When ctx ends first, a send not yet published is withdrawn; one
// already published may still be delivered.
func (c *Client) Send(ctx context.Context, to Target, body []byte, opts ...SendOption) (SendResult, error) {
	o := applySendOptions(opts)
	return c.send(ctx, to, func(limits sendLimits) (wireBody, error) {
		return encodeBytesBody(body, o.ContentType, limits.maxBodyBytes)
	}, o)
}

// SendText sends text as a UTF-8 body; otherwise like Send.
func (c *Client) SendText(ctx context.Context, to Target, text string, opts ...SendOption) (SendResult, error) {
	o := applySendOptions(opts)
	return c.send(ctx, to, func(limits sendLimits) (wireBody, error) {
		return encodeTextBody(text, o.ContentType, limits.maxBodyBytes)
	}, o)
}

func applySendOptions(opts []SendOption) SendOptions {
	var o SendOptions
	for _, fn := range opts {
		fn(&o)
	}
	return o
}

func (c *Client) send(ctx context.Context, to Target, body func(sendLimits) (wireBody, error), o SendOptions) (SendResult, error) {
	c.mu.Lock()
	if c.stopErr != nil || c.closingErr != nil {
		err := c.stopErr
		if err == nil {
			err = c.closingErr
		}
		c.mu.Unlock()
		return SendResult{}, err
	}
	limits := c.limits()
	b, err := body(limits)
	if err != nil {
		c.mu.Unlock()
		return SendResult{}, err
	}
	frame, err := buildSendFrame(to, b, o, limits, c.offset, time.Now())
	if err != nil {
		c.mu.Unlock()
		return SendResult{}, err
	}
	e, err := c.queue.add(frame)
	if err != nil {
		c.mu.Unlock()
		return SendResult{}, err
	}
	c.pump()
	c.mu.Unlock()
	select {
	case out := <-e.done:
		return out.result, out.err
	case <-ctx.Done():
		c.mu.Lock()
		c.queue.forget(e)
		c.checkDrainedLocked()
		c.mu.Unlock()
		return SendResult{}, ctxError(ctx, "Send", nil)
	}
}

// limits returns the limits sends are checked against; c.mu is held.
func (c *Client) limits() sendLimits {
	if c.info == nil {
		return defaultLimits
	}
	return sendLimits{c.info.MaxBodyBytes, c.info.MaxMetaBytes, c.info.MaxFrameBytes}
}

func (c *Client) nextRid() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nextRidLocked()
}

func (c *Client) nextRidLocked() string {
	c.rid++
	return strconv.FormatUint(c.rid, 36)
}

// request sends a request frame and returns its `resp.data` (spec 6).
func (c *Client) request(ctx context.Context, typ string, fields map[string]any) (json.RawMessage, error) {
	c.mu.Lock()
	if c.closingErr != nil && c.stopErr == nil {
		err := c.closingErr
		c.mu.Unlock()
		return nil, err
	}
	rid, ch, err := c.beginRequest(typ, fields)
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return c.awaitResponse(ctx, typ, rid, ch)
}

// beginRequest publishes a request frame; c.mu is held. It also works while closing (for the
// acks Close drains); request refuses new application calls then.
func (c *Client) beginRequest(typ string, fields map[string]any) (string, chan respOutcome, error) {
	if c.stopErr != nil {
		return "", nil, c.stopErr
	}
	if !c.link.online() {
		return "", nil, newError(CodeNotConnected, "Not connected to the server")
	}
	rid := c.nextRidLocked()
	frame := map[string]any{"v": 1, "type": typ, "rid": rid}
	for k, v := range fields {
		frame[k] = v
	}
	data, err := encodeFrame(frame, c.limits().maxFrameBytes)
	if err != nil {
		return "", nil, err
	}
	ch := c.pending.wait(rid)
	c.link.publish(data)
	return rid, ch, nil
}

// awaitResponse waits for the `resp` of rid, at most the request timeout.
func (c *Client) awaitResponse(ctx context.Context, typ, rid string, ch chan respOutcome) (json.RawMessage, error) {
	timer := time.NewTimer(c.o.RequestTimeout)
	defer timer.Stop()
	select {
	case out := <-ch:
		return out.data, out.err
	case <-timer.C:
		c.forget(rid)
		return nil, newError(CodeTimeout, "No response to "+typ+" within "+c.o.RequestTimeout.String())
	case <-ctx.Done():
		c.forget(rid)
		return nil, ctxError(ctx, typ, nil)
	}
}

func (c *Client) forget(rid string) {
	c.mu.Lock()
	c.pending.forget(rid)
	c.checkDrainedLocked()
	c.mu.Unlock()
}

// pump publishes the sends that are due, up to the in-flight window; c.mu is held.
func (c *Client) pump() {
	if c.pumpTimer != nil {
		c.pumpTimer.Stop()
		c.pumpTimer = nil
	}
	if !c.link.online() || c.closingErr != nil || c.stopErr != nil {
		return
	}
	now := time.Now()
	maxFrame := c.limits().maxFrameBytes
	for {
		e := c.queue.take(now, c.nextRidLocked)
		if e == nil {
			break
		}
		data, err := encodeFrame(e.frame.withRid(e.rid), maxFrame)
		if err != nil { // the limits shrank since the call: end it like the server would
			c.queue.settle(e.rid, false, nil, asError(err), now)
			continue
		}
		c.link.publish(data)
	}
	if due, ok := c.queue.nextDueAt(now); ok {
		c.pumpTimer = time.AfterFunc(due.Sub(now), func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.pump()
		})
	}
}

func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeBadRequest, Message: err.Error(), Err: err}
}

// useToken: a new session token from the server; reconnects use it, OnSession gets it.
func (c *Client) useToken(token string) {
	c.link.setSessionToken(token)
	c.issued(token)
}

func (c *Client) issued(token string) {
	c.mu.Lock()
	c.issuedToken = token
	c.mu.Unlock()
	c.run.push(func() { c.report(c.sessions.run(token)) })
}

func (c *Client) report(err error) {
	if err != nil {
		c.onCallbackError(err)
	}
}

func callOne[A any](fn func(A), arg A) (err error) {
	return (&listeners[A]{}).runOne(fn, arg)
}

// stopWith stops for good with cause, also when the server closes the connection first.
func (c *Client) stopWith(ctx context.Context, cause stopCause, during func() error) error {
	if c.link.online() {
		c.link.stopOnClose(cause)
	}
	err := during()
	c.link.stop(cause)
	c.link.wait(ctx)
	return err
}

// callbackError implements receiverHost.
func (c *Client) callbackError(err error) { c.onCallbackError(err) }

// sendAck implements receiverHost.
func (c *Client) sendAck(from, id string) (string, bool) {
	wait := c.beginAck(from, id)
	if wait == nil {
		return "", false
	}
	return wait()
}

// beginAck implements receiverHost.
func (c *Client) beginAck(from, id string) func() (string, bool) {
	if !c.link.online() {
		return nil
	}
	c.mu.Lock()
	rid, ch, err := c.beginRequest("ack", map[string]any{"from": from, "id": id})
	c.mu.Unlock()
	if err != nil {
		return nil
	}
	return func() (string, bool) {
		data, err := c.awaitResponse(context.Background(), "ack", rid, ch)
		if err != nil {
			return "", false
		}
		var d struct {
			Result string `json:"result"`
		}
		if json.Unmarshal(data, &d) != nil || d.Result == "" {
			return "", false
		}
		return d.Result, true
	}
}

// sendReceiptAck implements receiverHost.
func (c *Client) sendReceiptAck(receiptID string) {
	if !c.link.online() {
		return
	}
	c.mu.Lock()
	rid, ch, err := c.beginRequest("receipt_ack", map[string]any{"receipt_id": receiptID})
	c.mu.Unlock()
	if err != nil {
		return
	}
	c.spawn(func() { _, _ = c.awaitResponse(context.Background(), "receipt_ack", rid, ch) })
}

// linkHost is the Client seen by its link.
type linkHost Client

func (h *linkHost) state(s ConnectionState, reason string, retryIn time.Duration, err *Error) {
	c := (*Client)(h)
	c.mu.Lock()
	c.connState = s
	c.mu.Unlock()
	ev := ConnectionEvent{State: s, Reason: reason, RetryIn: retryIn, Err: err}
	c.run.push(func() { c.report(c.connections.run(ev)) })
	if s == StateOnline {
		c.run.push(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.connState == StateOnline && !c.ready {
				c.ready = true
				close(c.readyCh)
			}
		})
	}
}

func (h *linkHost) online(hello helloData, offset time.Duration, token string) {
	c := (*Client)(h)
	if token != "" {
		c.issued(token)
	}
	c.mu.Lock()
	c.offset = offset
	first := c.info == nil
	info := hello.serverInfo()
	c.info = &info
	c.pump()
	if !first && c.watching != nil {
		// The server forgot the watch with the last connection (spec 6.5): send it again now,
		// before any request the application makes on this connection.
		if rid, ch, err := c.beginRequest("presence.watch", c.watching); err == nil {
			c.spawn(func() { _, _ = c.awaitResponse(context.Background(), "presence.watch", rid, ch) })
		}
	}
	c.mu.Unlock()
}

func (h *linkHost) frame(f *inboundFrame) {
	c := (*Client)(h)
	switch f.Type {
	case "resp":
		rid := rawString(f.Rid)
		var rerr *Error
		if !f.Ok {
			rerr = f.respError()
		}
		c.mu.Lock()
		if c.queue.has(rid) {
			c.queue.settle(rid, f.Ok, f.Data, rerr, time.Now())
			c.pump()
		} else {
			c.pending.settle(rid, f.Ok, f.Data, rerr)
		}
		c.checkDrainedLocked()
		c.mu.Unlock()
	case "msg":
		if m, ok := f.toMessage(); ok {
			c.recv.message(m)
		}
	case "receipt":
		c.recv.receipt(f.toReceipt())
	case "revoked":
		c.recv.revoke(f.toRevoked())
	case "presence":
		c.recv.presenceEvent(f.toPresence())
	case "group_event":
		c.recv.groupEvent(f.toGroupEvent())
	}
}

func (h *linkHost) down() {
	c := (*Client)(h)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lostLocked(newError(CodeNotConnected, "Connection lost"))
}

// lostLocked: the connection is gone; c.mu is held.
func (c *Client) lostLocked(err error) {
	if c.closingErr != nil {
		err = c.closingErr
	}
	c.queue.requeueInFlight()
	c.pending.failAll(err)
	c.checkDrainedLocked()
	if c.ready {
		c.ready = false
		c.readyCh = make(chan struct{})
	}
}

func (h *linkHost) stopped(cause stopCause) {
	c := (*Client)(h)
	code := string(cause.state)
	if cause.state == StateOffline {
		code = CodeClosed
	}
	err := &Error{Code: code, Message: "Client stopped: " + cause.reason, Reason: cause.reason}
	c.mu.Lock()
	if c.stopErr != nil {
		c.mu.Unlock()
		return
	}
	c.stopErr = err
	if c.pumpTimer != nil {
		c.pumpTimer.Stop()
	}
	c.lostLocked(err)
	c.queue.close(err)
	c.connState = cause.state
	close(c.stoppedCh)
	c.mu.Unlock()
	c.recv.close()
	ev := ConnectionEvent{State: cause.state, Reason: cause.reason}
	if cause.state != StateOffline {
		ev.Err = err
	}
	c.run.push(func() { c.report(c.connections.run(ev)) })
	c.run.stop()
}
