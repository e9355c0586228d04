// `offline.ttl_seconds` is checked whether or not `keep` is set (spec 6.2: an integer of at most
// max_ttl_seconds). Without keep it is still not part of the request fingerprint (spec 7.3).
import assert from "node:assert/strict";
import { type Data, sendNowFrame, withServer } from "./helpers/messaging.ts";

Deno.test("a send with keep false and a malformed ttl_seconds is bad_request; 0 and valid values are accepted", async () => {
  await withServer({ limits: { max_ttl_seconds: 3600 } }, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const bad: unknown[] = ["60", -1, 1.5, 3601, true, { n: 1 }];
    for (const [i, ttl] of bad.entries()) {
      const resp = await a.request(
        sendNowFrame(`bad${i}`, "b", "x", { offline: { keep: false, ttl_seconds: ttl } }),
      );
      assert.equal(resp.ok, false, `ttl_seconds ${JSON.stringify(ttl)} must be refused`);
      assert.equal((resp.error as Data).code, "bad_request", JSON.stringify(resp));
      assert.match(String((resp.error as Data).message), /ttl_seconds/);
    }
    for (const [i, ttl] of [0, 1, 3600].entries()) {
      const resp = await a.request(
        sendNowFrame(`ok${i}`, "b", "x", { offline: { keep: false, ttl_seconds: ttl } }),
      );
      assert.equal(resp.ok, true, `ttl_seconds ${ttl}: ${JSON.stringify(resp)}`);
    }
    // Not hashed without keep: the same id with another ttl_seconds is the same request.
    const again = await a.request(
      sendNowFrame("ok0", "b", "x", { offline: { keep: false, ttl_seconds: 5 } }),
    );
    assert.equal(again.ok, true, JSON.stringify(again));
  });
});
