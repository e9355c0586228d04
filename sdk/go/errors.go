package nixmsg

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// Error codes of the server (spec 6.10), as returned in Error.Code.
const (
	// CodeBadRequest: a field is missing or invalid; the SDK also uses it for invalid arguments
	// and options (a bad URL, a negative delay, a nil handler), before anything is sent.
	CodeBadRequest = "bad_request"
	// CodeNotReady: `hello` has not succeeded yet.
	CodeNotReady = "not_ready"
	// CodeUnauthorized: a password or token check failed (a wrong old password).
	CodeUnauthorized = "unauthorized"
	// CodeForbidden: not allowed (not the group owner).
	CodeForbidden = "forbidden"
	// CodeNotFound: the message, group or id does not exist.
	CodeNotFound = "not_found"
	// CodeInvalidTarget: the send target does not exist.
	CodeInvalidTarget = "invalid_target"
	// CodeConflict: the message id was used before with different content.
	CodeConflict = "conflict"
	// CodeIDTaken: the id exists already (registration, provisioning, group creation).
	CodeIDTaken = "id_taken"
	// CodeBodyTooLarge: the body exceeds max_body_bytes (checked locally too).
	CodeBodyTooLarge = "body_too_large"
	// CodeMetaTooLarge: meta exceeds max_meta_bytes (checked locally too).
	CodeMetaTooLarge = "meta_too_large"
	// CodeFrameTooLarge: the encoded frame exceeds max_frame_bytes (raised by the SDK).
	CodeFrameTooLarge = "frame_too_large"
	// CodeResponseTooLarge: the answer exceeds this connection's max_receive_bytes.
	CodeResponseTooLarge = "response_too_large"
	// CodeTalkPasswordRequired: the target has a talk password and there is no grant.
	CodeTalkPasswordRequired = "talk_password_required"
	// CodeTalkPasswordInvalid: the talk password is wrong.
	CodeTalkPasswordInvalid = "talk_password_invalid"
	// CodeRateLimited: too many requests, or locked after too many wrong passwords.
	CodeRateLimited = "rate_limited"
	// CodeNotMember: not a member of the group.
	CodeNotMember = "not_member"
	// CodeOwnerCannotLeave: the owner must transfer the group before leaving.
	CodeOwnerCannotLeave = "owner_cannot_leave"
	// CodeGroupFull: the group has max_group_members members.
	CodeGroupFull = "group_full"
	// CodeQuotaExceeded: this sender has max_pending_per_sender unfinished messages.
	CodeQuotaExceeded = "quota_exceeded"
	// CodeEndpointDisabled: the other endpoint is disabled.
	CodeEndpointDisabled = "endpoint_disabled"
	// CodeRegistrationClosed: self-registration is off.
	CodeRegistrationClosed = "registration_closed"
	// CodeRegistrationCodeInvalid: the registration code is wrong.
	CodeRegistrationCodeInvalid = "registration_code_invalid"
	// CodeBusy: the server cannot commit now; retry later.
	CodeBusy = "busy"
)

// Error codes the SDK produces itself.
const (
	// CodeNotConnected: the call needs a completed handshake, or the connection was lost before
	// the response arrived.
	CodeNotConnected = "not_connected"
	// CodeQueueFull: the in-memory send queue already holds its capacity (default 1,000).
	CodeQueueFull = "queue_full"
	// CodeTimeout: no response within the request timeout, or the call's context deadline
	// passed (Err is context.DeadlineExceeded, or the last connection error for Connect/Ready).
	CodeTimeout = "timeout"
	// CodeCanceled: the call's context was canceled (errors.Is(err, context.Canceled) holds).
	CodeCanceled = "canceled"
	// CodeClosed: the client was closed or logged out; pending sends end with it.
	CodeClosed = "closed"
	// CodeKicked: another login took the endpoint over (reason "taken_over"), or the server sent
	// `fatal` (the reason is its reason); pending sends end with it.
	CodeKicked = "kicked"
	// CodeAuthFailed: the server refused the credential (reason "session_invalid" or
	// "bad_credentials"); pending sends end with it.
	CodeAuthFailed = "auth_failed"
	// CodeNetwork: a connection attempt or an HTTP request (registration) failed; Err is the
	// dial, socket or HTTP error.
	CodeNetwork = "network"
	// CodeTLS: a connection attempt failed in TLS (an untrusted or expired certificate, a wrong
	// host name); Err is the crypto/tls or crypto/x509 error.
	CodeTLS = "tls"
	// CodeBadResponse: the server answered something that is not a NixMsg response.
	CodeBadResponse = "bad_response"
)

// Error is the one error type of the SDK. Branch on Code (spec 6: the message is for developers).
// It works with errors.As, and errors.Is matches any *Error with the same Code:
//
//	if errors.Is(err, nixmsg.ErrCode("talk_password_required")) { ... }
//	var e *nixmsg.Error
//	if errors.As(err, &e) && e.Code == "kicked" { log.Print(e.Reason) }
type Error struct {
	// Code is the spec 6.10 code, or one of the SDK's own codes (CodeNotConnected, ...).
	Code string
	// Message is a human-readable description for developers.
	Message string
	// Data is `error.data` of the server response, when present.
	Data map[string]any
	// Status is the HTTP status of a registration error (0 otherwise).
	Status int
	// Reason says why the client stopped, for "kicked", "auth_failed" and "closed".
	Reason string
	// Err is the underlying error: the dial, TLS or HTTP error of "network" and "tls", the
	// context's error of "timeout" and "canceled" (or, for Connect and Ready, the last
	// connection error), the parser's error of a bad URL.
	Err error

	ctxErr error // the context error this error stands for, for errors.Is
}

// Error implements error.
func (e *Error) Error() string {
	if e.Message == "" || e.Message == e.Code {
		return "nixmsg: " + e.Code
	}
	return fmt.Sprintf("nixmsg: %s: %s", e.Code, e.Message)
}

// Unwrap returns the underlying error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same Code, so that
// errors.Is(err, nixmsg.ErrCode("closed")) works; a "timeout" or "canceled" that a context
// ended also matches context.DeadlineExceeded or context.Canceled.
func (e *Error) Is(target error) bool {
	if e.ctxErr != nil && target == e.ctxErr {
		return true
	}
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// ErrCode returns an *Error carrying only code, for use as an errors.Is target.
func ErrCode(code string) error { return &Error{Code: code} }

// Sentinels for errors.Is with the SDK's own codes.
var (
	// ErrNotConnected matches errors with CodeNotConnected.
	ErrNotConnected = ErrCode(CodeNotConnected)
	// ErrQueueFull matches errors with CodeQueueFull.
	ErrQueueFull = ErrCode(CodeQueueFull)
	// ErrTimeout matches errors with CodeTimeout.
	ErrTimeout = ErrCode(CodeTimeout)
	// ErrClosed matches errors with CodeClosed.
	ErrClosed = ErrCode(CodeClosed)
	// ErrKicked matches errors with CodeKicked.
	ErrKicked = ErrCode(CodeKicked)
	// ErrAuthFailed matches errors with CodeAuthFailed.
	ErrAuthFailed = ErrCode(CodeAuthFailed)
)

// CodeOf returns the Code of err when it is (or wraps) an *Error, else "".
func CodeOf(err error) string {
	var e *Error
	for err != nil {
		if x, ok := err.(*Error); ok {
			e = x
			break
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			break
		}
		err = u.Unwrap()
	}
	if e == nil {
		return ""
	}
	return e.Code
}

func newError(code, message string) *Error { return &Error{Code: code, Message: message} }

// ctxError is the *Error for a call whose context ended: "timeout" for a deadline, "canceled"
// otherwise. cause, when not nil, is why the call had not succeeded yet (the last connection
// error); it becomes Err, else the context's error does.
func ctxError(ctx context.Context, what string, cause error) *Error {
	cerr := ctx.Err()
	code := CodeCanceled
	if errors.Is(cerr, context.DeadlineExceeded) {
		code = CodeTimeout
	}
	e := &Error{Code: code, Message: what + ": " + cerr.Error(), Err: cerr, ctxErr: cerr}
	if cause != nil {
		e.Message += " (last error: " + cause.Error() + ")"
		e.Err = cause
	}
	return e
}

// transportError is the *Error a failed connection attempt is reported with: "tls" for a TLS
// handshake or certificate failure, "network" otherwise, with err kept as Err.
func transportError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	code := CodeNetwork
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		header   tls.RecordHeaderError
		alert    tls.AlertError
	)
	if errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &header) || errors.As(err, &alert) {
		code = CodeTLS
	}
	return &Error{Code: code, Message: "Connection failed: " + err.Error(), Err: err}
}
