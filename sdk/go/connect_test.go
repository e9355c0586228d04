package nixmsg

// The connection rules of spec 9 steps 2 and 3, observed on the wire through the proxy.

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"
)

// connectFlags parses an MQTT 5 CONNECT packet: the connect flags and the Session Expiry
// Interval property (-1 when absent).
func connectFlags(b []byte) (flags byte, expiry int64, err error) {
	if len(b) < 2 || b[0] != 0x10 {
		return 0, 0, fmt.Errorf("not a CONNECT: % x", b[:min(len(b), 8)])
	}
	i := 1
	for b[i]&0x80 != 0 { // remaining length
		i++
	}
	i++
	nameLen := int(binary.BigEndian.Uint16(b[i:]))
	i += 2 + nameLen
	if b[i] != 5 {
		return 0, 0, fmt.Errorf("protocol version %d", b[i])
	}
	flags = b[i+1]
	i += 4 // version, flags, keep alive
	propLen, shift := 0, 0
	for {
		v := b[i]
		i++
		propLen |= int(v&0x7f) << shift
		shift += 7
		if v&0x80 == 0 {
			break
		}
	}
	expiry = -1
	for j := i; j < i+propLen; {
		id := b[j]
		switch id {
		case 0x11: // Session Expiry Interval
			expiry = int64(binary.BigEndian.Uint32(b[j+1:]))
			j += 5
		case 0x21, 0x22: // Receive Maximum, Topic Alias Maximum
			j += 3
		case 0x27: // Maximum Packet Size
			j += 5
		case 0x17, 0x19: // Request Problem / Response Information
			j += 2
		default:
			return flags, expiry, nil
		}
	}
	return flags, expiry, nil
}

func TestCleanStartAndNoSessionOnEveryConnection(t *testing.T) {
	h := needServer(t)
	ep := h.endpoint(t)
	p := startProxy(t, h.address())
	a := online(t, "mqtt://"+p.address(), ep, Options{Transport: TCP})
	p.cut()
	if _, err := a.states.waitCount(2, func(e ConnectionEvent) bool { return e.State == StateOnline }, "online again", waitTimeout); err != nil {
		t.Fatal(err)
	}
	chunks := p.firstChunks.all()
	if len(chunks) < 2 {
		t.Fatalf("%d connections seen", len(chunks))
	}
	for n, c := range chunks {
		flags, expiry, err := connectFlags(c)
		if err != nil {
			t.Fatal(err)
		}
		// spec 9 step 2: Clean Start on the reconnect too, and a session that ends with it.
		if flags&0x02 == 0 || expiry > 0 {
			t.Fatalf("connection %d: flags %08b, session expiry %d", n+1, flags, expiry)
		}
	}
}

func TestConnectTimeoutCoversTheHandshake(t *testing.T) {
	h := needServer(t)
	ep := h.endpoint(t)
	p := startProxy(t, h.address())
	p.setHoldDown(true) // CONNACK never arrives
	a := track(t, "ws://"+p.address()+"/mqtt", ep.ID, Password(ep.Password), Options{ConnectTimeout: time.Second})
	a.start(t)
	ev, err := a.states.waitFor(func(e ConnectionEvent) bool { return e.State == StateReconnecting }, "reconnecting", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if ev.RetryIn < 700*time.Millisecond || ev.RetryIn > 1300*time.Millisecond {
		t.Fatalf("first retry in %v, want 1 s ±30%%", ev.RetryIn)
	}
	p.setHoldDown(false)
	p.cut()
	if err := a.c.Connect(ctx15(t)); err != nil {
		t.Fatal(err)
	}
}
