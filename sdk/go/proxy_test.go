package nixmsg

import (
	"net"
	"sync"
	"testing"
	"time"
)

// testProxy is a TCP proxy in front of the server that a test can cut, stall or refuse, to
// simulate network failures with real sockets (as sdk/ts/test/helpers/proxy.ts). It forwards
// WebSocket and raw MQTT alike and counts accepted connections.
type testProxy struct {
	ln       net.Listener
	target   string
	accepted *events[time.Time]
	// firstChunks holds the first bytes each client connection sent (its CONNECT over TCP).
	firstChunks *events[[]byte]
	mu          sync.Mutex
	pairs       map[*proxyPair]bool
	refuse      bool
	holdDown    bool
	pauseDown   bool
}

type proxyPair struct {
	client, upstream net.Conn
}

func startProxy(t testing.TB, target string) *testProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &testProxy{ln: ln, target: target, accepted: newEvents[time.Time](), firstChunks: newEvents[[]byte](), pairs: map[*proxyPair]bool{}}
	go p.acceptLoop()
	t.Cleanup(p.close)
	return p
}

// address is "127.0.0.1:port" of the proxy.
func (p *testProxy) address() string { return p.ln.Addr().String() }

func (p *testProxy) setRefuse(v bool) { p.mu.Lock(); p.refuse = v; p.mu.Unlock() }

// setHoldDown: while true, server-to-client bytes are dropped (responses get "lost"); the
// connection is expected to be cut before holding stops, as in the TypeScript proxy.
func (p *testProxy) setHoldDown(v bool) { p.mu.Lock(); p.holdDown = v; p.mu.Unlock() }

// setPauseDown: while true, server-to-client bytes wait in the proxy; they flow on when it ends.
func (p *testProxy) setPauseDown(v bool) { p.mu.Lock(); p.pauseDown = v; p.mu.Unlock() }

// cut destroys every open connection.
func (p *testProxy) cut() {
	p.mu.Lock()
	pairs := p.pairs
	p.pairs = map[*proxyPair]bool{}
	p.mu.Unlock()
	for pair := range pairs {
		_ = pair.client.Close()
		_ = pair.upstream.Close()
	}
}

func (p *testProxy) close() {
	_ = p.ln.Close()
	p.cut()
}

func (p *testProxy) acceptLoop() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.push(time.Now())
		p.mu.Lock()
		refuse := p.refuse
		p.mu.Unlock()
		if refuse {
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		pair := &proxyPair{client: c, upstream: up}
		p.mu.Lock()
		p.pairs[pair] = true
		p.mu.Unlock()
		end := func() {
			p.mu.Lock()
			delete(p.pairs, pair)
			p.mu.Unlock()
			_ = c.Close()
			_ = up.Close()
		}
		go func() { p.upstreamCopy(pair); end() }()
		go func() { p.downstream(pair); end() }()
	}
}

func (p *testProxy) upstreamCopy(pair *proxyPair) {
	buf := make([]byte, 32*1024)
	first := true
	for {
		n, err := pair.client.Read(buf)
		if n > 0 {
			if first {
				p.firstChunks.push(append([]byte(nil), buf[:n]...))
				first = false
			}
			if _, werr := pair.upstream.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *testProxy) downstream(pair *proxyPair) {
	buf := make([]byte, 32*1024)
	for {
		n, err := pair.upstream.Read(buf)
		for n > 0 {
			p.mu.Lock()
			paused := p.pauseDown
			p.mu.Unlock()
			if !paused {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		if n > 0 {
			p.mu.Lock()
			hold := p.holdDown
			p.mu.Unlock()
			if !hold {
				if _, werr := pair.client.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}
