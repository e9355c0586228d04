package nixmsg

// Checklist items 1, 13 and 15 (sdk/conformance/checklist.md, spec 9 接入清单): login, password
// change, session tokens.

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// noReconnectWindow is longer than the first reconnect delay (1 s + 30% jitter).
const noReconnectWindow = 2500 * time.Millisecond

func TestChecklist01LoginAndHandshakeParameters(t *testing.T) {
	h := needServer(t)
	ep := h.endpoint(t)
	a := online(t, h.info.WsURL, ep, Options{})
	info, ok := a.c.ServerInfo()
	if !ok {
		t.Fatal("no server info")
	}
	if info.MaxBodyBytes != 262144 || info.MaxMetaBytes != 4096 || info.MaxFrameBytes != 786432 {
		t.Fatalf("limits %+v", info)
	}
	if info.AckTimeoutSeconds != 2 {
		t.Fatalf("ack_timeout_seconds %d, want the harness's 2", info.AckTimeoutSeconds)
	}
	if info.MaxTTLSeconds <= 0 || info.MaxScheduleSeconds <= 0 {
		t.Fatalf("limits %+v", info)
	}
	if !regexp.MustCompile(`^\d+\.\d+\.\d+`).MatchString(info.ServerVersion) {
		t.Fatalf("server_version %q", info.ServerVersion)
	}
	if off := a.c.ClockOffset(); off > time.Second || off < -time.Second {
		t.Fatalf("clock offset %v", off)
	}
	var states []ConnectionState
	for _, s := range a.states.all() {
		states = append(states, s.State)
	}
	if len(states) != 2 || states[0] != StateConnecting || states[1] != StateOnline {
		t.Fatalf("states %v, want [connecting online]", states)
	}
	tokens := a.sessions.all()
	if len(tokens) != 1 || !strings.HasPrefix(tokens[0], "nst_") {
		t.Fatalf("session tokens %d (%v)", len(tokens), len(tokens) == 1 && strings.HasPrefix(tokens[0], "nst_"))
	}
	if a.c.SessionToken() != tokens[0] {
		t.Fatal("SessionToken differs from the OnSession token")
	}
	if self, err := a.c.Self(ctx15(t)); err != nil || self.ID != ep.ID {
		t.Fatalf("self %q %v", self.ID, err)
	}

	// Raw TCP only when asked for; the same handshake.
	tcp := online(t, h.info.WsURL, ep, Options{Transport: TCP})
	if info, _ := tcp.c.ServerInfo(); info.MaxFrameBytes != 786432 {
		t.Fatalf("TCP limits %+v", info)
	}
	if tcp.c.link.o.url.Scheme != "mqtt" {
		t.Fatalf("TCP client connected with %s", tcp.c.link.o.url)
	}
	if self, err := tcp.c.Self(ctx15(t)); err != nil || self.ID != ep.ID {
		t.Fatalf("self over TCP %q %v", self.ID, err)
	}
}
