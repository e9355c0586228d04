package nixmsg

// Interop with the TypeScript SDK (issue 11 "done when"): the README's example program and the
// Go client exchange messages with a TypeScript SDK client through the harness server.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tsPeer is a running sdk/go/testdata/ts_peer.ts.
type tsPeer struct {
	cmd      *exec.Cmd
	received *events[map[string]any]
}

func startTSPeer(t *testing.T, url string, ep endpointInfo) *tsPeer {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	deno, err := denoPath(root)
	if err != nil {
		t.Fatal(err)
	}
	// permissions: not the shipped command: a TypeScript SDK client, not the server.
	cmd := exec.Command(deno, "run", "--quiet", "--allow-all", "--frozen", "--config",
		filepath.Join(root, "deno.json"), filepath.Join(root, "sdk/go/testdata/ts_peer.ts"), url, ep.ID, ep.Password)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &tsPeer{cmd: cmd, received: newEvents[map[string]any]()}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<16), 1<<22)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			if line["ready"] == true {
				close(ready)
				continue
			}
			p.received.push(line)
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatal("the TypeScript peer did not come online in 60 s")
	}
	return p
}

func TestInteropWithTypeScriptSDK(t *testing.T) {
	h := needServer(t)
	eg, ep := h.endpoint(t), h.endpoint(t)
	peer := startTSPeer(t, h.info.WsURL, ep)
	g := online(t, h.info.WsURL, eg, Options{Transport: TCP})

	sent, err := g.c.SendText(ctx15(t), Endpoint(ep.ID), "你好 <b>& from Go", WithMeta(map[string]any{"k": "v"}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := peer.received.waitFor(func(m map[string]any) bool { return m["id"] == sent.ID }, "the TS peer's copy", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if got["text"] != "你好 <b>& from Go" || got["from"] != eg.ID || got["meta"].(map[string]any)["k"] != "v" {
		t.Fatalf("the TS peer got %v", got)
	}
	echo, err := g.messages.waitFor(func(m Message) bool { return m.Text() == "echo: 你好 <b>& from Go" }, "the echo", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if echo.From != ep.ID || echo.Binary {
		t.Fatalf("echo %+v", echo)
	}

	data := []byte{0, 1, 2, 250, 255}
	bin, err := g.c.Send(ctx15(t), Endpoint(ep.ID), data, WithContentType("application/x-go"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := peer.received.waitFor(func(m map[string]any) bool { return m["id"] == bin.ID }, "the binary copy", waitTimeout); err != nil {
		t.Fatal(err)
	}
	back, err := g.messages.waitFor(func(m Message) bool { return m.Binary }, "the binary echo", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Body, data) || back.ContentType != "application/x-go" {
		t.Fatalf("binary echo %+v", back)
	}
}

func TestReadmeExampleTalksToTypeScriptSDK(t *testing.T) {
	h := needServer(t)
	eg, ep := h.endpoint(t), h.endpoint(t)
	peer := startTSPeer(t, h.info.WsURL, ep)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "./example")
	cmd.Env = append(os.Environ(), "NIXMSG_URL="+h.info.WsURL, "NIXMSG_ID="+eg.ID,
		"NIXMSG_PASSWORD="+eg.Password, "NIXMSG_TO="+ep.ID)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the example failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "answer from "+ep.ID+": echo: what time is it? <b>&") {
		t.Fatalf("the example printed:\n%s", out)
	}
	if _, err := peer.received.waitFor(func(m map[string]any) bool {
		return m["from"] == eg.ID && m["text"] == "what time is it? <b>&"
	}, "the example's message", waitTimeout); err != nil {
		t.Fatal(err)
	}
}
