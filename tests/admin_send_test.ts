// Sending on behalf of an endpoint over HTTP (issue 16): the same parser, op and rules as the
// MQTT `send`, `status` and `recall` frames, seen by real MQTT receivers.
import assert from "node:assert/strict";
import { online } from "./helpers/client.ts";
import { type AdminClient, adminSession, auditLines } from "./helpers/admin.ts";
import { msgs, PW, sendNowFrame, waitMsg, waitReceipt } from "./helpers/messaging.ts";

async function endpoint(admin: AdminClient, id: string, extra: Record<string, unknown> = {}) {
  const r = await admin.post("/api/admin/endpoints", { id, login_password: PW, ...extra });
  assert.equal(r.status, 200, r.text);
}

function text(to: string, data: string, extra: Record<string, unknown> = {}) {
  return { to: { kind: "endpoint", id: to }, body: { enc: "utf8", data }, delay_ms: 0, ...extra };
}

Deno.test("an HTTP send reaches the MQTT receiver once, the receipt goes to the sender's connection, and HTTP status shows accepted", async () => {
  const { t, admin } = await adminSession();
  try {
    await endpoint(admin, "app");
    await endpoint(admin, "dev");
    const { client: a } = await online(t.wsUrl, "app", PW);
    const { client: b } = await online(t.wsUrl, "dev", PW);
    try {
      const r = await admin.post("/api/admin/endpoints/app/messages", {
        id: "h1",
        ...text("dev", "门铃 <b>&", { meta: { k: "v" } }),
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.data.id, "h1");
      assert.equal(r.data.state, "dispatched");
      assert.equal(typeof r.data.send_at_ms, "number");
      const msg = await waitMsg(b, "h1");
      assert.equal(msg.from, "app");
      const got = msg.body as Record<string, unknown>;
      assert.deepEqual([got.enc, got.data], ["utf8", "门铃 <b>&"]);
      assert.deepEqual(msg.meta, { k: "v" });
      const ack = await b.request({ type: "ack", from: "app", id: "h1" });
      assert.deepEqual(ack.data, { result: "accepted" });
      const receipt = await waitReceipt(a, "h1");
      assert.equal(receipt.state, "accepted");
      assert.equal(receipt.endpoint_id, "dev");
      const st = await admin.get("/api/admin/endpoints/app/messages/h1");
      assert.equal(st.status, 200, st.text);
      assert.equal(st.data.state, "completed");
      assert.deepEqual(st.data.items, [{ endpoint_id: "dev", state: "accepted", reason: "" }]);
      // A marker on the same path proves h1 was pushed once.
      await a.request(sendNowFrame("marker", "dev", "m"));
      await waitMsg(b, "marker");
      assert.equal(msgs(b, "h1").length, 1);
      const audit = auditLines(t).find((l) => l.action === "message.send");
      assert.equal(audit?.object, "app/h1");
      assert.ok(!JSON.stringify(t.logs).includes("门铃"), "bodies are never logged");
    } finally {
      await a.close();
      await b.close();
    }
  } finally {
    await t.close();
  }
});

Deno.test("HTTP send keeps the frame's rules: repeat, conflict, limits, talk passwords, unknown and disabled senders", async () => {
  const { t, admin } = await adminSession();
  try {
    await endpoint(admin, "app");
    await endpoint(admin, "dev");
    await endpoint(admin, "locked", { talk_password: "talk-1" });
    await endpoint(admin, "off");
    assert.equal((await admin.patch("/api/admin/endpoints/off", { enabled: false })).status, 200);
    const path = "/api/admin/endpoints/app/messages";
    const first = await admin.post(path, {
      id: "r1",
      ...text("dev", "one"),
      offline: { keep: true, ttl_seconds: 60 },
    });
    assert.equal(first.status, 200, first.text);
    const repeat = await admin.post(path, {
      id: "r1",
      ...text("dev", "one"),
      offline: { keep: true, ttl_seconds: 60 },
    });
    assert.equal(repeat.status, 200, repeat.text);
    assert.deepEqual(repeat.data, first.data, "a repeat answers the first result");
    const conflict = await admin.post(path, {
      id: "r1",
      ...text("dev", "two"),
      offline: { keep: true, ttl_seconds: 60 },
    });
    assert.equal(conflict.status, 409);
    assert.equal(conflict.code, "conflict");
    const big = await admin.post(path, { id: "r2", ...text("dev", "x".repeat(262145)) });
    assert.equal(big.status, 413);
    assert.equal(big.code, "body_too_large");
    const huge = await admin.post(path, { id: "r3", ...text("dev", "\u0001".repeat(300000)) });
    assert.equal(huge.status, 413);
    assert.equal(huge.code, "frame_too_large");
    const talk = await admin.post(path, { id: "r4", ...text("locked", "hi") });
    assert.equal(talk.status, 403);
    assert.equal(talk.code, "talk_password_required");
    const withPw = await admin.post(path, {
      id: "r5",
      ...text("locked", "hi"),
      talk_password: "talk-1",
    });
    assert.equal(withPw.status, 200, withPw.text);
    const unknown = await admin.post("/api/admin/endpoints/nobody/messages", text("dev", "x"));
    assert.equal(unknown.status, 404);
    assert.equal(unknown.code, "not_found");
    const disabled = await admin.post("/api/admin/endpoints/off/messages", text("dev", "x"));
    assert.equal(disabled.status, 403);
    assert.equal(disabled.code, "endpoint_disabled");
    const noTarget = await admin.post(path, text("ghost", "x"));
    assert.equal(noTarget.status, 404);
    assert.equal(noTarget.code, "invalid_target");
    const badField = await admin.post(path, { ...text("dev", "x"), type: "recall" });
    assert.equal(badField.status, 400);
    const badJson = await admin.post(path, "{not json");
    assert.equal(badJson.status, 400);
    assert.equal(badJson.code, "bad_request");
  } finally {
    await t.close();
  }
});

Deno.test("HTTP send without an id generates a UUIDv7 each time, and recall over HTTP cancels a scheduled message", async () => {
  const { t, admin } = await adminSession();
  try {
    await endpoint(admin, "app");
    await endpoint(admin, "dev");
    const path = "/api/admin/endpoints/app/messages";
    const body = text("dev", "later", { delay_ms: 60_000 });
    const a = await admin.post(path, body);
    const b = await admin.post(path, body);
    assert.equal(a.status, 200, a.text);
    assert.match(
      a.data.id as string,
      /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    assert.notEqual(a.data.id, b.data.id, "a repeat without an id is a new message");
    assert.equal(a.data.state, "scheduled");
    const rc = await admin.post(`${path}/${a.data.id}/recall`);
    assert.equal(rc.status, 200, rc.text);
    assert.deepEqual(rc.data, { result: "recalled", recalled: 0, accepted: 0, other: 0 });
    const st = await admin.get(`${path}/${a.data.id}`);
    assert.equal(st.data.state, "completed");
    assert.equal(st.data.reason, "recalled");
    const missing = await admin.get(`${path}/no-such-id`);
    assert.equal(missing.status, 404);
    assert.equal(missing.code, "not_found");
    const badLimit = await admin.get(`${path}/${b.data.id}?limit=0`);
    assert.equal(badLimit.status, 400);
    assert.ok(auditLines(t).some((l) => l.action === "message.recall" && l.result === "ok"));
  } finally {
    await t.close();
  }
});
