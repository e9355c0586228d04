import assert from "node:assert/strict";
import { addEndpoint, send, T0, testDb } from "../../store/ops/_testing.ts";
import { msgFieldsOfSend, MsgFrameCache } from "./frames.ts";
import { parseRequest } from "../../protocol/parse.ts";
import { TEST_LIMITS } from "../../protocol/fixtures.ts";
import { canonicalMeta } from "../handlers/meta.ts";
import { queriesOn } from "../../store/sqlite_store.ts";

function decode(bytes: Uint8Array | null): Record<string, unknown> | null {
  return bytes === null ? null : JSON.parse(new TextDecoder().decode(bytes));
}

Deno.test("MsgFrameCache serves the same encoded frame for every lookup of one message", async () => {
  const db = testDb();
  addEndpoint(db, "a");
  addEndpoint(db, "b");
  const r = send(db, "a", { id: "m1", toId: "b" });
  const cache = new MsgFrameCache(queriesOn(db));
  const key = { seq: r.seq!, senderId: "a", msgId: "m1", sendAt: T0 };
  const first = await cache.get(key);
  assert.equal(decode(first)?.id, "m1");
  assert.equal(await cache.get(key), first);
});

Deno.test("MsgFrameCache never returns another message's frame, and seq is not reused", async () => {
  const db = testDb();
  addEndpoint(db, "a");
  addEndpoint(db, "b");
  const cache = new MsgFrameCache(queriesOn(db));
  const old = send(db, "a", { id: "old", toId: "b", body: new TextEncoder().encode("old") });
  assert.equal(
    decode(await cache.get({ seq: old.seq!, senderId: "a", msgId: "old", sendAt: T0 }))?.id,
    "old",
  );
  // record_retention_days 0 deletes a completed message; migration 2 keeps its seq retired.
  db.prepare("DELETE FROM messages WHERE seq = ?").run(old.seq!);
  const next = send(db, "a", { id: "new", toId: "b", body: new TextEncoder().encode("new") });
  assert.ok(next.seq! > old.seq!);

  const frame = decode(
    await cache.get({ seq: next.seq!, senderId: "a", msgId: "new", sendAt: T0 }),
  );
  assert.equal(frame?.id, "new");
  assert.deepEqual(frame?.body, { enc: "utf8", content_type: "text/plain", data: "new" });
  // A lookup that names another message at this seq gets nothing.
  assert.equal(await cache.get({ seq: next.seq!, senderId: "a", msgId: "old", sendAt: T0 }), null);
});

Deno.test("MsgFrameCache.release() drops a frame only when no delivery of its message is pending", async () => {
  const db = testDb();
  addEndpoint(db, "a");
  addEndpoint(db, "b");
  const cache = new MsgFrameCache(queriesOn(db));
  const m = send(db, "a", { id: "m1", toId: "b" });
  await cache.get({ seq: m.seq!, senderId: "a", msgId: "m1", sendAt: T0 });
  assert.equal(cache.size, 1);
  await cache.release("a", "m1");
  assert.equal(cache.size, 1, "b's delivery is still pending");
  db.prepare("UPDATE deliveries SET state = 'accepted' WHERE seq = ?").run(m.seq!);
  await cache.release("a", "m1");
  assert.equal(cache.size, 0);
  assert.equal(cache.bytes, 0);
});

Deno.test("a frame primed from the send request is byte for byte the one built from the stored row", async () => {
  const cases: Record<string, unknown>[] = [
    { enc: "utf8", content_type: "text/plain", data: 'héllo \u{1F600} "q" \\ \n' },
    { enc: "base64", content_type: "application/octet-stream", data: "AAEC/w==" },
  ];
  for (const [i, body] of cases.entries()) {
    const db = testDb();
    addEndpoint(db, "a");
    addEndpoint(db, "b");
    const wire = {
      v: 1,
      type: "send",
      rid: `r${i}`,
      id: `p${i}`,
      to: { kind: "endpoint", id: "b" },
      body,
      meta: { z: 1, a: { y: [2, "x"], b: null } },
    };
    const parsed = parseRequest(new TextEncoder().encode(JSON.stringify(wire)), TEST_LIMITS);
    assert.ok(parsed.ok && parsed.frame.type === "send");
    const frame = parsed.frame;
    const meta = canonicalMeta(frame.meta);
    const r = send(db, "a", {
      id: frame.id,
      toId: "b",
      body: frame.body.bytes,
      bodyEnc: frame.body.enc,
      contentType: frame.body.content_type,
      meta,
    });
    const key = { seq: r.seq!, senderId: "a", msgId: frame.id, sendAt: T0 };
    const fromDb = await new MsgFrameCache(queriesOn(db)).get(key);
    const primed = new MsgFrameCache(queriesOn(db));
    primed.prime(r.seq!, msgFieldsOfSend("a", frame, meta, T0));
    assert.equal(primed.size, 1);
    assert.ok(fromDb !== null);
    assert.deepEqual(await primed.get(key), fromDb, `${body.enc}: the same bytes`);
    // A completed message's frame goes without a database read.
    primed.completed("a", frame.id);
    assert.equal(primed.size, 0);
    assert.equal(primed.bytes, 0);
  }
});
