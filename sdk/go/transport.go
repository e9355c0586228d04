package nixmsg

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/gorilla/websocket"
)

// dialServer opens one network connection for MQTT (spec 9 "连接" step 1): WebSocket with the
// subprotocol `mqtt` for ws/wss, raw TCP for mqtt/mqtts. The returned conn is safe for the
// concurrent writes of paho (it implements sync.Locker).
func dialServer(ctx context.Context, u *url.URL, tlsConfig *tls.Config) (net.Conn, error) {
	switch u.Scheme {
	case "mqtt":
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", u.Host)
		if err != nil {
			return nil, err
		}
		return packets.NewThreadSafeConn(c), nil // Go sockets have TCP_NODELAY on by default
	case "mqtts":
		d := tls.Dialer{Config: tlsConfig}
		c, err := d.DialContext(ctx, "tcp", u.Host)
		if err != nil {
			return nil, err
		}
		return packets.NewThreadSafeConn(c), nil
	case "ws", "wss":
		d := websocket.Dialer{
			Subprotocols:     []string{"mqtt"},
			TLSClientConfig:  tlsConfig,
			HandshakeTimeout: 30 * time.Second,
			Proxy:            nil,
		}
		ws, _, err := d.DialContext(ctx, u.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("websocket connection failed: %w", err)
		}
		return &wsConn{Conn: ws}, nil
	}
	return nil, fmt.Errorf("nixmsg: unsupported connection scheme %q", u.Scheme)
}

// wsConn carries an MQTT byte stream over binary WebSocket messages; reads continue across
// message boundaries. paho locks the conn around each packet it writes (sync.Locker): the pieces
// written under the lock go out as ONE WebSocket message, so the server handles one frame per
// MQTT packet instead of one per piece.
type wsConn struct {
	*websocket.Conn
	mu      sync.Mutex
	packet  bool   // inside Lock … Unlock
	pending []byte // the pieces of the packet being written
	werr    error
	r       io.Reader
}

// Lock starts a packet.
func (c *wsConn) Lock() {
	c.mu.Lock()
	c.packet = true
}

// Unlock sends the packet's pieces as one message.
func (c *wsConn) Unlock() {
	if len(c.pending) > 0 && c.werr == nil {
		c.werr = c.WriteMessage(websocket.BinaryMessage, c.pending)
	}
	c.pending = c.pending[:0]
	c.packet = false
	c.mu.Unlock()
}

func (c *wsConn) Read(p []byte) (int, error) {
	for {
		if c.r == nil {
			_, r, err := c.NextReader()
			if err != nil {
				return 0, err
			}
			c.r = r
		}
		n, err := c.r.Read(p)
		if err == io.EOF {
			c.r = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (c *wsConn) Write(p []byte) (int, error) {
	if c.packet {
		if c.werr != nil {
			return 0, c.werr
		}
		c.pending = append(c.pending, p...)
		return len(p), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *wsConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}
