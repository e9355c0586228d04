package nixmsg

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// WebhookTolerance is how far a webhook's timestamp may be from now before VerifyWebhook refuses
// it (a replayed request).
const WebhookTolerance = 5 * time.Minute

// SignWebhook returns the webhook-signature value NixMsg sends for one request (docs/protocol.md
// "Webhooks", Standard Webhooks): "v1," + base64 HMAC-SHA256 of "<id>.<timestamp>.<body>", keyed
// with the bytes of the whsec_ secret.
func SignWebhook(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// VerifyWebhook reports whether a webhook request carries a valid signature made with secret and
// a timestamp within WebhookTolerance of now. Pass the body exactly as received. Deduplicate the
// events you accept by the webhook-id header: a retry repeats it.
//
//	body, _ := io.ReadAll(r.Body)
//	if !nixmsg.VerifyWebhook(secret, r.Header, body, time.Now()) {
//		w.WriteHeader(http.StatusUnauthorized)
//		return
//	}
func VerifyWebhook(secret string, h http.Header, body []byte, now time.Time) bool {
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || err != nil {
		return false
	}
	if d := now.Sub(time.Unix(sec, 0)); d > WebhookTolerance || d < -WebhookTolerance {
		return false
	}
	want, err := SignWebhook(secret, id, sec, body)
	if err != nil {
		return false
	}
	for _, s := range strings.Split(h.Get("webhook-signature"), " ") {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}
