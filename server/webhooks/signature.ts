/**
 * Webhook signatures (issue 34), as Standard Webhooks (standardwebhooks.com) defines them, so its
 * libraries verify ours: the secret is `whsec_` + base64 of 32 random bytes; the signature is
 * `v1,` + base64(HMAC-SHA256(secret bytes, `${webhook-id}.${webhook-timestamp}.${body}`)).
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

const PREFIX = "whsec_";

/** A new random secret, shown to the administrator once. */
export function newWebhookSecret(): string {
  return PREFIX + randomBytes(32).toString("base64");
}

function keyOf(secret: string): Uint8Array {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64");
}

/**
 * The `webhook-signature` header value of one request.
 *
 * @example
 * ```ts
 * sign(secret, "msg_42", 1750000000, '{"v":1,"type":"msg"}'); // "v1,K5oZ..."
 * ```
 */
export function sign(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac("sha256", keyOf(secret));
  mac.update(`${id}.${timestampSeconds}.${body}`);
  return `v1,${mac.digest("base64")}`;
}

/** True when one of the space-separated signatures of `header` is this request's. */
export function verify(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
  header: string,
): boolean {
  const want = Buffer.from(sign(secret, id, timestampSeconds, body));
  return header.split(" ").some((s) => {
    const got = Buffer.from(s);
    return got.length === want.length && timingSafeEqual(got, want);
  });
}
