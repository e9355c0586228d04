package nixmsg

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Limits used before the first handshake: the spec defaults (spec 6.1, 11.1).
const (
	defaultMaxBodyBytes  = 262_144
	defaultMaxMetaBytes  = 4096
	defaultMaxFrameBytes = 786_432
)

// sendLimits are the limits a send is checked against: from the last `hello`, or the defaults.
type sendLimits struct {
	maxBodyBytes, maxMetaBytes, maxFrameBytes int
}

var defaultLimits = sendLimits{defaultMaxBodyBytes, defaultMaxMetaBytes, defaultMaxFrameBytes}

// wireBody is the `body` object of `send` and `msg` (spec 6.2).
type wireBody struct {
	Enc         string `json:"enc"`
	ContentType string `json:"content_type,omitempty"`
	Data        string `json:"data"`
}

// marshalJSON encodes v without HTML escaping (spec 6: `<`, `>` and `&` stay as they are).
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// encodeTextBody builds a `utf8` body; it fails with body_too_large exactly as the server would.
func encodeTextBody(text string, contentType string, maxBodyBytes int) (wireBody, error) {
	if !utf8.ValidString(text) {
		return wireBody{}, newError(CodeBadRequest, "Body text is not valid UTF-8")
	}
	if err := checkBodySize(len(text), maxBodyBytes); err != nil {
		return wireBody{}, err
	}
	return wireBody{Enc: "utf8", ContentType: contentType, Data: text}, nil
}

// encodeBytesBody builds a `base64` body (standard, padded: the server refuses unpadded base64).
func encodeBytesBody(data []byte, contentType string, maxBodyBytes int) (wireBody, error) {
	if err := checkBodySize(len(data), maxBodyBytes); err != nil {
		return wireBody{}, err
	}
	return wireBody{Enc: "base64", ContentType: contentType, Data: base64.StdEncoding.EncodeToString(data)}, nil
}

// decodeBody returns the bytes of a received body and whether it was sent as bytes (base64).
func decodeBody(b wireBody) ([]byte, bool, error) {
	if b.Enc == "base64" {
		data, err := base64.StdEncoding.DecodeString(b.Data)
		return data, true, err
	}
	return []byte(b.Data), false, nil
}

// checkBodySize fails with body_too_large when size decoded bytes exceed maxBodyBytes.
func checkBodySize(size, maxBodyBytes int) error {
	if size > maxBodyBytes {
		return newError(CodeBodyTooLarge,
			fmt.Sprintf("Body is %d bytes, more than max_body_bytes %d", size, maxBodyBytes))
	}
	return nil
}

// encodeFrame serializes a frame and fails with frame_too_large when it exceeds maxFrameBytes:
// the server closes the connection on an oversized packet without a `resp`, so resending it
// after the reconnect would loop forever (spec 6.10, 9).
func encodeFrame(frame any, maxFrameBytes int) ([]byte, error) {
	data, err := marshalJSON(frame)
	if err != nil {
		return nil, &Error{Code: CodeBadRequest, Message: "Cannot encode the frame: " + err.Error(), Err: err}
	}
	if len(data) > maxFrameBytes {
		return nil, newError(CodeFrameTooLarge,
			fmt.Sprintf("Frame is %d bytes, more than max_frame_bytes %d", len(data), maxFrameBytes))
	}
	return data, nil
}

// checkMeta fails with meta_too_large when meta serializes to more than maxMetaBytes (spec 6.2).
func checkMeta(meta map[string]any, maxMetaBytes int) error {
	data, err := marshalJSON(meta)
	if err != nil {
		return &Error{Code: CodeBadRequest, Message: "meta cannot be encoded as JSON: " + err.Error(), Err: err}
	}
	if len(data) > maxMetaBytes {
		return newError(CodeMetaTooLarge,
			fmt.Sprintf("meta is %d bytes, more than max_meta_bytes %d", len(data), maxMetaBytes))
	}
	return nil
}
