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

	"github.com/gorilla/websocket"
)

// dialServer opens one network connection for MQTT (spec 9 "连接" step 1): WebSocket with the
// subprotocol `mqtt` for ws/wss, raw TCP for mqtt/mqtts. The returned conn is safe for the
// concurrent writes of paho and sends each MQTT packet in one write (packetConn).
func dialServer(ctx context.Context, u *url.URL, tlsConfig *tls.Config) (net.Conn, error) {
	switch u.Scheme {
	case "mqtt":
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", u.Host)
		if err != nil {
			return nil, err
		}
		return &packetConn{Conn: c}, nil // Go sockets have TCP_NODELAY on by default
	case "mqtts":
		d := tls.Dialer{Config: tlsConfig}
		c, err := d.DialContext(ctx, "tcp", u.Host)
		if err != nil {
			return nil, err
		}
		return &packetConn{Conn: c}, nil
	case "ws", "wss":
		d := websocket.Dialer{
			Subprotocols:     []string{"mqtt"},
			TLSClientConfig:  tlsConfig,
			HandshakeTimeout: 30 * time.Second,
		}
		ws, _, err := d.DialContext(ctx, u.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("websocket connection failed: %w", err)
		}
		return &packetConn{Conn: &wsConn{Conn: ws}}, nil
	}
	return nil, fmt.Errorf("nixmsg: unsupported connection scheme %q", u.Scheme)
}

// packetConn makes a connection safe for paho's concurrent writers and sends each MQTT packet in
// ONE write. paho locks the conn (sync.Locker) around every packet and writes it in pieces
// (fixed header, then the rest); the pieces are joined and written at Unlock. Over TCP that is
// one segment per packet instead of several; over WebSocket one message per packet, which is
// what the server expects to handle cheaply (as the TypeScript SDK's transport does).
type packetConn struct {
	net.Conn
	mu      sync.Mutex
	packet  bool   // inside Lock … Unlock
	pending []byte // the pieces of the packet being written
	werr    error  // the first failed packet write; later ones fail too
}

// Lock starts a packet.
func (c *packetConn) Lock() {
	c.mu.Lock()
	c.packet = true
}

// Unlock writes the packet's pieces at once.
func (c *packetConn) Unlock() {
	if len(c.pending) > 0 && c.werr == nil {
		_, c.werr = c.Conn.Write(c.pending)
	}
	c.pending = c.pending[:0]
	c.packet = false
	c.mu.Unlock()
}

func (c *packetConn) Write(p []byte) (int, error) {
	if c.packet {
		if c.werr != nil {
			return 0, c.werr
		}
		c.pending = append(c.pending, p...)
		return len(p), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.Write(p)
}

// wsConn carries an MQTT byte stream over binary WebSocket messages: each Write is one message,
// reads continue across message boundaries.
type wsConn struct {
	*websocket.Conn
	r io.Reader
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
