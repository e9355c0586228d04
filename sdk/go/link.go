package nixmsg

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session/state"
)

// sessionTakenOver is the MQTT 5 DISCONNECT reason sent when another connection took the
// session over (spec 5).
const sessionTakenOver = 0x8e

// authRefused are the CONNACK codes that end reconnecting (spec 9 step 6).
var authRefused = map[byte]bool{0x86: true, 0x87: true, 0x8a: true}

const (
	// closeWait is the longest wait for a clean MQTT close before the socket is closed.
	closeWait = 2 * time.Second
	// stableOnline resets the backoff (spec 9 step 4).
	stableOnline = 60 * time.Second
	// neverDelay is what the reconnect schedule answers once stopped: the stop wins the race.
	neverDelay = time.Hour
)

// linkOptions are the settings of a link.
type linkOptions struct {
	url             *url.URL
	endpointID      string
	credential      Credential
	keepAlive       uint16
	connectTimeout  time.Duration
	maxReceiveBytes int
	clientName      string
	tlsConfig       *tls.Config
	nextRid         func() string
	random          func() float64
}

// stopCause says why the link stopped for good.
type stopCause struct {
	state  ConnectionState // kicked, auth_failed or offline
	reason string
}

// linkEvents is what a link reports to its owner. They are called without the link's lock held.
type linkEvents interface {
	// state reports connecting, online or reconnecting; stops are reported by stopped only. err
	// is why the last attempt failed, for reconnecting (nil when unknown).
	state(s ConnectionState, reason string, retryIn time.Duration, err *Error)
	// online: the handshake succeeded; token is the new session token of a password login.
	online(h helloData, offset time.Duration, token string)
	// frame is a downlink frame other than the hello response and `fatal`, while online.
	frame(f *inboundFrame)
	// down: an online connection was lost; requests in flight will get no response.
	down()
	// stopped: the link stopped for good and will not connect again.
	stopped(cause stopCause)
}

// link is one logical connection to the server and its reconnect loop (spec 5, 6.1, 9 "连接"),
// on top of autopaho: it connects, subscribes to the down topic, performs `hello`, and reconnects
// with backoff until it is stopped by `fatal`, a 0x8E takeover, an authentication refusal, or
// its owner. autopaho's own schedule is replaced by the spec's (ReconnectBackoff), its CONNECT
// packet gets Clean Start and session expiry 0 on EVERY connection (ConnectPacketBuilder), and
// the link dials itself (AttemptConnection) so that it can drop an attempt that times out.
type link struct {
	o       linkOptions
	ev      linkEvents
	upTopic string

	mu           sync.Mutex
	backoff      *Backoff
	password     string
	token        string
	cm           *autopaho.ConnectionManager
	cancel       context.CancelFunc
	started      bool
	stopped      bool
	force        bool       // the stop closes the socket without DISCONNECT
	closeMeans   *stopCause // when the current connection closes, stop with this
	firstDelay   bool       // the next delay asked for is the first attempt's (0)
	attempt      int        // generation of the current connection attempt
	conn         net.Conn   // the current attempt's socket
	timer        *time.Timer
	usingToken   bool
	dropReason   string
	disconnected byte // reason code of the last server DISCONNECT, 0 when none
	helloRid     string
	helloSentAt  time.Time
	isOnline     bool
	onlineSince  time.Time
	out          *outbox
	attemptErr   *Error // why the current attempt failed, reported with its reconnecting
	lastErr      *Error // why the last attempt failed, until a handshake succeeds
}

func newLink(o linkOptions, ev linkEvents) *link {
	b := NewBackoff()
	if o.random != nil {
		b.Random = o.random
	}
	return &link{
		o: o, ev: ev, upTopic: "nix/c/" + o.endpointID + "/up", backoff: b,
		password: o.credential.password, token: o.credential.token, firstDelay: true,
	}
}

// online reports whether the handshake of the current connection completed.
func (l *link) online() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.isOnline
}

// lastError is why the last connection attempt failed ("network", "tls"); nil once online.
func (l *link) lastError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lastErr == nil {
		return nil
	}
	return l.lastErr
}

// sessionToken is the token reconnects use, "" before a password login completes.
func (l *link) sessionToken() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.token
}

// setSessionToken replaces the session token (after self.login_password, spec 6.6).
func (l *link) setSessionToken(token string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.token = token
	l.password = ""
}

// start begins the first connection attempt (once).
func (l *link) start() error {
	l.mu.Lock()
	if l.started || l.stopped {
		l.mu.Unlock()
		return nil
	}
	l.started = true
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	session := &watchedSession{State: state.NewInMemory(), onDisconnect: l.serverDisconnected}
	cfg := autopaho.ClientConfig{
		ServerUrls:              []*url.URL{l.o.url},
		TlsCfg:                  l.o.tlsConfig,
		KeepAlive:               l.o.keepAlive,
		ConnectTimeout:          l.o.connectTimeout,
		ReconnectBackoff:        l.nextDelay,
		AttemptConnection:       l.dial,
		ConnectPacketBuilder:    l.connectPacket,
		DisconnectPacketBuilder: l.disconnectPacket,
		OnConnectionUp:          l.connectionUp,
		OnConnectionDown:        l.connectionDown,
		OnConnectError:          l.connectError,
		ClientConfig: paho.ClientConfig{
			ClientID:          l.o.endpointID,
			Session:           session,
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){l.publishReceived},
			OnClientError:     func(error) {},
		},
	}
	cm, err := autopaho.NewConnection(ctx, cfg)
	if err != nil {
		cancel()
		l.mu.Unlock()
		return err
	}
	l.cm = cm
	l.mu.Unlock()
	l.ev.state(StateConnecting, "", 0, nil)
	return nil
}

// connectPacket sets what spec 9 step 2 asks of EVERY connection, reconnects included: Clean
// Start 1 and session expiry 0 (autopaho's CleanStartOnInitialConnection covers only the first),
// and the credential in use now (the session token after a password login).
func (l *link) connectPacket(cp *paho.Connect, _ *url.URL) (*paho.Connect, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	expiry := uint32(0)
	cp.ClientID = l.o.endpointID
	cp.CleanStart = true
	cp.KeepAlive = l.o.keepAlive
	cp.UsernameFlag = true
	cp.Username = l.o.endpointID
	secret := l.password
	l.usingToken = l.token != ""
	if l.usingToken {
		secret = l.token
	}
	cp.PasswordFlag = true
	cp.Password = []byte(secret)
	if cp.Properties == nil {
		cp.Properties = &paho.ConnectProperties{}
	}
	cp.Properties.SessionExpiryInterval = &expiry
	return cp, nil
}

func (l *link) disconnectPacket() *paho.Disconnect {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.force {
		return nil // after a refusal there is nothing to be polite to
	}
	return &paho.Disconnect{ReasonCode: 0}
}

// nextDelay is autopaho's ReconnectBackoff: 0 before the very first attempt, then the spec's
// schedule, each delay reported as `reconnecting`.
func (l *link) nextDelay(int) time.Duration {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return neverDelay
	}
	if l.firstDelay {
		l.firstDelay = false
		l.mu.Unlock()
		return 0
	}
	delay := l.backoff.Next()
	reason := l.dropReason
	if reason == "" {
		reason = "connection_closed"
	}
	l.dropReason = ""
	err := l.attemptErr
	l.attemptErr = nil
	l.mu.Unlock()
	l.ev.state(StateReconnecting, reason, delay, err)
	return delay
}

// dial is autopaho's AttemptConnection. The timer bounds CONNECT, SUBSCRIBE and hello together
// (spec 9 step 3: 30 s).
func (l *link) dial(ctx context.Context, _ autopaho.ClientConfig, u *url.URL) (net.Conn, error) {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return nil, errors.New("nixmsg: link stopped")
	}
	l.attempt++
	gen := l.attempt
	l.disconnected = 0
	l.helloRid = ""
	l.timer = time.AfterFunc(l.o.connectTimeout, func() { l.drop(gen, "timeout") })
	l.mu.Unlock()
	dctx, cancel := context.WithTimeout(ctx, l.o.connectTimeout)
	defer cancel()
	conn, err := dialServer(dctx, u, l.o.tlsConfig)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if l.dropReason == "" {
			l.dropReason = "network_error"
		}
		return nil, err
	}
	if l.stopped || gen != l.attempt {
		_ = conn.Close()
		return nil, errors.New("nixmsg: link stopped")
	}
	l.conn = conn
	return conn, nil
}

// drop closes the socket of attempt gen; autopaho then reconnects (or the stop takes over).
func (l *link) drop(gen int, reason string) {
	l.mu.Lock()
	if gen != l.attempt || l.conn == nil {
		l.mu.Unlock()
		return
	}
	l.dropReason = reason
	conn := l.conn
	l.mu.Unlock()
	_ = conn.Close()
}

func (l *link) connectError(err error) {
	l.mu.Lock()
	// The attempt is over: its timer must not close the next attempt's socket.
	if l.timer != nil {
		l.timer.Stop()
	}
	l.conn = nil
	l.mu.Unlock()
	var ce *autopaho.ConnackError
	if errors.As(err, &ce) {
		if authRefused[ce.ReasonCode] {
			// spec 9 step 6: which credential was refused decides the reason.
			l.mu.Lock()
			reason := "bad_credentials"
			if l.usingToken {
				reason = "session_invalid"
			}
			l.mu.Unlock()
			l.stop(stopCause{state: StateAuthFailed, reason: reason})
			return
		}
		l.mu.Lock()
		l.dropReason = fmt.Sprintf("connack_0x%x", ce.ReasonCode)
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	if l.dropReason == "" {
		l.dropReason = "network_error"
	}
	if !l.stopped {
		l.attemptErr = transportError(err)
		l.lastErr = l.attemptErr
	}
	l.mu.Unlock()
}

// serverDisconnected records the reason of a server DISCONNECT; it runs before autopaho
// reports the connection down.
func (l *link) serverDisconnected(code byte) {
	l.mu.Lock()
	l.disconnected = code
	l.dropReason = fmt.Sprintf("disconnect_0x%x", code)
	l.mu.Unlock()
}

// connectionUp runs after CONNACK: SUBSCRIBE to the down topic, then `hello` (spec 6.1).
func (l *link) connectionUp(cm *autopaho.ConnectionManager, _ *paho.Connack) {
	l.mu.Lock()
	gen := l.attempt
	l.out = newOutbox(cm, l.upTopic)
	l.mu.Unlock()
	go l.handshake(cm, gen)
}

func (l *link) handshake(cm *autopaho.ConnectionManager, gen int) {
	ctx, cancel := context.WithTimeout(context.Background(), l.o.connectTimeout)
	defer cancel()
	sub, err := cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{
		{Topic: "nix/c/" + l.o.endpointID + "/down", QoS: 1},
	}})
	if err != nil || sub == nil || len(sub.Reasons) == 0 || sub.Reasons[0] >= 0x80 {
		l.drop(gen, "subscribe_failed")
		return
	}
	rid := l.o.nextRid() // before the lock: the owner's lock is never taken under the link's
	l.mu.Lock()
	if gen != l.attempt || l.stopped {
		l.mu.Unlock()
		return
	}
	l.helloRid = rid
	l.helloSentAt = time.Now()
	hello, _ := marshalJSON(map[string]any{
		"v": 1, "type": "hello", "rid": l.helloRid,
		"max_receive_bytes": l.o.maxReceiveBytes, "client": l.o.clientName,
	})
	out := l.out
	l.mu.Unlock()
	out.push(hello)
}

// publishReceived handles every downlink PUBLISH (paho's router goroutine, in order).
func (l *link) publishReceived(pr paho.PublishReceived) (bool, error) {
	f, ok := parseFrame(pr.Packet.Payload)
	if !ok {
		return true, nil
	}
	if f.Type == "fatal" {
		// spec 6.8: disabled, deleted, password_reset, protocol -> stop reconnecting.
		reason := f.Reason
		if reason == "" {
			reason = "fatal"
		}
		l.stop(stopCause{state: StateKicked, reason: reason})
		return true, nil
	}
	l.mu.Lock()
	if f.Type == "resp" && l.helloRid != "" && rawString(f.Rid) == l.helloRid {
		l.helloRid = ""
		l.mu.Unlock()
		l.handshaken(f, pr.Client)
		return true, nil
	}
	online := l.isOnline
	l.mu.Unlock()
	if online {
		l.ev.frame(f)
	}
	return true, nil
}

func (l *link) handshaken(f *inboundFrame, cli *paho.Client) {
	l.mu.Lock()
	gen := l.attempt
	if !f.Ok {
		l.mu.Unlock()
		code := "hello_failed"
		if f.Error != nil && f.Error.Code != "" {
			code = f.Error.Code
		}
		l.drop(gen, code)
		return
	}
	var h helloData
	if err := decodeData(f.Data, &h); err != nil {
		l.mu.Unlock()
		l.drop(gen, "bad_hello")
		return
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	now := time.Now()
	// spec 9 "时间": offset = server_time_ms - (hello sent + response received) / 2.
	mid := l.helloSentAt.UnixMilli() + (now.UnixMilli()-l.helloSentAt.UnixMilli())/2
	offset := time.Duration(h.ServerTimeMs-mid) * time.Millisecond
	if h.SessionToken != "" {
		l.token = h.SessionToken
		l.password = ""
	}
	l.isOnline = true
	l.onlineSince = now
	l.lastErr = nil
	if l.out != nil {
		l.out.useClient(cli)
	}
	stopped := l.stopped
	l.mu.Unlock()
	l.ev.online(h, offset, h.SessionToken)
	if !stopped {
		l.ev.state(StateOnline, "", 0, nil)
	}
}

// connectionDown is autopaho's OnConnectionDown; false ends its loop.
func (l *link) connectionDown() bool {
	l.mu.Lock()
	wasOnline := l.isOnline
	l.isOnline = false
	l.conn = nil
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.out != nil {
		l.out.close()
		l.out = nil
	}
	var cause *stopCause
	if l.disconnected == sessionTakenOver {
		cause = &stopCause{state: StateKicked, reason: "taken_over"}
	} else if l.closeMeans != nil {
		cause = l.closeMeans
	}
	if wasOnline && time.Since(l.onlineSince) >= stableOnline {
		l.backoff.Reset()
	}
	stopped := l.stopped
	l.mu.Unlock()
	if wasOnline {
		l.ev.down()
	}
	if cause != nil {
		l.stop(*cause)
		return false
	}
	return !stopped
}

// publish queues a frame for the up topic, in order; false when not online.
func (l *link) publish(frame []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.isOnline || l.out == nil {
		return false
	}
	l.out.push(frame)
	return true
}

// stopOnClose: when the current connection closes, stop with cause instead of reconnecting.
func (l *link) stopOnClose(cause stopCause) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closeMeans = &cause
}

// stop ends the link for good without waiting; wait blocks until autopaho has finished.
func (l *link) stop(cause stopCause) { l.stopWith(cause, false) }

// stopWith is stop; force closes the socket without a DISCONNECT (what is in flight is given
// up), as every stop other than a close does.
func (l *link) stopWith(cause stopCause, force bool) {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.stopped = true
	l.force = force || cause.state != StateOffline
	l.isOnline = false
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.out != nil {
		l.out.close()
	}
	conn := l.conn
	cancel := l.cancel
	l.mu.Unlock()
	if l.force && conn != nil {
		_ = conn.Close()
	}
	if cancel != nil {
		cancel() // a graceful stop sends DISCONNECT (autopaho), a forced one finds the socket closed
	}
	l.ev.stopped(cause)
}

// wait blocks until the MQTT client has ended, at most closeWait (then the socket is closed).
func (l *link) wait(ctx context.Context) {
	l.mu.Lock()
	cm := l.cm
	l.mu.Unlock()
	if cm == nil {
		return
	}
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-cm.Done():
		return
	case <-t.C:
	case <-ctx.Done():
	}
	l.mu.Lock()
	conn := l.conn
	l.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}

// watchedSession is paho's in-memory session state that also reports the reason code of a
// server DISCONNECT before autopaho learns of the lost connection, so that a 0x8E takeover stops
// the link instead of reconnecting.
type watchedSession struct {
	*state.State
	onDisconnect func(code byte)
}

func (s *watchedSession) ConnectionLost(dp *packets.Disconnect) error {
	if dp != nil {
		s.onDisconnect(dp.ReasonCode)
	}
	return s.State.ConnectionLost(dp)
}
