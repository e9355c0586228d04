import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { newWebhookSecret, sign, verify } from "./signature.ts";

Deno.test("sign() follows Standard Webhooks: HMAC-SHA256 of id.timestamp.body, base64", () => {
  // The example of the Standard Webhooks specification.
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const body = '{"test": 2432232314}';
  assert.equal(
    sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
    "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
  );
  const key = Buffer.from(secret.slice(6), "base64");
  const mac = createHmac("sha256", key).update(`a.1.${body}`).digest("base64");
  assert.equal(sign(secret, "a", 1, body), `v1,${mac}`);
});

Deno.test("verify() accepts the right signature among several and refuses a changed body", () => {
  const secret = newWebhookSecret();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  const header = `v1,bogus ${sign(secret, "e1", 10, "{}")}`;
  assert.equal(verify(secret, "e1", 10, "{}", header), true);
  assert.equal(verify(secret, "e1", 10, "{ }", header), false);
  assert.equal(verify(secret, "e2", 10, "{}", header), false);
});
