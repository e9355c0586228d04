package nixmsg

import (
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"
)

// The example of the Standard Webhooks specification, which NixMsg's signatures follow.
const (
	whSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	whID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	whTS     = 1614265330
	whBody   = `{"test": 2432232314}`
	whSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignWebhookMakesTheStandardWebhooksSignature(t *testing.T) {
	got, err := SignWebhook(whSecret, whID, whTS, []byte(whBody))
	if err != nil || got != whSig {
		t.Fatalf("SignWebhook = %q, %v; want %q", got, err, whSig)
	}
}

func TestVerifyWebhookAcceptsAValidRequestAndRefusesTheRest(t *testing.T) {
	h := http.Header{}
	h.Set("webhook-id", whID)
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", "v1,AAAA "+whSig)
	now := time.Unix(whTS, 0)
	if !VerifyWebhook(whSecret, h, []byte(whBody), now) {
		t.Fatal("a valid request was refused")
	}
	if VerifyWebhook(whSecret, h, []byte(whBody+" "), now) {
		t.Fatal("a changed body was accepted")
	}
	if VerifyWebhook(whSecret, h, []byte(whBody), now.Add(6*time.Minute)) {
		t.Fatal("an old request was accepted")
	}
	if VerifyWebhook("whsec_%%%", h, []byte(whBody), now) {
		t.Fatal("a bad secret was accepted")
	}
}

// The signatures the server's own signing code made (sdk/conformance/webhook_vectors.json;
// server/webhooks/signature_test.ts checks that it still makes them).
func TestVerifyWebhookAcceptsTheServersOwnSignatures(t *testing.T) {
	raw, err := os.ReadFile("../conformance/webhook_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Vectors []struct {
			Secret    string `json:"secret"`
			ID        string `json:"id"`
			Timestamp int64  `json:"timestamp"`
			Body      string `json:"body"`
			Signature string `json:"signature"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Vectors) < 3 {
		t.Fatalf("%d vectors", len(file.Vectors))
	}
	for _, v := range file.Vectors {
		got, err := SignWebhook(v.Secret, v.ID, v.Timestamp, []byte(v.Body))
		if err != nil || got != v.Signature {
			t.Errorf("%s: SignWebhook = %q, %v; want %q", v.ID, got, err, v.Signature)
		}
		h := http.Header{}
		h.Set("webhook-id", v.ID)
		h.Set("webhook-timestamp", strconv.FormatInt(v.Timestamp, 10))
		h.Set("webhook-signature", v.Signature)
		if !VerifyWebhook(v.Secret, h, []byte(v.Body), time.Unix(v.Timestamp, 0)) {
			t.Errorf("%s: the server's signature was refused", v.ID)
		}
	}
}
