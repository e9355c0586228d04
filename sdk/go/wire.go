package nixmsg

import (
	"encoding/json"
	"strings"
)

// inboundFrame is a downlink frame (spec 6); fields are read where the frame type uses them.
type inboundFrame struct {
	Type  string          `json:"type"`
	Rid   json.RawMessage `json:"rid"`
	Ok    bool            `json:"ok"`
	Data  json.RawMessage `json:"data"`
	Error *struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
	// msg, receipt, revoked, presence, group_event, fatal
	ID         string          `json:"id"`
	From       string          `json:"from"`
	To         *Target         `json:"to"`
	Body       *wireBody       `json:"body"`
	Meta       map[string]any  `json:"meta"`
	SendAtMs   int64           `json:"send_at_ms"`
	ReceiptID  json.RawMessage `json:"receipt_id"`
	EndpointID string          `json:"endpoint_id"`
	State      string          `json:"state"`
	Reason     string          `json:"reason"`
	AtMs       int64           `json:"at_ms"`
	Online     bool            `json:"online"`
	GroupID    string          `json:"group_id"`
	Event      string          `json:"event"`
}

// parseFrame decodes a downlink payload; false when it is not a NixMsg frame.
func parseFrame(payload []byte) (*inboundFrame, bool) {
	var f inboundFrame
	if err := json.Unmarshal(payload, &f); err != nil || f.Type == "" {
		return nil, false
	}
	return &f, true
}

// rawString renders a JSON string or number as text (rid and receipt_id may be either).
func rawString(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if strings.HasPrefix(s, `"`) {
		var out string
		if json.Unmarshal(raw, &out) == nil {
			return out
		}
	}
	if s == "null" {
		return ""
	}
	return s
}

// helloData is `data` of the `hello` response (spec 6.1).
type helloData struct {
	ServerTimeMs       int64  `json:"server_time_ms"`
	ServerVersion      string `json:"server_version"`
	MaxBodyBytes       int    `json:"max_body_bytes"`
	MaxMetaBytes       int    `json:"max_meta_bytes"`
	MaxFrameBytes      int    `json:"max_frame_bytes"`
	MaxTTLSeconds      int64  `json:"max_ttl_seconds"`
	MaxScheduleSeconds int64  `json:"max_schedule_seconds"`
	AckTimeoutSeconds  int64  `json:"ack_timeout_seconds"`
	SessionToken       string `json:"session_token"`
}

func (h helloData) serverInfo() ServerInfo {
	return ServerInfo{
		ServerTimeMs:       h.ServerTimeMs,
		ServerVersion:      h.ServerVersion,
		MaxBodyBytes:       h.MaxBodyBytes,
		MaxMetaBytes:       h.MaxMetaBytes,
		MaxFrameBytes:      h.MaxFrameBytes,
		MaxTTLSeconds:      h.MaxTTLSeconds,
		MaxScheduleSeconds: h.MaxScheduleSeconds,
		AckTimeoutSeconds:  h.AckTimeoutSeconds,
	}
}

// toMessage maps a `msg` frame (spec 6.3); false when it lacks id or from, or its body is bad.
func (f *inboundFrame) toMessage() (Message, bool) {
	if f.ID == "" || f.From == "" {
		return Message{}, false
	}
	body := wireBody{Enc: "utf8"}
	if f.Body != nil {
		body = *f.Body
	}
	data, binary, err := decodeBody(body)
	if err != nil {
		return Message{}, false
	}
	to := Target{Kind: "endpoint"}
	if f.To != nil {
		to = *f.To
	}
	meta := f.Meta
	if meta == nil {
		meta = map[string]any{}
	}
	return Message{
		ID: f.ID, From: f.From, To: to, Body: data, Binary: binary,
		ContentType: body.ContentType, Meta: meta, SendAtMs: f.SendAtMs,
	}, true
}

func (f *inboundFrame) toReceipt() Receipt {
	return Receipt{
		ReceiptID: rawString(f.ReceiptID), ID: f.ID, EndpointID: f.EndpointID,
		State: DeliveryState(f.State), Reason: f.Reason, AtMs: f.AtMs,
	}
}

func (f *inboundFrame) toRevoked() Revoked {
	return Revoked{ID: f.ID, From: f.From, Reason: f.Reason}
}

func (f *inboundFrame) toPresence() PresenceEvent {
	return PresenceEvent{ID: f.ID, Online: f.Online, AtMs: f.AtMs}
}

func (f *inboundFrame) toGroupEvent() GroupEvent {
	return GroupEvent{GroupID: f.GroupID, Event: f.Event, EndpointID: f.EndpointID, AtMs: f.AtMs}
}

// respError is the error of a failed `resp` (spec 6).
func (f *inboundFrame) respError() *Error {
	if f.Error == nil || f.Error.Code == "" {
		return newError(CodeBadResponse, "The server answered without an error code")
	}
	msg := f.Error.Message
	if msg == "" {
		msg = f.Error.Code
	}
	return &Error{Code: f.Error.Code, Message: msg, Data: f.Error.Data}
}
