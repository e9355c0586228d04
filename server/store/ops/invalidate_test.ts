import assert from "node:assert/strict";
import type { DatabaseSync } from "node:sqlite";
import { ackReceipt } from "./receipts.ts";
import {
  addEndpoint,
  addGroup,
  codeOf,
  countRows,
  deliveryLines,
  messageLine,
  push,
  receiptLines,
  send,
  T0,
  testDb,
} from "./_testing.ts";
import { deleteEndpoint, disableEndpoint, enableEndpoint, resetPassword } from "./invalidate.ts";
import { upsertGrant } from "./talk.ts";

// spec 7.6 作废: the 停用端 X and 删除端 X rows, plus enable and the admin password reset (spec 8).

const LATER = T0 + 60_000;

/** Every message the 7.6 rows for X speak about, by name, as seqs. */
interface World {
  toX: number; // a -> x, dispatched, pushed to x on "cx"
  toGroup: number; // a -> group g (a, x, b), dispatched
  scheduledToX: number; // a -> x, scheduled, receipt
  scheduledQuiet: number; // a -> x, scheduled, no receipt
  fromXScheduled: number; // x -> b, scheduled
  fromXPending: number; // x -> b, dispatched, pushed to b on "cb"
  unrelated: number; // a -> b, dispatched
}

function world(): { db: DatabaseSync; w: World } {
  const db = testDb();
  addEndpoint(db, "a");
  addEndpoint(db, "b");
  addEndpoint(db, "x", { sessionHash: "s" });
  addGroup(db, "g", ["a", "x", "b"]);
  const w: World = {
    toX: send(db, "a", { id: "to-x", toId: "x" }).seq!,
    toGroup: send(db, "a", { id: "to-g", toKind: "group", toId: "g" }).seq!,
    scheduledToX: send(db, "a", { id: "later-x", toId: "x", sendAt: LATER }).seq!,
    scheduledQuiet: send(db, "a", { id: "quiet-x", toId: "x", sendAt: LATER, receipt: false }).seq!,
    fromXScheduled: send(db, "x", { id: "x-later", toId: "b", sendAt: LATER }).seq!,
    fromXPending: send(db, "x", { id: "x-now", toId: "b" }).seq!,
    unrelated: send(db, "a", { id: "a-b", toId: "b" }).seq!,
  };
  push(db, "x", "cx");
  push(db, "b", "cb");
  return { db, w };
}

function endpointRow(db: DatabaseSync, id: string) {
  const row = db.prepare("SELECT enabled, session_hash, login_hash FROM endpoints WHERE id = ?")
    .get(id) as { enabled: number; session_hash: string | null; login_hash: string } | undefined;
  return row === undefined ? undefined : { ...row };
}

function revokedLines(
  r: {
    revoked: {
      endpointId: string;
      connCode: string;
      msgId: string;
      from: string;
      reason: string;
    }[];
  },
) {
  return r.revoked.map((v) => `${v.connCode}:${v.from}>${v.msgId}:${v.reason}`).sort();
}

Deno.test("disabling and deleting X apply every row of the spec 7.6 table", () => {
  for (const kind of ["disabled", "deleted"] as const) {
    const { db, w } = world();
    const r = kind === "disabled"
      ? disableEndpoint(db, { endpointId: "x" }, T0 + 1)
      : deleteEndpoint(db, { endpointId: "x" }, T0 + 1);
    const to = `endpoint_${kind}`;
    const from = `sender_${kind}`;
    const rows: [string, string, string[] | string][] = [
      ["pending delivery to X is rejected", "toX", [`x:rejected:${to}`]],
      ["X's delivery of a group message is rejected", "toGroup", [
        "b:pending:",
        `x:rejected:${to}`,
      ]],
      ["scheduled direct message to X completes", "scheduledToX", `completed:${to}`],
      ["scheduled direct message without receipt completes", "scheduledQuiet", `completed:${to}`],
      [
        "X's scheduled message completes",
        "fromXScheduled",
        kind === "disabled" ? `completed:${from}` : "gone",
      ],
      [
        "X's pending delivery is rejected",
        "fromXPending",
        kind === "disabled" ? [`b:rejected:${from}`] : "gone",
      ],
      ["an unrelated message is untouched", "unrelated", ["b:pending:"]],
    ];
    for (const [name, key, want] of rows) {
      const seq = w[key as keyof World];
      const got = typeof want === "string" ? messageLine(db, seq) : deliveryLines(db, seq);
      assert.deepEqual(got, want, `${kind}: ${name}`);
    }
    // Receipts only for messages to X; X's own messages get none (spec 7.6).
    const wantReceipts = [
      `a>to-x:x:rejected:${to}`,
      `a>to-g:x:rejected:${to}`,
      `a>later-x:x:rejected:${to}`,
    ];
    assert.deepEqual(receiptLines(db), wantReceipts, kind);
    assert.deepEqual(
      r.receipts.map((x) => `${x.senderId}>${x.msgId}:${x.endpointId}:${x.state}:${x.reason}`),
      wantReceipts,
    );
    // Pushed deliveries to X and from X get best-effort revoked frames (spec 6.4).
    assert.deepEqual(
      revokedLines(r),
      [`cb:x>x-now:${from}`, `cx:a>to-g:${to}`, `cx:a>to-x:${to}`].sort(),
      kind,
    );
    if (kind === "disabled") {
      assert.deepEqual(endpointRow(db, "x"), { enabled: 0, session_hash: null, login_hash: "x" });
      assert.equal(messageLine(db, w.toX), "completed:", "the last pending delivery finalizes it");
      assert.equal(countRows(db, "message_bodies", "seq = ?", String(w.toX)), 0);
    } else {
      assert.equal(endpointRow(db, "x"), undefined);
    }
  }
});

Deno.test("endpoint.disable twice reports no change; endpoint.enable restores sending only", () => {
  const { db, w } = world();
  assert.equal(disableEndpoint(db, { endpointId: "x" }, T0).changed, true);
  const again = disableEndpoint(db, { endpointId: "x" }, T0);
  assert.deepEqual(again, { changed: false, revoked: [], receipts: [] });
  assert.deepEqual(enableEndpoint(db, { endpointId: "x" }, T0), { changed: true });
  assert.deepEqual(enableEndpoint(db, { endpointId: "x" }, T0), { changed: false });
  assert.equal(endpointRow(db, "x")?.enabled, 1);
  assert.deepEqual(
    deliveryLines(db, w.toX),
    ["x:rejected:endpoint_disabled"],
    "nothing comes back",
  );
  for (const op of [disableEndpoint, enableEndpoint, deleteEndpoint]) {
    assert.equal(codeOf(() => op(db, { endpointId: "nobody" }, T0)), "not_found", op.name);
  }
});

Deno.test("deleting X hands its groups to the longest-standing member or dissolves them", () => {
  const db = testDb();
  for (const id of ["x", "b", "c", "d", "e"]) addEndpoint(db, id);
  addGroup(db, "g1", ["x", "c", "b"]); // owned by x; c joined before b
  addGroup(db, "g2", ["x", "d"]); // d leaves below; x is then alone
  addGroup(db, "g3", ["b", "x"]); // x is a plain member
  const later = send(db, "d", { id: "d-later", toKind: "group", toId: "g2", sendAt: LATER }).seq!;
  db.exec("DELETE FROM group_members WHERE group_id = 'g2' AND endpoint_id = 'd'");
  const r = deleteEndpoint(db, { endpointId: "x" }, T0 + 1);
  assert.deepEqual(r.groupEvents, [
    { groupId: "g1", members: ["b", "c"], event: "left", endpointId: "x" },
    { groupId: "g1", members: ["b", "c"], event: "owner_changed", endpointId: "c" },
    { groupId: "g2", members: [], event: "dissolved", endpointId: "x" },
    { groupId: "g3", members: ["b"], event: "left", endpointId: "x" },
  ]);
  const owners = db.prepare("SELECT id, owner_id FROM groups ORDER BY id").all()
    .map((g) => `${g.id}:${g.owner_id}`);
  assert.deepEqual(owners, ["g1:c", "g3:b"]);
  assert.equal(countRows(db, "group_members", "endpoint_id = 'x'"), 0);
  // The dissolve invalidations ran for g2: its scheduled message gets a message-level receipt.
  assert.equal(messageLine(db, later), "completed:group_dissolved");
  assert.deepEqual(receiptLines(db), ["d>d-later::rejected:group_dissolved"]);
  assert.deepEqual(r.receipts.map((x) => x.msgId), ["d-later"]);
});

Deno.test("deleting X removes its grants, unacked receipts, send keys and sent records", () => {
  const db = testDb();
  for (const id of ["x", "b"]) addEndpoint(db, id);
  upsertGrant(db, "x", "b", "password", 0, T0);
  upsertGrant(db, "b", "x", "reply", 0, T0);
  upsertGrant(db, "b", "b", "password", 0, T0);
  const sent = send(db, "x", { id: "x1", toId: "b", receipt: true }).seq!;
  const received = send(db, "b", { id: "b1", toId: "x" }).seq!;
  // Receipts for x: one acked (kept until retention), one not (deleted with x).
  db.exec("UPDATE deliveries SET state = 'accepted' WHERE endpoint_id = 'b'");
  const insertReceipt = db.prepare(
    "INSERT INTO receipts (sender_id, msg_id, endpoint_id, state, created_at) VALUES ('x', ?, 'b', 'accepted', 0)",
  );
  insertReceipt.run("x1");
  const acked = Number(insertReceipt.run("x0").lastInsertRowid);
  ackReceipt(db, { senderId: "x", receiptId: acked }, T0);
  deleteEndpoint(db, { endpointId: "x" }, T0 + 1);
  const counts: [string, string, number][] = [
    ["grants in both directions", "talk_grants WHERE sender_id = 'x' OR target_id = 'x'", 0],
    ["other grants", "talk_grants WHERE sender_id = 'b'", 1],
    ["x's unacked receipts", "receipts WHERE sender_id = 'x' AND acked = 0", 0],
    ["x's acked receipts", "receipts WHERE sender_id = 'x' AND acked = 1", 1],
    ["b's receipt for its message to x", "receipts WHERE sender_id = 'b'", 1],
    ["x's send keys", "send_keys WHERE sender_id = 'x'", 0],
    ["b's send keys", "send_keys WHERE sender_id = 'b'", 1],
    ["x's messages", "messages WHERE sender_id = 'x'", 0],
    ["deliveries of x's messages", `deliveries WHERE seq = ${sent}`, 0],
  ];
  for (const [name, from, n] of counts) {
    const [table, where] = from.split(" WHERE ");
    assert.equal(countRows(db, table, where), n, name);
  }
  assert.deepEqual(
    deliveryLines(db, received),
    ["x:rejected:endpoint_deleted"],
    "b keeps its record",
  );
});

Deno.test("endpoint.reset_password swaps the hash and kills the session, nothing else", () => {
  const { db, w } = world();
  assert.deepEqual(resetPassword(db, { endpointId: "x", loginHash: "h2" }, T0), { changed: true });
  assert.deepEqual(endpointRow(db, "x"), { enabled: 1, session_hash: null, login_hash: "h2" });
  assert.deepEqual(deliveryLines(db, w.toX), ["x:pending:"]);
  assert.equal(
    codeOf(() => resetPassword(db, { endpointId: "nobody", loginHash: "h" }, T0)),
    "not_found",
  );
});
