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

Deno.test("the TypeScript verification example of docs/protocol.md accepts our signatures", async () => {
  const doc = await Deno.readTextFile(new URL("../../docs/protocol.md", import.meta.url));
  const from = doc.indexOf("### Verifying a signature");
  const start = doc.indexOf("```ts\n", from) + "```ts\n".length;
  const code = doc.slice(start, doc.indexOf("```", start));
  const file = await Deno.makeTempFile({ suffix: ".ts" });
  try {
    await Deno.writeTextFile(file, code);
    const mod = await import(`file://${file}`) as {
      verifyWebhook(secret: string, headers: Headers, body: string): boolean;
    };
    const secret = newWebhookSecret();
    const ts = Math.floor(Date.now() / 1000);
    const body = '{"v":1,"type":"receipt","data":"中文"}';
    const headers = new Headers({
      "webhook-id": "rcpt_1",
      "webhook-timestamp": String(ts),
      "webhook-signature": sign(secret, "rcpt_1", ts, body),
    });
    assert.equal(mod.verifyWebhook(secret, headers, body), true);
    assert.equal(mod.verifyWebhook(secret, headers, body + " "), false);
    headers.set("webhook-timestamp", String(ts - 3600));
    assert.equal(mod.verifyWebhook(secret, headers, body), false);
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("the signatures the SDKs verify (sdk/conformance/webhook_vectors.json) are the server's", async () => {
  const file = new URL("../../sdk/conformance/webhook_vectors.json", import.meta.url);
  const { vectors } = JSON.parse(await Deno.readTextFile(file)) as {
    vectors: { secret: string; id: string; timestamp: number; body: string; signature: string }[];
  };
  assert.ok(vectors.length >= 3);
  for (const v of vectors) {
    assert.equal(sign(v.secret, v.id, v.timestamp, v.body), v.signature, v.id);
    assert.ok(verify(v.secret, v.id, v.timestamp, v.body, v.signature), v.id);
  }
});
