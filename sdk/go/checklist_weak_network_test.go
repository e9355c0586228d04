package nixmsg

// Checklist item 16 (spec 13 弱网, sdk/conformance/checklist.md): through toxiproxy, kept messages
// all arrive, the application sees each exactly once, and every receipt arrives once. Mirrors
// sdk/ts/test/integration/checklist_weak_network.test.ts step by step, with the harness's
// toxiproxy commands only.

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"
)

const (
	weakN         = 100
	weakBatch     = 10
	weakKeepAlive = 10 * time.Second // the SDK's smallest keep-alive
	weakStep      = 30 * time.Second
)

// toxiproxyInfo is the answer to `toxiproxy_start`.
type toxiproxyInfo struct {
	Name   string `json:"name"`
	WsURL  string `json:"ws_url"`
	TCPURL string `json:"tcp_url"`
}

func (h *harness) toxiproxyStart(t *testing.T) toxiproxyInfo {
	t.Helper()
	data, err := h.command(map[string]any{"cmd": "toxiproxy_start"})
	if err != nil {
		t.Fatal(err)
	}
	var p toxiproxyInfo
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// toxicAdd adds a toxic (`toxic_add`) and returns its name.
func (h *harness) toxicAdd(t *testing.T, proxy, typ, stream string, attributes map[string]int) string {
	t.Helper()
	data, err := h.command(map[string]any{
		"cmd": "toxic_add", "proxy": proxy, "type": typ, "stream": stream, "attributes": attributes,
	})
	if err != nil {
		t.Fatal(err)
	}
	var toxic struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(data, &toxic); err != nil || toxic.Name == "" {
		t.Fatalf("toxic_add answered %s (%v)", data, err)
	}
	return toxic.Name
}

// toxicRemove removes the named toxics, or every toxic of the proxy when names is empty.
func (h *harness) toxicRemove(t *testing.T, proxy string, names ...string) {
	t.Helper()
	if len(names) == 0 {
		if _, err := h.command(map[string]any{"cmd": "toxic_remove", "proxy": proxy}); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, name := range names {
		if _, err := h.command(map[string]any{"cmd": "toxic_remove", "proxy": proxy, "name": name}); err != nil {
			t.Fatal(err)
		}
	}
}

// adminJSON makes an admin API call and decodes its body into out; it returns the HTTP status.
func (h *harness) adminJSON(t *testing.T, method, path string, out any) int {
	t.Helper()
	data, err := h.command(map[string]any{"cmd": "admin", "method": method, "path": path})
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status == 200 {
		if err := json.Unmarshal(r.Body, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return r.Status
}

// waitAll waits until cond holds for everything recorded so far (bounded by timeout).
func waitAll[T any](e *events[T], cond func([]T) bool, what string, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		ok := cond(e.items)
		ch := e.changed
		e.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-deadline.C:
			return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
		}
	}
}

func isReconnecting(e ConnectionEvent) bool { return e.State == StateReconnecting }

func TestChecklist16WeakNetworkKeptMessagesExactlyOnce(t *testing.T) {
	h := needServer(t)
	ea, eb := h.endpoint(t), h.endpoint(t)
	// 1. A over raw TCP through PA, B over WebSocket through PB.
	pa, pb := h.toxiproxyStart(t), h.toxiproxyStart(t)
	if !regexp.MustCompile(`^mqtt://127\.0\.0\.1:\d+$`).MatchString(pa.TCPURL) {
		t.Fatalf("PA tcp_url %q", pa.TCPURL)
	}
	if !regexp.MustCompile(`^ws://127\.0\.0\.1:\d+/mqtt$`).MatchString(pb.WsURL) {
		t.Fatalf("PB ws_url %q", pb.WsURL)
	}
	// Registered before the clients' Close: a failed run must not leave a toxic under them.
	t.Cleanup(func() {
		_, _ = h.command(map[string]any{"cmd": "toxic_remove", "proxy": pa.Name})
		_, _ = h.command(map[string]any{"cmd": "toxic_remove", "proxy": pb.Name})
	})
	a := online(t, pa.TCPURL, ea, Options{Transport: TCP})
	b := online(t, pb.WsURL, eb, Options{KeepAlive: weakKeepAlive})
	// b.messages records every run of B's message callback, a.receipts every receipt callback.

	// 2. Latency with jitter on every stream, to the end.
	for _, p := range []string{pa.Name, pb.Name} {
		for _, stream := range []string{"upstream", "downstream"} {
			h.toxicAdd(t, p, "latency", stream, map[string]int{"latency": 40, "jitter": 30})
		}
	}

	// 3. Ten batches of ten kept messages, each with its disruption.
	sendCtx, cancelSends := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancelSends)
	type outcome struct {
		r   SendResult
		err error
	}
	results := make([]outcome, weakN)
	var sending sync.WaitGroup
	sent := 0
	sendBatch := func() {
		for range weakBatch {
			n := sent
			sent++
			sending.Add(1)
			go func() {
				defer sending.Done()
				r, err := a.c.SendText(sendCtx, Endpoint(eb.ID), fmt.Sprintf("w-%d", n),
					WithKeep(), WithTTL(600*time.Second), WithMeta(map[string]any{"n": n}))
				results[n] = outcome{r, err}
			}()
		}
	}
	distinct := func(ms []Message) int {
		bodies := map[string]bool{}
		for _, m := range ms {
			bodies[m.Text()] = true
		}
		return len(bodies)
	}
	allSoFar := func() {
		t.Helper()
		want := sent
		err := waitAll(b.messages, func(ms []Message) bool { return distinct(ms) >= want },
			fmt.Sprintf("B holds %d bodies", want), weakStep)
		if err != nil {
			t.Fatalf("%v (has %d)", err, distinct(b.messages.all()))
		}
	}
	// nextReconnect waits for the client's `reconnecting` after the n-th.
	nextReconnect := func(tr *tracked, n int, timeout time.Duration, what string) {
		t.Helper()
		if _, err := tr.states.waitCount(n+1, isReconnecting, what, timeout); err != nil {
			t.Fatal(err)
		}
	}
	sliced := map[string]int{"average_size": 16, "size_variation": 8, "delay": 500}
	steps := map[int]func(){
		2: func() {
			up := h.toxicAdd(t, pb.Name, "slicer", "upstream", sliced)
			down := h.toxicAdd(t, pb.Name, "slicer", "downstream", sliced)
			slow := h.toxicAdd(t, pa.Name, "bandwidth", "upstream", map[string]int{"rate": 16})
			sendBatch()
			allSoFar()
			h.toxicRemove(t, pb.Name, up, down)
			h.toxicRemove(t, pa.Name, slow)
		},
		3: func() {
			late := h.toxicAdd(t, pb.Name, "latency", "upstream", map[string]int{"latency": 3000})
			sendBatch()
			// How long the acks are held back, past the 2 s ack timeout; not a synchronization.
			time.Sleep(3 * time.Second)
			h.toxicRemove(t, pb.Name, late)
			allSoFar()
		},
		4: func() {
			n := b.states.count(isReconnecting)
			lost := h.toxicAdd(t, pb.Name, "timeout", "upstream", map[string]int{"timeout": 300})
			sendBatch()
			nextReconnect(b, n, weakStep, "B reconnecting after its acks were lost")
			h.toxicRemove(t, pb.Name, lost)
			allSoFar()
		},
		5: func() {
			n := a.states.count(isReconnecting)
			lost := h.toxicAdd(t, pa.Name, "timeout", "downstream", map[string]int{"timeout": 300})
			sendBatch()
			nextReconnect(a, n, weakStep, "A reconnecting after its responses were lost")
			h.toxicRemove(t, pa.Name, lost)
			allSoFar()
		},
		6: func() {
			n := a.states.count(isReconnecting)
			reset := h.toxicAdd(t, pa.Name, "reset_peer", "upstream", map[string]int{"timeout": 0})
			sendBatch()
			nextReconnect(a, n, weakStep, "A reconnecting after reset_peer")
			h.toxicRemove(t, pa.Name, reset)
			allSoFar()
		},
		7: func() {
			n := b.states.count(isReconnecting)
			limit := h.toxicAdd(t, pb.Name, "limit_data", "downstream", map[string]int{"bytes": 1500})
			sendBatch()
			nextReconnect(b, n, weakStep, "B reconnecting after limit_data")
			h.toxicRemove(t, pb.Name, limit)
			allSoFar()
		},
		8: func() {
			n := b.states.count(isReconnecting)
			up := h.toxicAdd(t, pb.Name, "timeout", "upstream", map[string]int{"timeout": 0})
			down := h.toxicAdd(t, pb.Name, "timeout", "downstream", map[string]int{"timeout": 0})
			sendBatch()
			bound := weakKeepAlive*3/2 + 15*time.Second
			nextReconnect(b, n, bound, "B's keep-alive ending the half-open connection")
			h.toxicRemove(t, pb.Name, up, down)
			allSoFar()
		},
		9: func() {
			h.toxicRemove(t, pa.Name)
			h.toxicRemove(t, pb.Name)
			sendBatch()
			allSoFar()
		},
	}
	for batch := 1; batch <= weakN/weakBatch; batch++ {
		if step, ok := steps[batch]; ok {
			step()
		} else {
			sendBatch()
			allSoFar()
		}
	}

	// 4. Every send answered, A holds N receipts; then a window for late duplicates.
	answered := make(chan struct{})
	go func() { sending.Wait(); close(answered) }()
	select {
	case <-answered:
	case <-time.After(60 * time.Second):
		t.Fatal("not every send was answered within 60 s")
	}
	if _, err := a.receipts.waitCount(weakN, nil, "receipts", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the window in which a late duplicate would show up

	// 5. Exactly once at the application, one accepted receipt per message.
	ids := map[string]bool{}
	for i, o := range results {
		if o.err != nil {
			t.Fatalf("send w-%d: %v", i, o.err)
		}
		ids[o.r.ID] = true
	}
	if len(ids) != weakN {
		t.Fatalf("%d distinct message ids, want %d", len(ids), weakN)
	}
	seen := map[string]int{} // body -> callback runs
	idOfBody := map[string]string{}
	for _, m := range b.messages.all() {
		seen[m.Text()]++
		idOfBody[m.Text()] = m.ID
	}
	for i, o := range results {
		if got := idOfBody[fmt.Sprintf("w-%d", i)]; got != o.r.ID {
			t.Fatalf("id of w-%d: B got %q, the send returned %q", i, got, o.r.ID)
		}
	}
	if len(seen) != weakN {
		t.Fatalf("B's application saw %d bodies, want %d", len(seen), weakN)
	}
	for body, n := range seen {
		if n != 1 {
			t.Errorf("B's application saw %s %d times", body, n)
		}
	}
	receipts := a.receipts.all()
	if len(receipts) != weakN {
		t.Fatalf("%d receipt callbacks, want %d", len(receipts), weakN)
	}
	receiptIDs := map[string]bool{}
	receiptFor := map[string]bool{}
	for _, r := range receipts {
		receiptIDs[r.ReceiptID] = true
		receiptFor[r.ID] = true
		if r.State != "accepted" || r.EndpointID != eb.ID {
			t.Fatalf("receipt %+v", r)
		}
	}
	if len(receiptIDs) != weakN {
		t.Fatalf("%d distinct receipts, want %d", len(receiptIDs), weakN)
	}
	for id := range ids {
		if !receiptFor[id] {
			t.Fatalf("no receipt for %s", id)
		}
	}
	ra, rb := a.states.count(isReconnecting), b.states.count(isReconnecting)
	if ra < 2 || rb < 2 {
		t.Fatalf("reconnects: A %d, B %d; want at least 2 each", ra, rb)
	}
	if n := b.revoked.count(nil); n != 0 {
		t.Fatalf("%d messages revoked at B", n)
	}

	// 6. The server agrees, and it pushed some messages more than once.
	var list struct {
		Data struct {
			Items []struct {
				Seq    int64          `json:"seq"`
				ID     string         `json:"id"`
				State  string         `json:"state"`
				Counts map[string]int `json:"counts"`
			} `json:"items"`
		} `json:"data"`
	}
	if st := h.adminJSON(t, "GET", "/api/admin/messages?sender="+ea.ID+"&limit=200", &list); st != 200 {
		t.Fatalf("message list: HTTP %d", st)
	}
	if len(list.Data.Items) != weakN {
		t.Fatalf("%d records, want %d", len(list.Data.Items), weakN)
	}
	records := map[string]bool{}
	attempts := 0
	for _, m := range list.Data.Items {
		records[m.ID] = true
		if !ids[m.ID] || m.State != "completed" || m.Counts["accepted"] != 1 {
			t.Fatalf("record %s: state %s, counts %v", m.ID, m.State, m.Counts)
		}
		var detail struct {
			Data struct {
				Items []struct {
					Attempts int `json:"attempts"`
				} `json:"items"`
			} `json:"data"`
		}
		if st := h.adminJSON(t, "GET", fmt.Sprintf("/api/admin/messages/%d", m.Seq), &detail); st != 200 {
			t.Fatalf("message %d: HTTP %d", m.Seq, st)
		}
		for _, d := range detail.Data.Items {
			attempts += d.Attempts
		}
	}
	if len(records) != weakN {
		t.Fatalf("%d distinct records, want %d", len(records), weakN)
	}
	t.Logf("%d sent, %d delivered once to the application, %d server pushes, %d receipts; reconnects A %d, B %d",
		weakN, len(seen), attempts, len(receipts), ra, rb)
	if attempts <= weakN {
		t.Fatalf("the server pushed %d times for %d messages, want more (it pushed again)", attempts, weakN)
	}
}
