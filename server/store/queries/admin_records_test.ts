import assert from "node:assert/strict";
import { addEndpoint, addGroup, send, T0, testDb } from "../ops/_testing.ts";
import {
  countGroups,
  groupMembers,
  groupRecord,
  listGroups,
  listMessages,
  messageRecipients,
  messageRecord,
} from "./admin_records.ts";

// spec 7.7, 8: message records without bodies, and groups, as the admin API lists them.

Deno.test("message records carry states and per-state counts but no body, meta or encoding", () => {
  const db = testDb();
  for (const id of ["a", "b", "c"]) addEndpoint(db, id);
  addGroup(db, "g1", ["a", "b", "c"]);
  const direct = send(db, "a", { toId: "b", body: new TextEncoder().encode("secret-body") });
  const group = send(db, "a", { toKind: "group", toId: "g1" });
  const later = send(db, "b", { toId: "c", sendAt: T0 + 60_000 });
  const rec = messageRecord(db, direct.seq!)!;
  assert.equal(rec.state, "dispatched");
  assert.equal(rec.counts.pending, 1);
  assert.ok(!JSON.stringify(rec).includes("secret-body"));
  for (const k of ["body", "meta", "body_enc"]) assert.ok(!(k in rec), k);
  assert.equal(messageRecord(db, 999), null);
  assert.deepEqual(
    messageRecipients(db, group.seq!, "", 10).map((r) => [r.endpoint_id, r.state]),
    [["b", "pending"], ["c", "pending"]],
  );
  assert.deepEqual(messageRecipients(db, group.seq!, "b", 10).map((r) => r.endpoint_id), ["c"]);

  const seqs = (f: Parameters<typeof listMessages>[1], before: number | null = null) =>
    listMessages(db, f, before, 10).map((m) => m.seq);
  assert.deepEqual(seqs({}), [later.seq, group.seq, direct.seq], "newest first");
  assert.deepEqual(seqs({ sender: "a" }), [group.seq, direct.seq]);
  assert.deepEqual(seqs({ dest: "g1" }), [group.seq]);
  assert.deepEqual(seqs({ destKind: "endpoint" }), [later.seq, direct.seq]);
  assert.deepEqual(seqs({ recipient: "c" }), [group.seq], "a scheduled one has no deliveries yet");
  assert.deepEqual(seqs({ states: ["scheduled"] }), [later.seq]);
  assert.deepEqual(seqs({ states: ["scheduled", "dispatched"] }), [
    later.seq,
    group.seq,
    direct.seq,
  ]);
  assert.deepEqual(seqs({ id: "no-such-id" }), []);
  assert.deepEqual(seqs({ to: T0 }), [], "to is exclusive");
  assert.equal(seqs({ from: T0, to: T0 + 1 }).length, 3);
  assert.deepEqual(seqs({}, group.seq!), [direct.seq]);
  const page = listMessages(db, {}, null, 10);
  assert.deepEqual(page[1].counts, {
    pending: 2,
    accepted: 0,
    recalled: 0,
    expired: 0,
    dropped: 0,
    rejected: 0,
  });
});

Deno.test("the group list filters by q and member and pages by id; members page by endpoint id", () => {
  const db = testDb();
  for (const id of ["a", "b", "c"]) addEndpoint(db, id, { name: id.toUpperCase() });
  addGroup(db, "g1", ["a", "b"]);
  addGroup(db, "g2", ["c"]);
  addGroup(db, "h1", ["b", "c"]);
  const ids = (f: Parameters<typeof listGroups>[1], after = "") =>
    listGroups(db, f, after, 10).map((g) => `${g.id}:${g.members}`);
  assert.deepEqual(ids({}), ["g1:2", "g2:1", "h1:2"]);
  assert.deepEqual(ids({ q: "g" }), ["g1:2", "g2:1"]);
  assert.deepEqual(ids({ member: "c" }), ["g2:1", "h1:2"]);
  assert.deepEqual(ids({}, "g2"), ["h1:2"]);
  assert.equal(countGroups(db, { member: "b" }), 2);
  assert.deepEqual(groupRecord(db, "g1")?.owner_id, "a");
  assert.equal(groupRecord(db, "zz"), null);
  assert.deepEqual(groupMembers(db, "h1", "", 10).map((m) => `${m.id}:${m.name}`), ["b:B", "c:C"]);
  assert.deepEqual(groupMembers(db, "h1", "b", 10).map((m) => m.id), ["c"]);
});
