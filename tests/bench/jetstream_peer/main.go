// Command jetstream_peer is the one load generator of tests/bench/jetstream_peer.ts. It drives a
// NixMsg server (sdk/go over raw TCP) or NATS JetStream (nats.go) through the same shapes and
// prints one JSON line of results:
//
//	(a) -shape a: 1 sender -> 1 receiver, -inflight sends outstanding, -msgs messages
//	(b) -shape b: -pairs senders -> -pairs receivers, -inflight each, for -seconds
//	(c) -shape c: 1 -> 1 paced at -rate messages/s for -seconds: latency percentiles
//
// A message counts when the receiver's ack is confirmed by the server (NixMsg: the `ack` request
// answered; JetStream: DoubleAck). NixMsg sends without receipts unless -receipt: JetStream has
// none, so both then do the same durable work (store, deliver, ack). Bodies are -body bytes of ASCII text that carry the run tag,
// the sender, a sequence number and the send time, so stale messages of earlier runs are ignored,
// duplicates and losses are counted, and latency uses one clock. Server CPU comes from
// /proc/<-pid>/stat over the measured window only (connections and warm-up excluded).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	nixmsg "git.asio.asia/nixevol/NixMsg/sdk/go"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// sendFunc publishes body from one sender to its receiver and returns once the server has
// accepted it durably (NixMsg `resp` ok; JetStream PubAck).
type sendFunc func(ctx context.Context, body []byte) error

// gotFunc is called once per received message after its ack is confirmed; deliveredAt is when
// the receiver's handler saw it.
type gotFunc func(body []byte, deliveredAt time.Time)

// system is one of the two servers under test.
type system interface {
	open(ctx context.Context, pairs int, got gotFunc) ([]sendFunc, error)
	close()
}

type result struct {
	Target      string  `json:"target"`
	Shape       string  `json:"shape"`
	Msgs        int64   `json:"msgs"`
	Seconds     float64 `json:"seconds"`
	Rate        float64 `json:"rate"`
	CPUMs       float64 `json:"cpu_ms"`
	CPUUsPerMsg float64 `json:"cpu_us_per_msg"`
	P50Ms       float64 `json:"p50_ms,omitempty"`
	P99Ms       float64 `json:"p99_ms,omitempty"`
	SendP50Ms   float64 `json:"send_p50_ms,omitempty"`
	DoneP50Ms   float64 `json:"done_p50_ms,omitempty"`
	DoneP99Ms   float64 `json:"done_p99_ms,omitempty"`
	Sent        int64   `json:"sent"`
	Lost        int64   `json:"lost"`
	Duplicated  int64   `json:"duplicated"`
	SendErrors  int64   `json:"send_errors"`
	LoadBefore  string  `json:"load_before"`
	LoadAfter   string  `json:"load_after"`
}

func main() {
	target := flag.String("target", "", "nixmsg or jetstream")
	url := flag.String("url", "", "server URL (nixmsg: mqtt://host:port; jetstream: nats://host:port)")
	password := flag.String("password", "", "NixMsg login password of s0..sN, r0..rN")
	shape := flag.String("shape", "a", "a, b or c")
	pairs := flag.Int("pairs", 1, "senders, each with its own receiver")
	inflight := flag.Int("inflight", 100, "sends outstanding per sender (a, b)")
	msgs := flag.Int("msgs", 5000, "messages (a)")
	seconds := flag.Float64("seconds", 15, "duration (b, c)")
	rate := flag.Float64("rate", 200, "messages per second (c)")
	bodySize := flag.Int("body", 1024, "body bytes")
	pid := flag.Int("pid", 0, "server process id, for CPU from /proc")
	ackPending := flag.Int("max-ack-pending", 0, "JetStream: the consumers' MaxAckPending (0: the server default, 1,000)")
	receipt := flag.Bool("receipt", false, "NixMsg: ask for receipts (the SDK default); JetStream has none")
	tag := flag.String("run", strconv.FormatInt(time.Now().UnixNano(), 36), "run tag")
	flag.Parse()

	var sys system
	switch *target {
	case "nixmsg":
		sys = &nixSystem{url: *url, password: *password, receipt: *receipt}
	case "jetstream":
		sys = &jsSystem{url: *url, maxAckPending: *ackPending}
	default:
		fail(fmt.Errorf("unknown -target %q", *target))
	}
	b := &bench{tag: *tag, bodySize: *bodySize, pid: *pid}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	senders, err := sys.open(ctx, *pairs, b.got)
	if err != nil {
		fail(err)
	}
	defer sys.close()

	var r result
	switch *shape {
	case "a":
		r, err = b.fixedCount(ctx, senders[0], *inflight, int64(*msgs))
	case "b":
		r, err = b.window(ctx, senders, *inflight, time.Duration(*seconds*float64(time.Second)))
	case "c":
		r, err = b.paced(ctx, senders[0], *rate, time.Duration(*seconds*float64(time.Second)))
	default:
		err = fmt.Errorf("unknown -shape %q", *shape)
	}
	if err != nil {
		fail(err)
	}
	r.Target, r.Shape = *target, *shape
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "jetstream_peer:", err)
	os.Exit(1)
}

// bench keeps the counters of one run.
type bench struct {
	tag      string
	bodySize int
	pid      int
	phase    atomic.Value // string: the phase tag of the messages being counted
	seq      atomic.Int64
	sent     atomic.Int64
	sendErr  atomic.Int64
	mu       sync.Mutex
	seen     map[string]bool
	unique   int64
	dups     int64
	lat      []time.Duration // send -> delivered
	done     []time.Duration // send -> ack confirmed
	answered []time.Duration // send -> the server's answer to the sender
	changed  chan struct{}
}

func (b *bench) startPhase(name string) {
	b.mu.Lock()
	b.phase.Store(b.tag + "." + name)
	b.seen = map[string]bool{}
	b.unique, b.dups = 0, 0
	b.lat, b.done, b.answered = nil, nil, nil
	b.changed = make(chan struct{}, 1)
	b.mu.Unlock()
	b.seq.Store(0)
	b.sent.Store(0)
	b.sendErr.Store(0)
}

func (b *bench) body(sender int) []byte {
	head := fmt.Sprintf("%s %d %d %d ", b.phase.Load().(string), sender, b.seq.Add(1),
		time.Now().UnixNano())
	if len(head) >= b.bodySize {
		return []byte(head)
	}
	return append([]byte(head), bytes.Repeat([]byte("x"), b.bodySize-len(head))...)
}

func (b *bench) got(body []byte, deliveredAt time.Time) {
	now := time.Now()
	fields := strings.SplitN(string(body[:min(len(body), 96)]), " ", 5)
	if len(fields) < 5 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if fields[0] != b.phase.Load().(string) {
		return // a message of an earlier phase or run
	}
	key := fields[1] + " " + fields[2]
	if b.seen[key] {
		b.dups++
		return
	}
	b.seen[key] = true
	b.unique++
	if ns, err := strconv.ParseInt(fields[3], 10, 64); err == nil {
		sent := time.Unix(0, ns)
		b.lat = append(b.lat, deliveredAt.Sub(sent))
		b.done = append(b.done, now.Sub(sent))
	}
	select {
	case b.changed <- struct{}{}:
	default:
	}
}

func (b *bench) received() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.unique
}

// waitReceived waits until n messages of this phase are acked, or the deadline.
func (b *bench) waitReceived(ctx context.Context, n int64, limit time.Duration) error {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for b.received() < n {
		select {
		case <-b.changed:
		case <-deadline.C:
			return fmt.Errorf("%d of %d messages received after %s", b.received(), n, limit)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (b *bench) sendOne(ctx context.Context, send sendFunc, sender int) bool {
	start := time.Now()
	if err := send(ctx, b.body(sender)); err != nil {
		b.sendErr.Add(1)
		return false
	}
	took := time.Since(start)
	b.mu.Lock()
	b.answered = append(b.answered, took)
	b.mu.Unlock()
	b.sent.Add(1)
	return true
}

// pump keeps inflight sends outstanding on each sender until more() says stop.
func (b *bench) pump(ctx context.Context, senders []sendFunc, inflight int, more func() bool) {
	var wg sync.WaitGroup
	for i, send := range senders {
		for range inflight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for more() {
					b.sendOne(ctx, send, i)
				}
			}()
		}
	}
	wg.Wait()
}

// warmUp sends a few messages per sender outside the measurement (JIT, caches, first pushes).
func (b *bench) warmUp(ctx context.Context, senders []sendFunc, inflight int) error {
	b.startPhase("warm")
	var left atomic.Int64
	left.Store(int64(len(senders) * inflight * 2))
	b.pump(ctx, senders, inflight, func() bool { return left.Add(-1) >= 0 })
	return b.waitReceived(ctx, b.sent.Load(), time.Minute)
}

func (b *bench) fixedCount(ctx context.Context, send sendFunc, inflight int, n int64) (result, error) {
	if err := b.warmUp(ctx, []sendFunc{send}, inflight); err != nil {
		return result{}, err
	}
	b.startPhase("a")
	m := b.measure()
	var issued atomic.Int64
	go b.pump(ctx, []sendFunc{send}, inflight, func() bool { return issued.Add(1) <= n })
	if err := b.waitReceived(ctx, n, 5*time.Minute); err != nil {
		return result{}, err
	}
	return b.finish(m, n), nil
}

func (b *bench) window(ctx context.Context, senders []sendFunc, inflight int, d time.Duration) (result, error) {
	if err := b.warmUp(ctx, senders, inflight); err != nil {
		return result{}, err
	}
	b.startPhase("b")
	var stop atomic.Bool
	pumped := make(chan struct{})
	m := b.measure()
	go func() {
		b.pump(ctx, senders, inflight, func() bool { return !stop.Load() })
		close(pumped)
	}()
	time.Sleep(d)
	r := b.finish(m, b.received())
	stop.Store(true)
	<-pumped
	// Everything accepted must arrive: a loss fails the run.
	if err := b.waitReceived(ctx, b.sent.Load(), time.Minute); err != nil {
		return result{}, err
	}
	r.Sent, r.Lost, r.Duplicated = b.sent.Load(), b.sent.Load()-b.received(), b.dups
	return r, nil
}

func (b *bench) paced(ctx context.Context, send sendFunc, rate float64, d time.Duration) (result, error) {
	if err := b.warmUp(ctx, []sendFunc{send}, 10); err != nil {
		return result{}, err
	}
	b.startPhase("c")
	n := int64(rate * d.Seconds())
	interval := time.Duration(float64(time.Second) / rate)
	m := b.measure()
	var wg sync.WaitGroup
	for k := range n {
		time.Sleep(time.Until(m.start.Add(time.Duration(k) * interval)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.sendOne(ctx, send, 0)
		}()
	}
	wg.Wait()
	if err := b.waitReceived(ctx, b.sent.Load(), time.Minute); err != nil {
		return result{}, err
	}
	r := b.finish(m, b.received())
	b.mu.Lock()
	r.P50Ms, r.P99Ms = percentiles(b.lat)
	r.DoneP50Ms, r.DoneP99Ms = percentiles(b.done)
	r.SendP50Ms, _ = percentiles(b.answered)
	b.mu.Unlock()
	return r, nil
}

type mark struct {
	start time.Time
	cpuMs float64
	load  string
}

func (b *bench) measure() mark {
	return mark{start: time.Now(), cpuMs: procCPUMs(b.pid), load: loadAvg()}
}

func (b *bench) finish(m mark, n int64) result {
	secs := time.Since(m.start).Seconds()
	cpu := procCPUMs(b.pid) - m.cpuMs
	b.mu.Lock()
	dups := b.dups
	b.mu.Unlock()
	r := result{
		Msgs: n, Seconds: secs, Rate: float64(n) / secs, CPUMs: cpu,
		Sent: b.sent.Load(), Duplicated: dups, SendErrors: b.sendErr.Load(),
		LoadBefore: m.load, LoadAfter: loadAvg(),
	}
	r.Lost = max(0, r.Sent-b.received())
	if n > 0 {
		r.CPUUsPerMsg = cpu * 1000 / float64(n)
	}
	return r
}

func percentiles(ds []time.Duration) (p50, p99 float64) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) float64 {
		return float64(s[min(len(s)-1, int(q*float64(len(s))))]) / 1e6
	}
	return at(0.50), at(0.99)
}

// procCPUMs is utime + stime of every thread of pid, in ms (USER_HZ is 100 on Linux).
func procCPUMs(pid int) float64 {
	if pid == 0 {
		return 0
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) * 10
}

func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

// nixSystem drives NixMsg: endpoints s<i> send to r<i>, each its own sdk/go client over TCP.
type nixSystem struct {
	url, password string
	receipt       bool
	clients       []*nixmsg.Client
}

func (n *nixSystem) connect(ctx context.Context, id string, manual bool) (*nixmsg.Client, error) {
	c, err := nixmsg.New(n.url, id, nixmsg.Password(n.password),
		nixmsg.Options{Transport: nixmsg.TCP, ManualAck: manual, QueueCapacity: 10_000})
	if err != nil {
		return nil, err
	}
	n.clients = append(n.clients, c)
	return c, nil
}

func (n *nixSystem) open(ctx context.Context, pairs int, got gotFunc) ([]sendFunc, error) {
	senders := make([]sendFunc, pairs)
	var all []*nixmsg.Client
	for i := range pairs {
		r, err := n.connect(ctx, fmt.Sprintf("r%d", i), true)
		if err != nil {
			return nil, err
		}
		r.OnMessage(func(m nixmsg.Message) error {
			at := time.Now()
			go func() {
				if r.Ack(ctx, m) == nil {
					got(m.Body, at)
				}
			}()
			return nil
		})
		s, err := n.connect(ctx, fmt.Sprintf("s%d", i), false)
		if err != nil {
			return nil, err
		}
		to := nixmsg.Endpoint(fmt.Sprintf("r%d", i))
		receipt := nixmsg.WithReceipt(n.receipt)
		senders[i] = func(ctx context.Context, body []byte) error {
			_, err := s.SendText(ctx, to, string(body), receipt)
			return err
		}
		all = append(all, r, s)
	}
	// Logins cost an argon2 hash each: a few at a time, as the server's pool runs them.
	sem := make(chan struct{}, 4)
	errs := make(chan error, len(all))
	for _, c := range all {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- c.Connect(ctx)
		}()
	}
	for range all {
		if err := <-errs; err != nil {
			return nil, fmt.Errorf("nixmsg connect: %w", err)
		}
	}
	return senders, nil
}

func (n *nixSystem) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range n.clients {
		_ = c.Close(ctx)
	}
}

// jsSystem drives JetStream: stream BENCH (file storage; the server runs sync_interval: always),
// subject bench.r<i>, a durable explicit-ack consumer per receiver, a connection per client.
type jsSystem struct {
	url           string
	maxAckPending int
	conns         []*nats.Conn
	subs          []jetstream.ConsumeContext
}

func (j *jsSystem) conn() (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(j.url)
	if err != nil {
		return nil, nil, err
	}
	j.conns = append(j.conns, nc)
	js, err := jetstream.New(nc)
	return nc, js, err
}

func (j *jsSystem) open(ctx context.Context, pairs int, got gotFunc) ([]sendFunc, error) {
	_, admin, err := j.conn()
	if err != nil {
		return nil, err
	}
	// A fresh stream per run: nothing of an earlier run is redelivered.
	if err := admin.DeleteStream(ctx, "BENCH"); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, err
	}
	stream, err := admin.CreateStream(ctx, jetstream.StreamConfig{
		Name: "BENCH", Subjects: []string{"bench.>"}, Storage: jetstream.FileStorage, Replicas: 1,
	})
	if err != nil {
		return nil, err
	}
	senders := make([]sendFunc, pairs)
	for i := range pairs {
		_, rjs, err := j.conn()
		if err != nil {
			return nil, err
		}
		cfg := jetstream.ConsumerConfig{
			Durable: fmt.Sprintf("r%d", i), FilterSubject: fmt.Sprintf("bench.r%d", i),
			AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: j.maxAckPending,
		}
		if _, err := stream.CreateOrUpdateConsumer(ctx, cfg); err != nil {
			return nil, err
		}
		cons, err := rjs.Consumer(ctx, "BENCH", cfg.Durable)
		if err != nil {
			return nil, err
		}
		sub, err := cons.Consume(func(m jetstream.Msg) {
			at := time.Now()
			go func() {
				if m.DoubleAck(ctx) == nil {
					got(m.Data(), at)
				}
			}()
		})
		if err != nil {
			return nil, err
		}
		j.subs = append(j.subs, sub)
		_, sjs, err := j.conn()
		if err != nil {
			return nil, err
		}
		subject := fmt.Sprintf("bench.r%d", i)
		senders[i] = func(ctx context.Context, body []byte) error {
			_, err := sjs.Publish(ctx, subject, body)
			return err
		}
	}
	return senders, nil
}

func (j *jsSystem) close() {
	for _, s := range j.subs {
		s.Stop()
	}
	for _, nc := range j.conns {
		nc.Close()
	}
}
