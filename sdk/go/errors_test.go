package nixmsg

// Every failure is an *Error with a code from the exported constants, its cause kept:
// invalid options and handlers, transport and TLS failures reported to Connect, context ends.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"
)

// codeConstants are the exported code constants; the test below checks them against the docs.
var codeConstants = []string{
	CodeBadRequest, CodeNotReady, CodeUnauthorized, CodeForbidden, CodeNotFound, CodeInvalidTarget,
	CodeConflict, CodeIDTaken, CodeBodyTooLarge, CodeMetaTooLarge, CodeFrameTooLarge,
	CodeResponseTooLarge, CodeTalkPasswordRequired, CodeTalkPasswordInvalid, CodeRateLimited,
	CodeNotMember, CodeOwnerCannotLeave, CodeGroupFull, CodeQuotaExceeded, CodeEndpointDisabled,
	CodeRegistrationClosed, CodeRegistrationCodeInvalid, CodeBusy,
	CodeNotConnected, CodeQueueFull, CodeTimeout, CodeCanceled, CodeClosed, CodeKicked,
	CodeAuthFailed, CodeNetwork, CodeTLS, CodeBadResponse,
}

// wantSDKError fails unless err is an *Error whose code is code and an exported constant.
func wantSDKError(t *testing.T, err error, code string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want an *Error %q, got %T %v", code, err, err)
	}
	if e.Code != code || !slices.Contains(codeConstants, e.Code) {
		t.Fatalf("want code %q (a constant), got %q: %v", code, e.Code, err)
	}
	return e
}

func TestErrorCodeConstantsCoverTheProtocolDoc(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs/protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	table := string(doc)[regexp.MustCompile(`(?m)^## Error codes`).FindIndex(doc)[0]:]
	found := regexp.MustCompile("(?m)^\\| `([a-z_]+)` +\\| \\d{3}").FindAllStringSubmatch(table, -1)
	if len(found) < 23 {
		t.Fatalf("found %d codes in docs/protocol.md", len(found))
	}
	for _, m := range found {
		if !slices.Contains(codeConstants, m[1]) {
			t.Errorf("no constant for %q", m[1])
		}
	}
}

func TestInvalidOptionsFailWithBadRequestWhenBuilt(t *testing.T) {
	url := "ws://127.0.0.1:9/mqtt"
	_, err := New(url, "a", Password("p"), Options{KeepAlive: 5 * time.Second})
	wantSDKError(t, err, CodeBadRequest)
	_, err = New("ftp://x", "a", Password("p"), Options{})
	wantSDKError(t, err, CodeBadRequest)
	_, err = New("ws://%zz", "a", Password("p"), Options{})
	if e := wantSDKError(t, err, CodeBadRequest); e.Err == nil {
		t.Fatal("the URL parser's error is not kept")
	}
	_, err = New(url, "", Password("p"), Options{})
	wantSDKError(t, err, CodeBadRequest)

	c, err := New(url, "a", Password("p"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(context.Background()) }()
	for name, add := range map[string]func(){
		"OnMessage":    func() { c.OnMessage(nil) },
		"OnReceipt":    func() { c.OnReceipt(nil) },
		"OnConnection": func() { c.OnConnection(nil) },
		"OnRevoked":    func() { c.OnRevoked(nil) },
		"OnSession":    func() { c.OnSession(nil) },
	} {
		func() {
			defer func() {
				r := recover()
				err, _ := r.(error)
				if err == nil {
					t.Fatalf("%s(nil) was accepted", name)
				}
				wantSDKError(t, err, CodeBadRequest)
			}()
			add()
		}()
	}
	// A negative delay or TTL fails before anything is queued (the client is not even connected).
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = c.SendText(ctx, Endpoint("b"), "x", WithDelay(-time.Second))
	wantSDKError(t, err, CodeBadRequest)
	_, err = c.SendText(ctx, Endpoint("b"), "x", WithTTL(-time.Second))
	wantSDKError(t, err, CodeBadRequest)
}

func TestConnectReportsTheLastTransportError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	c, err := New("ws://"+addr+"/mqtt", "a", Password("p"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(context.Background()) }()
	states := newEvents[ConnectionEvent]()
	c.OnConnection(states.push)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	err = c.Connect(ctx)
	e := wantSDKError(t, err, CodeTimeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("errors.Is(err, context.DeadlineExceeded) is false")
	}
	cause := wantSDKError(t, errors.Unwrap(e), CodeNetwork)
	var op *net.OpError
	if !errors.As(cause, &op) {
		t.Fatalf("the dial error is not kept: %v", cause)
	}
	_ = c.Close(context.Background())
	for _, s := range states.all() {
		if s.State == StateReconnecting && CodeOf(s.Err) != CodeNetwork {
			t.Fatalf("reconnecting without its error: %+v", s)
		}
	}

	// A canceled context is "canceled", still with the transport error inside.
	c2, err := New("ws://"+addr+"/mqtt", "a", Password("p"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c2.Close(context.Background()) }()
	ctx2, cancel2 := context.WithCancel(context.Background())
	c2.OnConnection(func(e ConnectionEvent) {
		if e.State == StateReconnecting {
			cancel2()
		}
	})
	err = c2.Connect(ctx2)
	wantSDKError(t, err, CodeCanceled)
	if !errors.Is(err, context.Canceled) {
		t.Fatal("errors.Is(err, context.Canceled) is false")
	}
}

func TestAnUntrustedCertificateIsATLSError(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	c, err := New("wss://"+srv.Listener.Addr().String()+"/mqtt", "a", Password("p"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	err = c.Connect(ctx)
	e := wantSDKError(t, err, CodeTimeout)
	if cause := wantSDKError(t, e.Err, CodeTLS); cause.Err == nil {
		t.Fatal("the TLS error is not kept")
	}
	if msg := fmt.Sprint(err); !regexp.MustCompile(`certificate`).MatchString(msg) {
		t.Fatalf("the message does not say why: %s", msg)
	}
}
