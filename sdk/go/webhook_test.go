package nixmsg

import (
	"net/http"
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
