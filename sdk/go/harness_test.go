package nixmsg

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// harness runs sdk/conformance/harness.ts (a fresh real server) and talks to it over its
// JSON-line stdin/stdout protocol (sdk/conformance/README.md).
type harness struct {
	info struct {
		WsURL   string `json:"ws_url"`
		TCPURL  string `json:"tcp_url"`
		HTTPURL string `json:"http_url"`
		LogFile string `json:"log_file"`
	}
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
	mu    sync.Mutex
	seq   atomic.Int64
}

// repoRoot finds the directory holding sdk/conformance/harness.ts.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for range 10 {
		if _, err := os.Stat(filepath.Join(dir, "sdk/conformance/harness.ts")); err == nil {
			return dir, nil
		}
		dir = filepath.Dir(dir)
	}
	return "", fmt.Errorf("cannot find the repository root")
}

// denoPath: $DENO, deno on PATH, or the repository's .tools copy.
func denoPath(root string) (string, error) {
	if d := os.Getenv("DENO"); d != "" {
		return d, nil
	}
	if p, err := exec.LookPath("deno"); err == nil {
		return p, nil
	}
	local := filepath.Join(root, ".tools/node_modules/.bin/deno")
	if _, err := os.Stat(local); err == nil {
		return local, nil
	}
	return "", fmt.Errorf("deno not found: set DENO or put deno on PATH")
}

func startHarness(extra ...string) (*harness, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	deno, err := denoPath(root)
	if err != nil {
		return nil, err
	}
	// permissions: not the shipped command: the conformance harness spawns the server (with the shipped set) and toxiproxy.
	args := append([]string{
		"run", "--quiet", "--allow-all", "--frozen", "--config", filepath.Join(root, "deno.json"),
		filepath.Join(root, "sdk/conformance/harness.ts"), "--prefix", fmt.Sprintf("go%dx", os.Getpid()),
	}, extra...)
	cmd := exec.Command(deno, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &harness{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(stdout)}
	h.lines.Buffer(make([]byte, 1<<16), 1<<22)
	first := make(chan error, 1)
	go func() {
		if !h.lines.Scan() {
			first <- fmt.Errorf("the harness exited before it was ready: %v", h.lines.Err())
			return
		}
		first <- json.Unmarshal(h.lines.Bytes(), &h.info)
	}()
	select {
	case err = <-first:
	case <-time.After(90 * time.Second):
		err = fmt.Errorf("the harness did not start in 90 s")
	}
	if err != nil {
		h.stop()
		return nil, err
	}
	return h, nil
}

// address is "127.0.0.1:port" of the server.
func (h *harness) address() string { return strings.TrimPrefix(h.info.HTTPURL, "http://") }

// command sends one command and returns its data.
func (h *harness) command(cmd map[string]any) (json.RawMessage, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	line, _ := json.Marshal(cmd)
	if _, err := h.stdin.Write(append(line, '\n')); err != nil {
		return nil, err
	}
	if !h.lines.Scan() {
		return nil, fmt.Errorf("the harness closed its output")
	}
	var reply struct {
		Ok    bool            `json:"ok"`
		Data  json.RawMessage `json:"data"`
		Error string          `json:"error"`
	}
	if err := json.Unmarshal(h.lines.Bytes(), &reply); err != nil {
		return nil, err
	}
	if !reply.Ok {
		return nil, fmt.Errorf("harness command %v failed: %s", cmd["cmd"], reply.Error)
	}
	return reply.Data, nil
}

// endpointInfo is an endpoint with its login password.
type endpointInfo struct {
	ID       string `json:"id"`
	Password string `json:"password"`
}

// endpoint creates a new endpoint with a unique id.
func (h *harness) endpoint(t testing.TB) endpointInfo {
	t.Helper()
	id := fmt.Sprintf("go%dn%d", os.Getpid(), h.seq.Add(1))
	data, err := h.command(map[string]any{"cmd": "endpoint", "id": id})
	if err != nil {
		t.Fatal(err)
	}
	var ep endpointInfo
	if err := json.Unmarshal(data, &ep); err != nil {
		t.Fatal(err)
	}
	return ep
}

// registration sets the registration switch and code.
func (h *harness) registration(t testing.TB, enabled bool, code string) {
	t.Helper()
	cmd := map[string]any{"cmd": "registration", "enabled": enabled}
	if code != "" {
		cmd["code"] = code
	}
	if _, err := h.command(cmd); err != nil {
		t.Fatal(err)
	}
}

// stop closes stdin, which stops the server and removes its directory.
func (h *harness) stop() {
	_ = h.stdin.Close()
	done := make(chan struct{})
	go func() { _ = h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = h.cmd.Process.Kill()
		<-done
	}
}

// admin makes an admin API call through the harness and returns the HTTP status.
func (h *harness) admin(t testing.TB, method, path string, body any) int {
	t.Helper()
	cmd := map[string]any{"cmd": "admin", "method": method, "path": path}
	if body != nil {
		cmd["body"] = body
	}
	data, err := h.command(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Status int `json:"status"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r.Status
}

// namedEndpoint creates a new endpoint with a display name.
func (h *harness) namedEndpoint(t testing.TB, name string) endpointInfo {
	t.Helper()
	id := fmt.Sprintf("go%dn%d", os.Getpid(), h.seq.Add(1))
	data, err := h.command(map[string]any{"cmd": "endpoint", "id": id, "name": name})
	if err != nil {
		t.Fatal(err)
	}
	var ep endpointInfo
	if err := json.Unmarshal(data, &ep); err != nil {
		t.Fatal(err)
	}
	return ep
}
