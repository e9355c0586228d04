package nixmsg

// Unit tests of the SDK's rules without a server: backoff with jitter, the dedup cache, send
// queue replay with the same id and fingerprint, the clock offset conversion and the local size
// checks (spec 9).

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestBackoffDoublesToCapWithJitter(t *testing.T) {
	b := NewBackoff()
	b.Random = func() float64 { return 0.5 } // no jitter
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30}
	for i, w := range want {
		if got := b.Next(); got != w*time.Second {
			t.Fatalf("delay %d: %v, want %v", i, got, w*time.Second)
		}
	}
	b.Reset()
	if got := b.Next(); got != time.Second {
		t.Fatalf("after reset %v", got)
	}
	b.Reset()
	b.Random = func() float64 { return 0 } // -30%
	if got := b.Next(); got != 700*time.Millisecond {
		t.Fatalf("lowest jitter %v", got)
	}
	b.Random = func() float64 { return 0.999999 } // +30%
	if got := b.Next(); got < 2599*time.Millisecond || got > 2600*time.Millisecond {
		t.Fatalf("highest jitter %v", got)
	}
	real := NewBackoff()
	for range 50 {
		real.Reset()
		if d := real.Next(); d < 700*time.Millisecond || d > 1300*time.Millisecond {
			t.Fatalf("first delay %v outside 1 s ±30%%", d)
		}
	}
}

func TestDedupCacheDropsOldest(t *testing.T) {
	d := newDedupCache[string](2)
	d.set("a", "delivered")
	d.set("b", "delivered")
	d.set("a", "acked") // an update keeps a's place
	if s, _ := d.get("a"); s != "acked" || d.size() != 2 {
		t.Fatalf("a=%q size=%d", s, d.size())
	}
	d.set("c", "queued")
	if _, ok := d.get("a"); ok {
		t.Fatal("the oldest key must go")
	}
	if _, ok := d.get("b"); !ok {
		t.Fatal("b must stay")
	}
	d.remove("b")
	if _, ok := d.get("b"); ok || d.size() != 1 {
		t.Fatal("remove failed")
	}
	if messageKey("x", "1") == messageKey("x1", "") {
		t.Fatal("message keys must not collide")
	}
}

func TestSendQueueReplaysSameIDAndFingerprint(t *testing.T) {
	body, _ := encodeTextBody("hello", "", defaultMaxBodyBytes)
	frame, err := buildSendFrame(Endpoint("b"), body, SendOptions{}, defaultLimits, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	q := newSendQueue(2, 1, func() float64 { return 0.5 })
	e, err := q.add(frame)
	if err != nil {
		t.Fatal(err)
	}
	rid := 0
	next := func() string { rid++; return string(rune('a' + rid)) }
	now := time.Now()
	first := q.take(now, next)
	if first != e || q.take(now, next) != nil {
		t.Fatal("one send in flight at most (maxInFlight 1)")
	}
	before, _ := marshalJSON(first.frame.withRid(""))
	q.requeueInFlight() // the connection dropped without a response
	second := q.take(now, next)
	if second != e || second.rid == "" {
		t.Fatal("the send must be taken again")
	}
	after, _ := marshalJSON(second.frame.withRid(""))
	if !bytes.Equal(before, after) || second.frame.ID != frame.ID {
		t.Fatalf("the resend changed: %s vs %s", before, after)
	}
	// rate_limited is retried with backoff, not a failure.
	if q.settle(second.rid, false, nil, &Error{Code: "rate_limited"}, now) != settleRetry {
		t.Fatal("rate_limited must retry")
	}
	if q.take(now, next) != nil {
		t.Fatal("a rate limited send waits for its delay")
	}
	due, ok := q.nextDueAt(now)
	if !ok || due.Sub(now) != time.Second {
		t.Fatalf("retry due in %v", due.Sub(now))
	}
	third := q.take(due, next)
	data, _ := json.Marshal(map[string]any{"id": frame.ID, "send_at_ms": 5, "state": "dispatched"})
	if q.settle(third.rid, true, data, nil, due) != settleDone {
		t.Fatal("settle")
	}
	out := <-e.done
	if out.err != nil || out.result.ID != frame.ID || out.result.SendAtMs != 5 {
		t.Fatalf("outcome %+v", out)
	}
	// Capacity, and closing.
	_, _ = q.add(frame)
	_, _ = q.add(frame)
	if _, err := q.add(frame); CodeOf(err) != CodeQueueFull {
		t.Fatalf("want queue_full, got %v", err)
	}
	q.close(&Error{Code: CodeClosed})
	if _, err := q.add(frame); !errors.Is(err, ErrClosed) {
		t.Fatalf("want closed, got %v", err)
	}
}

func TestSendAtConvertedWithClockOffsetOnce(t *testing.T) {
	body, _ := encodeTextBody("x", "", defaultMaxBodyBytes)
	at := time.UnixMilli(1_700_000_000_000)
	f, err := buildSendFrame(Endpoint("b"), body, SendOptions{SendAt: at}, defaultLimits, 1500*time.Millisecond, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if f.SendAtMs == nil || *f.SendAtMs != 1_700_000_001_500 {
		t.Fatalf("send_at_ms %v", f.SendAtMs)
	}
	d := time.Duration(0)
	if _, err := buildSendFrame(Endpoint("b"), body, SendOptions{SendAt: at, Delay: &d}, defaultLimits, 0, time.Now()); CodeOf(err) != CodeBadRequest {
		t.Fatalf("SendAt with Delay: %v", err)
	}
	ttl := SendOptions{TTL: 1500 * time.Millisecond}
	f, _ = buildSendFrame(Endpoint("b"), body, ttl, defaultLimits, 0, time.Now())
	if f.Offline == nil || !f.Offline.Keep || *f.Offline.TTLSeconds != 2 {
		t.Fatalf("a TTL alone keeps, rounded up: %+v", f.Offline)
	}
}

func TestLocalSizeChecks(t *testing.T) {
	if _, err := encodeBytesBody(make([]byte, 262145), "", defaultMaxBodyBytes); CodeOf(err) != CodeBodyTooLarge {
		t.Fatalf("bytes: %v", err)
	}
	if _, err := encodeTextBody(strings.Repeat("é", 131073), "", defaultMaxBodyBytes); CodeOf(err) != CodeBodyTooLarge {
		t.Fatalf("text is measured in UTF-8 bytes: %v", err)
	}
	if _, err := encodeTextBody("\xff", "", defaultMaxBodyBytes); CodeOf(err) != CodeBadRequest {
		t.Fatalf("invalid UTF-8: %v", err)
	}
	body, err := encodeTextBody(strings.Repeat("\x01", 262144), "", defaultMaxBodyBytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buildSendFrame(Endpoint("b"), body, SendOptions{}, defaultLimits, 0, time.Now()); CodeOf(err) != CodeFrameTooLarge {
		t.Fatalf("escaped frame: %v", err)
	}
	body, _ = encodeTextBody("x", "", defaultMaxBodyBytes)
	meta := map[string]any{"k": strings.Repeat("m", 4096)}
	if _, err := buildSendFrame(Endpoint("b"), body, SendOptions{Meta: meta}, defaultLimits, 0, time.Now()); CodeOf(err) != CodeMetaTooLarge {
		t.Fatalf("meta: %v", err)
	}
	exact, err := encodeBytesBody(make([]byte, 262144), "", defaultMaxBodyBytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buildSendFrame(Endpoint("b"), exact, SendOptions{}, defaultLimits, 0, time.Now()); err != nil {
		t.Fatalf("exactly 256 KiB must pass: %v", err)
	}
}

func TestJSONNotHTMLEscaped(t *testing.T) {
	data, err := marshalJSON(map[string]string{"s": "<b>&你好"})
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"s":"<b>&你好"}` {
		t.Fatalf("%s", data)
	}
}

func TestURLs(t *testing.T) {
	cases := []struct{ in, ws, tcp, reg string }{
		{"ws://h:1/mqtt", "ws://h:1/mqtt", "mqtt://h:1", "http://h:1/api/client/register"},
		{"https://h/base/", "wss://h/base/mqtt", "mqtts://h", "https://h/base/api/client/register"},
		{"mqtt://h:2", "ws://h:2/mqtt", "mqtt://h:2", "http://h:2/api/client/register"},
	}
	for _, c := range cases {
		ws, _ := ConnectionURL(c.in, WebSocket)
		tcp, _ := ConnectionURL(c.in, TCP)
		reg, _ := RegisterURL(c.in)
		if ws != c.ws || tcp != c.tcp || reg != c.reg {
			t.Fatalf("%s: %s %s %s", c.in, ws, tcp, reg)
		}
	}
	_, err := ConnectionURL("ftp://h", WebSocket)
	wantSDKError(t, err, CodeBadRequest) // ftp must fail
}

func TestUUIDv7(t *testing.T) {
	id := newUUIDv7(time.UnixMilli(0x0123456789ab))
	if len(id) != 36 || !strings.HasPrefix(id, "01234567-89ab-7") || !strings.ContainsAny(id[19:20], "89ab") {
		t.Fatalf("uuid %s", id)
	}
}

// The README's example is example/main.go, which TestReadmeExampleTalksToTypeScriptSDK runs.
func TestReadmeExampleIsExampleMain(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile("example/main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```go\n")
	block, _, _ = strings.Cut(block, "```\n")
	_, code, found := strings.Cut(string(main), "package main\n")
	if !ok || !found || block != "package main\n"+code {
		t.Fatal("the Go block of README.md differs from example/main.go")
	}
}
