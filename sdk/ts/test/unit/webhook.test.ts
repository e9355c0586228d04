import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { signWebhook, verifyWebhook } from "../../src/webhook.ts";
import { REPO_ROOT } from "../helpers/harness.ts";

// The example of the Standard Webhooks specification, which NixMsg's signatures follow.
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const TS = 1614265330;
const BODY = '{"test": 2432232314}';
const SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

test("signWebhook makes the Standard Webhooks signature", async () => {
  assert.equal(await signWebhook(SECRET, ID, TS, BODY), SIG);
  assert.equal(
    await signWebhook(SECRET, ID, TS, new TextEncoder().encode(BODY)),
    SIG,
  );
});

test("verifyWebhook accepts a valid request within the tolerance and refuses the rest", async () => {
  const now = TS * 1000;
  const headers = {
    "webhook-id": ID,
    "webhook-timestamp": String(TS),
    "webhook-signature": SIG,
  };
  assert.equal(await verifyWebhook(SECRET, headers, BODY, { now }), true);
  assert.equal(
    await verifyWebhook(SECRET, new Headers(headers), BODY, { now }),
    true,
  );
  const several = { ...headers, "webhook-signature": `v1,AAAA ${SIG}` };
  assert.equal(await verifyWebhook(SECRET, several, BODY, { now }), true);
  assert.equal(
    await verifyWebhook(SECRET, headers, BODY + " ", { now }),
    false,
  );
  assert.equal(
    await verifyWebhook(SECRET, { ...headers, "webhook-id": "x" }, BODY, {
      now,
    }),
    false,
  );
  assert.equal(
    await verifyWebhook(SECRET, headers, BODY, { now: now + 301_000 }),
    false,
  );
  assert.equal(await verifyWebhook("whsec_%%%", headers, BODY, { now }), false);
  assert.equal(await verifyWebhook(SECRET, {}, BODY, { now }), false);
});

test("verifyWebhook accepts the server's own signatures (sdk/conformance/webhook_vectors.json)", async () => {
  const file = join(REPO_ROOT, "sdk/conformance/webhook_vectors.json");
  const { vectors } = JSON.parse(await readFile(file, "utf8")) as {
    vectors: {
      secret: string;
      id: string;
      timestamp: number;
      body: string;
      signature: string;
    }[];
  };
  assert.ok(vectors.length >= 3);
  for (const v of vectors) {
    const headers = {
      "webhook-id": v.id,
      "webhook-timestamp": String(v.timestamp),
      "webhook-signature": v.signature,
    };
    const bytes = new TextEncoder().encode(v.body);
    assert.equal(
      await signWebhook(v.secret, v.id, v.timestamp, bytes),
      v.signature,
      v.id,
    );
    assert.equal(
      await verifyWebhook(v.secret, headers, bytes, {
        now: v.timestamp * 1000,
      }),
      true,
    );
  }
});
