package nixmsg

import (
	"fmt"
	"net/url"
	"strings"
)

// Transport says how the SDK reaches the server (spec 9: WebSocket unless TCP is asked for).
type Transport string

const (
	// WebSocket connects to `<base>/mqtt` with the subprotocol `mqtt` (the default).
	WebSocket Transport = "websocket"
	// TCP connects with raw MQTT over TCP (`mqtt://host:port`, `mqtts://` with TLS).
	TCP Transport = "tcp"
)

var secureSchemes = map[string]bool{
	"wss": true, "https": true, "mqtts": true, "ws": false, "http": false, "mqtt": false,
}

func parseServerURL(raw string) (*url.URL, bool, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, false, &Error{Code: CodeBadRequest, Message: fmt.Sprintf("Cannot parse server URL %q", raw), Err: err}
	}
	secure, ok := secureSchemes[strings.ToLower(u.Scheme)]
	if !ok {
		return nil, false, newError(CodeBadRequest, fmt.Sprintf("Unsupported server URL scheme %q", u.Scheme))
	}
	return u, secure, nil
}

// basePath is the path in front of `/mqtt`, without a trailing slash.
func basePath(u *url.URL) string {
	p := strings.TrimRight(u.Path, "/")
	return strings.TrimSuffix(p, "/mqtt")
}

// ConnectionURL returns the URL the SDK connects to. ws, wss, http, https, mqtt and mqtts all
// name the same server; the transport decides the scheme (spec 9 step 1).
//
//	nixmsg.ConnectionURL("https://relay.example:7443", nixmsg.WebSocket) // "wss://relay.example:7443/mqtt"
//	nixmsg.ConnectionURL("wss://relay.example:7443/mqtt", nixmsg.TCP)    // "mqtts://relay.example:7443"
func ConnectionURL(raw string, transport Transport) (string, error) {
	u, secure, err := parseServerURL(raw)
	if err != nil {
		return "", err
	}
	if transport == TCP {
		if secure {
			return "mqtts://" + u.Host, nil
		}
		return "mqtt://" + u.Host, nil
	}
	scheme := "ws"
	if secure {
		scheme = "wss"
	}
	q := ""
	if u.RawQuery != "" {
		q = "?" + u.RawQuery
	}
	return scheme + "://" + u.Host + basePath(u) + "/mqtt" + q, nil
}

// RegisterURL returns the registration endpoint for a connection URL (spec 6.9): wss and mqtts
// map to https, ws and mqtt to http, the path becomes /api/client/register.
//
//	nixmsg.RegisterURL("mqtt://10.0.0.5:7443") // "http://10.0.0.5:7443/api/client/register"
func RegisterURL(raw string) (string, error) {
	u, secure, err := parseServerURL(raw)
	if err != nil {
		return "", err
	}
	scheme := "http"
	if secure {
		scheme = "https"
	}
	base := ""
	if !strings.HasPrefix(strings.ToLower(u.Scheme), "mqtt") {
		base = basePath(u)
	}
	return scheme + "://" + u.Host + base + "/api/client/register", nil
}
