package nixmsg

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// srv is the server of this test binary's integration tests (TestMain).
var srv *harness

func TestMain(m *testing.M) {
	code := func() int {
		if os.Getenv("NIXMSG_SKIP_INTEGRATION") == "" {
			var extra []string
			if os.Getenv("DEBUGLOG") != "" {
				extra = append(extra, "--set", "log.level=debug")
			}
			h, err := startHarness(extra...)
			if err != nil {
				println("harness:", err.Error())
				return 1
			}
			srv = h
			defer h.stop()
		}
		return m.Run()
	}()
	os.Exit(code)
}

// needServer skips integration tests when NIXMSG_SKIP_INTEGRATION is set.
func needServer(t *testing.T) *harness {
	t.Helper()
	if srv == nil {
		t.Skip("NIXMSG_SKIP_INTEGRATION is set: no server")
	}
	return srv
}

// tracked is a client with every callback recorded.
type tracked struct {
	c        *Client
	messages *events[Message]
	receipts *events[Receipt]
	revoked  *events[Revoked]
	presence *events[PresenceEvent]
	groupEvs *events[GroupEvent]
	states   *events[ConnectionEvent]
	sessions *events[string]
	errs     *events[error]
}

// track creates a client with every callback recorded; it does not connect. t.Cleanup closes it.
func track(t *testing.T, url, id string, cred Credential, o Options) *tracked {
	t.Helper()
	tr := &tracked{
		messages: newEvents[Message](), receipts: newEvents[Receipt](), revoked: newEvents[Revoked](),
		presence: newEvents[PresenceEvent](), groupEvs: newEvents[GroupEvent](),
		states: newEvents[ConnectionEvent](), sessions: newEvents[string](), errs: newEvents[error](),
	}
	if o.OnCallbackError == nil {
		o.OnCallbackError = tr.errs.push
	}
	c, err := New(url, id, cred, o)
	if err != nil {
		t.Fatal(err)
	}
	tr.c = c
	c.OnMessage(func(m Message) error { tr.messages.push(m); return nil })
	c.OnReceipt(func(r Receipt) error { tr.receipts.push(r); return nil })
	c.OnRevoked(tr.revoked.push)
	c.OnPresence(tr.presence.push)
	c.OnGroupEvent(tr.groupEvs.push)
	c.OnConnection(tr.states.push)
	c.OnSession(tr.sessions.push)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return tr
}

// start begins connecting without waiting.
func (tr *tracked) start(t *testing.T) {
	t.Helper()
	if err := tr.c.link.start(); err != nil {
		t.Fatal(err)
	}
}

// online creates a client with the password and waits until it is online.
func online(t *testing.T, url string, ep endpointInfo, o Options) *tracked {
	t.Helper()
	tr := track(t, url, ep.ID, Password(ep.Password), o)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := tr.c.Connect(ctx); err != nil {
		t.Fatalf("%s online: %v", ep.ID, err)
	}
	return tr
}

func ctx15(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

func byID(id string) func(Message) bool { return func(m Message) bool { return m.ID == id } }

// wantCode fails unless err is an *Error whose code is code and an exported constant.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	wantSDKError(t, err, code)
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

func asError2(err error, target **Error) bool { return errors.As(err, target) }
