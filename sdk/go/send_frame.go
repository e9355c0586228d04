package nixmsg

import (
	"math"
	"time"
)

// ridPlaceholder is a rid as long as any the client makes, for the size check before queueing.
const ridPlaceholder = "rrrrrrrrrrrr"

// SendOptions are the options of Send (spec 6.2, 9). Pass them whole with WithOptions, or one
// at a time with the With… functions. Nil and zero fields leave the server's defaults.
type SendOptions struct {
	// SendAt is when to send, local clock; converted to server time once, at the call.
	SendAt time.Time
	// Delay before sending; a pointer to 0 sends at once. Without SendAt and Delay the
	// endpoint's default delay applies.
	Delay *time.Duration
	// Keep keeps the message for an offline recipient (server default false).
	Keep *bool
	// TTL is how long to keep it when kept (server default 86,400 s), in whole seconds.
	// A TTL without Keep means "keep for that long".
	TTL time.Duration
	// Receipt asks for receipts (server default true).
	Receipt *bool
	// TalkPassword is the recipient's talk password, when needed (spec 6.6).
	TalkPassword string
	// ContentType of the body.
	ContentType string
	// Meta is application metadata, at most max_meta_bytes serialized.
	Meta map[string]any
	// ID is the message id; default a new UUIDv7. Reusing an id makes the send idempotent.
	ID string
}

// SendOption changes SendOptions; see the With… functions.
type SendOption func(*SendOptions)

// WithOptions applies a whole SendOptions struct.
func WithOptions(o SendOptions) SendOption { return func(s *SendOptions) { *s = o } }

// WithSendAt schedules the message at t (local clock, converted with the clock offset).
func WithSendAt(t time.Time) SendOption { return func(s *SendOptions) { s.SendAt = t } }

// WithDelay sends the message after d; 0 sends at once, overriding the endpoint default. A
// negative d makes Send fail with bad_request before anything is sent.
func WithDelay(d time.Duration) SendOption { return func(s *SendOptions) { s.Delay = &d } }

// WithKeep keeps the message for an offline recipient.
func WithKeep() SendOption { return func(s *SendOptions) { k := true; s.Keep = &k } }

// WithTTL keeps the message for an offline recipient for d (whole seconds, rounded up).
func WithTTL(d time.Duration) SendOption { return func(s *SendOptions) { s.TTL = d } }

// WithReceipt asks for receipts (true, the default) or not (false).
func WithReceipt(on bool) SendOption { return func(s *SendOptions) { s.Receipt = &on } }

// WithTalkPassword passes the recipient's talk password (spec 6.6).
func WithTalkPassword(pw string) SendOption { return func(s *SendOptions) { s.TalkPassword = pw } }

// WithContentType sets the body's content type.
func WithContentType(ct string) SendOption { return func(s *SendOptions) { s.ContentType = ct } }

// WithMeta attaches application metadata (a JSON object).
func WithMeta(meta map[string]any) SendOption { return func(s *SendOptions) { s.Meta = meta } }

// WithID sets the message id; resending with the same id and content is idempotent.
func WithID(id string) SendOption { return func(s *SendOptions) { s.ID = id } }

type offlineOption struct {
	Keep       bool   `json:"keep"`
	TTLSeconds *int64 `json:"ttl_seconds,omitempty"`
}

// sendFrame is the `send` frame of spec 6.2. Its content is fixed when the send is queued; only
// Rid changes between publishes, so a resend has the same fingerprint (spec 7.3, 9).
type sendFrame struct {
	V            int            `json:"v"`
	Type         string         `json:"type"`
	Rid          string         `json:"rid"`
	ID           string         `json:"id"`
	To           Target         `json:"to"`
	Body         wireBody       `json:"body"`
	Meta         map[string]any `json:"meta,omitempty"`
	SendAtMs     *int64         `json:"send_at_ms,omitempty"`
	DelayMs      *int64         `json:"delay_ms,omitempty"`
	Offline      *offlineOption `json:"offline,omitempty"`
	Receipt      *bool          `json:"receipt,omitempty"`
	TalkPassword string         `json:"talk_password,omitempty"`
}

// withRid returns the frame to publish under rid.
func (f sendFrame) withRid(rid string) sendFrame {
	f.Rid = rid
	return f
}

// buildSendFrame fixes the content of one send at call time: the id, and send_at_ms converted
// from the local SendAt with the clock offset once. It fails with bad_request, body_too_large,
// meta_too_large or frame_too_large (the local checks of spec 9).
func buildSendFrame(to Target, body wireBody, o SendOptions, limits sendLimits, offset time.Duration, now time.Time) (sendFrame, error) {
	if !o.SendAt.IsZero() && o.Delay != nil {
		return sendFrame{}, newError(CodeBadRequest, "Give SendAt or Delay, not both")
	}
	if o.TTL < 0 {
		return sendFrame{}, newError(CodeBadRequest, "TTL must be 0 or more")
	}
	if to.Kind != "endpoint" && to.Kind != "group" {
		return sendFrame{}, newError(CodeBadRequest, "Target kind must be endpoint or group")
	}
	f := sendFrame{V: 1, Type: "send", ID: o.ID, To: to, Body: body}
	if f.ID == "" {
		f.ID = newUUIDv7(now)
	}
	if o.Meta != nil {
		if err := checkMeta(o.Meta, limits.maxMetaBytes); err != nil {
			return sendFrame{}, err
		}
		f.Meta = o.Meta
	}
	if !o.SendAt.IsZero() {
		ms := max(0, o.SendAt.Add(offset).UnixMilli())
		f.SendAtMs = &ms
	}
	if o.Delay != nil {
		if *o.Delay < 0 {
			return sendFrame{}, newError(CodeBadRequest, "Delay must be 0 or more")
		}
		ms := o.Delay.Milliseconds()
		f.DelayMs = &ms
	}
	if o.Keep != nil || o.TTL > 0 {
		keep := o.Keep == nil || *o.Keep
		f.Offline = &offlineOption{Keep: keep}
		if keep && o.TTL > 0 {
			ttl := int64(math.Ceil(o.TTL.Seconds()))
			f.Offline.TTLSeconds = &ttl
		}
	}
	f.Receipt = o.Receipt
	f.TalkPassword = o.TalkPassword
	if _, err := encodeFrame(f.withRid(ridPlaceholder), limits.maxFrameBytes); err != nil {
		return sendFrame{}, err
	}
	return f, nil
}
