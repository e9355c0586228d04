package nixmsg

// The README's "Installing" (issue 27 item 5): a new module outside the repository requires the
// SDK with a replace directive pointing at this checkout, exactly as the README's shell block
// says, and the README's example runs there against a real server, waiting for its own answer.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeBlock returns the first fenced block of lang after the heading.
func readmeBlock(t *testing.T, heading, lang string) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q", heading)
	}
	m := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```\n").FindStringSubmatch(after)
	if m == nil {
		t.Fatalf("README.md has no %s block after %q", lang, heading)
	}
	return m[1]
}

func TestReadmeInstallsIntoAScratchModule(t *testing.T) {
	h := needServer(t)
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	if strings.HasPrefix(scratch, root) {
		t.Fatalf("the scratch module %s is inside the repository", scratch)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	// The module's own settings (GOFLAGS=-mod=readonly from run_tests.sh) are not the user's.
	env := append(os.Environ(), "GOFLAGS=-buildvcs=false", "GOWORK=off")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = scratch, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	run("go", "mod", "init", "example.com/scratch")
	main := "package main\n" + strings.SplitN(readmeBlock(t, "## Example", "go"), "package main\n", 2)[1]
	if err := os.WriteFile(filepath.Join(scratch, "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	install := readmeBlock(t, "## Installing", "sh")
	if !strings.Contains(install, "/path/to/nixmsg") {
		t.Fatalf("the install block names no checkout path:\n%s", install)
	}
	run("sh", "-euc", strings.ReplaceAll(install, "/path/to/nixmsg", root))

	asker, peerEp := h.endpoint(t), h.endpoint(t)
	peer := online(t, h.info.WsURL, peerEp, Options{})
	// The peer answers twice: first a stale answer (another marker, as a late reply to an
	// earlier run would be), then the real one with the question's meta.
	peer.c.OnMessage(func(m Message) error {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			_, _ = peer.c.SendText(ctx, Endpoint(m.From), "stale answer",
				WithMeta(map[string]any{"marker": "an-earlier-run"}))
			_, _ = peer.c.SendText(ctx, Endpoint(m.From), "it is "+time.Now().UTC().Format(time.RFC3339),
				WithMeta(m.Meta))
		}()
		return nil
	})
	cmd := exec.CommandContext(ctx, "go", "run", ".")
	cmd.Dir = scratch
	cmd.Env = append(env, "NIXMSG_URL="+h.info.WsURL, "NIXMSG_ID="+asker.ID,
		"NIXMSG_PASSWORD="+asker.Password, "NIXMSG_TO="+peerEp.ID)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README example failed: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^sent [0-9a-f-]{36} dispatched$`).Match(out) ||
		!regexp.MustCompile(`(?m)^answer from `+peerEp.ID+`: it is \d{4}-`).Match(out) ||
		strings.Contains(string(out), "stale") {
		t.Fatalf("the README example printed:\n%s", out)
	}
	gomod, err := os.ReadFile(filepath.Join(scratch, "go.mod"))
	if err != nil || !strings.Contains(string(gomod), "replace git.asio.asia/nixevol/NixMsg/sdk/go => "+root+"/sdk/go") {
		t.Fatalf("go.mod of the scratch module:\n%s", gomod)
	}
}
