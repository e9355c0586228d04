"""verify_webhook and sign_webhook against the Standard Webhooks example (no server needed)."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_verify_webhook_accepts_the_servers_own_signatures() -> None:
    """sdk/conformance/webhook_vectors.json: made by the server's own signing code."""
    path = Path(__file__).resolve().parents[2] / "conformance" / "webhook_vectors.json"
    vectors = json.loads(path.read_text(encoding="utf-8"))["vectors"]
    assert len(vectors) >= 3
    for v in vectors:
        body = v["body"].encode("utf-8")
        assert sign_webhook(v["secret"], v["id"], v["timestamp"], body) == v["signature"], v["id"]
        headers = {
            "webhook-id": v["id"],
            "webhook-timestamp": str(v["timestamp"]),
            "webhook-signature": v["signature"],
        }
        assert verify_webhook(v["secret"], headers, body, now=v["timestamp"]), v["id"]
