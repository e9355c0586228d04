// The `state` of a send response (spec 6.2): the message's state when the response is written.
// `scheduled` before its time, `dispatched` while a delivery is unfinished, and `completed` when
// every delivery already ended at submit (spec 7.4 step 3), e.g. an endpoint that is offline and
// has no reconnect grace left, without `offline.keep` (docs/DEVIATIONS.md).
import assert from "node:assert/strict";
import { online } from "./helpers/client.ts";
import { adminSession } from "./helpers/admin.ts";
import { PW, sendFrame, withServer } from "./helpers/messaging.ts";

type Data = Record<string, unknown>;

Deno.test("a send answers scheduled, dispatched, or completed when every delivery ended at submit", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "on", "never");
    const a = await h.online("a");
    await h.online("on");
    const state = async (id: string, to: string, extra: Data) => {
      const r = await a.request(sendFrame(id, to, "x", extra));
      assert.equal(r.ok, true, JSON.stringify(r));
      return (r.data as Data).state;
    };
    assert.equal(await state("later", "on", { delay_ms: 60_000 }), "scheduled");
    assert.equal(await state("now", "on", { delay_ms: 0 }), "dispatched");
    // Never connected, no keep: its delivery is dropped (offline) within the submit.
    assert.equal(await state("gone", "never", { delay_ms: 0 }), "completed");
    // Kept for the offline receiver: unfinished, so dispatched.
    const keep = { delay_ms: 0, offline: { keep: true, ttl_seconds: 60 } };
    assert.equal(await state("kept", "never", keep), "dispatched");

    const status = await a.request({ type: "status", id: "gone" });
    const sd = status.data as Data;
    assert.equal(sd.state, "completed");
    assert.deepEqual(sd.items, [{ endpoint_id: "never", state: "dropped", reason: "offline" }]);
    // A repeat answers the first result with the current state (spec 6.2).
    assert.equal(await state("gone", "never", { delay_ms: 0 }), "completed");
  });
});

Deno.test("an HTTP send answers completed when every delivery ended at submit", async () => {
  const { t, admin } = await adminSession();
  try {
    for (const id of ["app", "never"]) {
      const r = await admin.post("/api/admin/endpoints", { id, login_password: PW });
      assert.equal(r.status, 200, r.text);
    }
    const { client } = await online(t.wsUrl, "app", PW);
    try {
      const r = await admin.post("/api/admin/endpoints/app/messages", {
        id: "h-gone",
        to: { kind: "endpoint", id: "never" },
        body: { enc: "utf8", data: "x" },
        delay_ms: 0,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.data.state, "completed");
    } finally {
      await client.close();
    }
  } finally {
    await t.close();
  }
});
