package nixmsg

import "fmt"

// Error codes the SDK produces itself (the server's codes of spec 6.10 pass through unchanged).
const (
	// CodeNotConnected: the call needs a completed handshake, or the connection was lost before
	// the response arrived.
	CodeNotConnected = "not_connected"
	// CodeQueueFull: the in-memory send queue already holds its capacity (default 1,000).
	CodeQueueFull = "queue_full"
	// CodeTimeout: no response within the request timeout.
	CodeTimeout = "timeout"
	// CodeClosed: the client was closed or logged out; pending sends end with it.
	CodeClosed = "closed"
	// CodeKicked: another login took the endpoint over (reason "taken_over"), or the server sent
	// `fatal` (the reason is its reason); pending sends end with it.
	CodeKicked = "kicked"
	// CodeAuthFailed: the server refused the credential (reason "session_invalid" or
	// "bad_credentials"); pending sends end with it.
	CodeAuthFailed = "auth_failed"
	// CodeNetwork: an HTTP request (registration) got no response.
	CodeNetwork = "network"
	// CodeBadResponse: the server answered something that is not a NixMsg response.
	CodeBadResponse = "bad_response"
	// CodeBadRequest: the call's arguments are invalid (also a server code).
	CodeBadRequest = "bad_request"
	// CodeBodyTooLarge: the body exceeds max_body_bytes (also a server code).
	CodeBodyTooLarge = "body_too_large"
	// CodeMetaTooLarge: meta exceeds max_meta_bytes (also a server code).
	CodeMetaTooLarge = "meta_too_large"
	// CodeFrameTooLarge: the encoded frame exceeds max_frame_bytes (also a server code).
	CodeFrameTooLarge = "frame_too_large"
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
	// Err is the underlying error, for "network".
	Err error
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
// errors.Is(err, nixmsg.ErrCode("closed")) works.
func (e *Error) Is(target error) bool {
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
