"""verify_webhook and sign_webhook against the Standard Webhooks example (no server needed)."""

from __future__ import annotations

from nixmsg import sign_webhook, verify_webhook

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
WEBHOOK_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
TS = 1614265330
BODY = b'{"test": 2432232314}'
SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_sign_webhook_makes_the_standard_webhooks_signature() -> None:
    assert sign_webhook(SECRET, WEBHOOK_ID, TS, BODY) == SIG


def test_verify_webhook_accepts_a_valid_request_and_refuses_the_rest() -> None:
    headers = {
        "webhook-id": WEBHOOK_ID,
        "webhook-timestamp": str(TS),
        "webhook-signature": "v1,AAAA " + SIG,
    }
    assert verify_webhook(SECRET, headers, BODY, now=TS)
    assert not verify_webhook(SECRET, headers, BODY + b" ", now=TS)
    assert not verify_webhook(SECRET, headers, BODY, now=TS + 301)
    assert not verify_webhook("whsec_%%%", headers, BODY, now=TS)
    assert not verify_webhook(SECRET, {}, BODY, now=TS)
