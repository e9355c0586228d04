// The read side's contract (issue 29): every query of the registry, run through a `Store` on a
// fixture written through the same store's ops, with the answer each must give. The SQLite store
// runs it in mod_test.ts; another implementation runs the same function against itself.
import assert from "node:assert/strict";
import type { Store } from "../store.ts";
import type { Queries } from "./mod.ts";

/** What the contract needs of a store. */
export type ContractStore = Pick<Store, "run" | "query">;

const HOUR = 3_600_000;
const BIG = 8_000_000_000_000;

/** The fixture's facts the checks compare against. */
interface Fixture {
  now: number;
  seq: { m1: number; m2: number; m3: number };
  m2SendAt: number;
  sessionExpiresAt: number;
}

function endpoint(id: string, talkHash: string | null = null) {
  return {
    id,
    name: `name-${id}`,
    remark: `remark ${id}`,
    source: "admin" as const,
    loginHash: `login-hash-${id}`,
    talkHash,
    defaultDelayMs: id === "a" ? 1500 : 0,
  };
}

function message(id: string, toId: string, sendAt: number) {
  return {
    senderId: "a",
    id,
    fingerprint: new TextEncoder().encode(id),
    toKind: "endpoint" as const,
    toId,
    body: new TextEncoder().encode(`body of ${id}`),
    bodyEnc: "utf8" as const,
    contentType: "text/plain",
    meta: "{}",
    sendAt,
    keep: true,
    ttlSeconds: 3600,
    receipt: true,
  };
}

/**
 * Writes the fixture: endpoints a, b, c (c with a talk password), group g1 (a owns it, b is a
 * member), settings, an API token and an admin session; messages a→b m1 (pushed and acked), m2
 * (scheduled in an hour) and m3 (pending). `now` must be the store's clock, within a minute.
 */
async function seed(store: ContractStore, now: number): Promise<Fixture> {
  await store.run("context.configure", {
    graceMs: 60_000,
    maxPendingPerSender: 10_000,
    maxPendingPerReceiver: 10_000,
    recordRetentionDays: 7,
  });
  await store.run("settings.set", { key: "registration_enabled", value: "true" });
  await store.run("settings.set", { key: "registration_code", value: "c0de" });
  for (
    const [actor, action, target, result] of [
      ["admin", "endpoint.disable", "a", "ok"],
      ["token:ci", "endpoint.kick", "b", "not_found"],
      ["cli", "endpoints.import", "", "ok"],
    ]
  ) {
    await store.run("audit.record", { actor, action, target, result, ip: "127.0.0.1" });
  }
  for (const nodeId of ["n2", "n1", "n3"]) {
    await store.run("node.lease", {
      nodeId,
      address: `${nodeId}:7443`,
      version: "9.9",
      leaseMs: HOUR,
    });
  }
  assert.equal(await store.run("node.release", { nodeId: "n3" }), true);
  for (const e of [endpoint("a"), endpoint("b"), endpoint("c", "talk-hash-c")]) {
    await store.run("endpoint.create", e);
  }
  await store.run("group.create", {
    ownerId: "a",
    groupId: "g1",
    name: "G one",
    members: [{ id: "b", verdict: "ok" }],
    maxMembers: 10,
  });
  await store.run("admin.token_create", { id: "t1", name: "tok", tokenHash: "token-hash-1" });
  const sessionExpiresAt = now + HOUR;
  await store.run("admin.session_create", {
    tokenHash: "session-hash-1",
    expiresAt: sessionExpiresAt,
  });
  const m1 = await store.run("message.submit", message("m1", "b", now));
  const m2SendAt = now + HOUR;
  const m2 = await store.run("message.submit", message("m2", "b", m2SendAt));
  const claimed = await store.run("delivery.claim", { endpointId: "b", connCode: "c1", limit: 10 });
  assert.deepEqual(claimed.claimed.map((c) => c.msgId), ["m1"]);
  await store.run("delivery.ack", { endpointId: "b", from: "a", id: "m1" });
  const m3 = await store.run("message.submit", message("m3", "b", now));
  await store.run("webhook.put", {
    endpointId: "b",
    url: "https://hooks.example/b",
    enabled: true,
    secret: "whsec_b",
  });
  return {
    now,
    seq: { m1: m1.seq!, m2: m2.seq!, m3: m3.seq! },
    m2SendAt,
    sessionExpiresAt,
  };
}

type Check = (q: ContractStore["query"], fx: Fixture) => Promise<void>;

/** One check per query name: the compiler refuses a registry entry without one. */
const CHECKS: { readonly [K in keyof Queries]: Check } = {
  "settings.get": async (q) => {
    assert.equal(await q("settings.get", { key: "registration_code" }), "c0de");
    assert.equal(await q("settings.get", { key: "admin_password_hash" }), null);
  },
  "endpoint.login_row": async (q) => {
    const row = await q("endpoint.login_row", { id: "a" });
    assert.equal(row?.id, "a");
    assert.equal(row?.enabled, 1);
    assert.equal(row?.login_hash, "login-hash-a");
    assert.equal(row?.session_hash, null);
    assert.equal(await q("endpoint.login_row", { id: "zz" }), null);
  },
  "endpoint.self_row": async (q) => {
    const a = await q("endpoint.self_row", { id: "a" });
    assert.equal(a?.default_delay_ms, 1500);
    assert.equal(a?.talk_password_set, 0);
    assert.equal((await q("endpoint.self_row", { id: "c" }))?.talk_password_set, 1);
    assert.equal(await q("endpoint.self_row", { id: "zz" }), null);
  },
  "endpoint.exists": async (q) => {
    assert.equal(await q("endpoint.exists", { id: "a" }), true);
    assert.equal(await q("endpoint.exists", { id: "zz" }), false);
  },
  "endpoint.existing": async (q) => {
    assert.deepEqual(await q("endpoint.existing", { ids: ["c", "zz", "a"] }), ["a", "c"]);
    assert.deepEqual(await q("endpoint.existing", { ids: [] }), []);
  },
  "talk.grant_state": async (q) => {
    const c = await q("talk.grant_state", { senderId: "a", targetId: "c" });
    assert.equal(c.found, true);
    assert.equal(c.needsPassword, true);
    assert.equal(c.hasValidGrant, false);
    assert.equal(c.talkHash, "talk-hash-c");
    assert.equal((await q("talk.grant_state", { senderId: "a", targetId: "zz" })).found, false);
  },
  "message.send_key_exists": async (q) => {
    assert.equal(await q("message.send_key_exists", { senderId: "a", id: "m1" }), true);
    assert.equal(await q("message.send_key_exists", { senderId: "b", id: "m1" }), false);
  },
  "message.status": async (q) => {
    const s = await q("message.status", { senderId: "a", id: "m1", cursor: "", limit: 10 });
    assert.equal(s?.id, "m1");
    assert.equal(s?.counts.accepted, 1);
    assert.deepEqual(s?.items, [{ endpointId: "b", state: "accepted", reason: "" }]);
    assert.equal(s?.nextCursor, "");
    assert.equal(
      await q("message.status", { senderId: "a", id: "nope", cursor: "", limit: 10 }),
      null,
    );
  },
  "message.frame_source": async (q, fx) => {
    const m3 = await q("message.frame_source", { seq: fx.seq.m3 });
    assert.equal(m3?.id, "m3");
    assert.equal(m3?.senderId, "a");
    assert.equal(new TextDecoder().decode(m3?.body), "body of m3");
    // A completed message's body is gone (spec 7.6).
    assert.equal(await q("message.frame_source", { seq: fx.seq.m1 }), null);
  },
  "message.any_pending": async (q, fx) => {
    assert.equal(await q("message.any_pending", { seq: fx.seq.m3 }), true);
    assert.equal(await q("message.any_pending", { seq: fx.seq.m1 }), false);
  },
  "message.next_due_at": async (q, fx) => {
    assert.equal(await q("message.next_due_at", {}), fx.m2SendAt);
  },
  "receipt.pending": async (q) => {
    const rows = await q("receipt.pending", { senderId: "a", afterReceiptId: 0, limit: 10 });
    assert.ok(rows.some((r) => r.msgId === "m1" && r.state === "accepted" && r.endpointId === "b"));
    const last = rows[rows.length - 1].receiptId;
    assert.deepEqual(
      await q("receipt.pending", { senderId: "a", afterReceiptId: last, limit: 10 }),
      [],
    );
  },
  "cluster.waiting": async (q, fx) => {
    // m3 waits for b, unpushed; a has not acknowledged m1's receipt; c has nothing.
    assert.deepEqual(await q("cluster.waiting", { ids: ["a", "b", "c", "zz"], now: fx.now }), {
      deliveries: ["b"],
      receipts: ["a"],
    });
    assert.deepEqual(await q("cluster.waiting", { ids: [], now: fx.now }), {
      deliveries: [],
      receipts: [],
    });
  },
  "cluster.logins": async (q) => {
    // No login yet and no admin close; zz does not exist (a deleted endpoint is not answered).
    assert.deepEqual(await q("cluster.logins", { ids: ["b", "a", "zz"] }), [
      { id: "a", enabled: true, online_since: null, closed_through: null, closed_reason: null },
      { id: "b", enabled: true, online_since: null, closed_through: null, closed_reason: null },
    ]);
    assert.deepEqual(await q("cluster.logins", { ids: [] }), []);
  },
  "presence.times": async (q) => {
    const rows = await q("presence.times", { ids: ["a", "zz"] });
    assert.deepEqual(rows.map((r) => r.id), ["a"]);
  },
  "directory.list": async (q) => {
    const all = await q("directory.list", { cursor: "", limit: 2, query: "" });
    assert.deepEqual(all.items.map((i) => i.id), ["a", "b"]);
    assert.equal(all.next_cursor, "b");
    const c = await q("directory.list", { cursor: "", limit: 10, query: "NAME-C" });
    assert.deepEqual(c.items.map((i) => [i.id, i.talk_password_set]), [["c", true]]);
  },
  "group.list_mine": async (q) => {
    const r = await q("group.list_mine", { endpointId: "b", cursor: "", limit: 10 });
    assert.deepEqual(r.items, [{ id: "g1", name: "G one", owner_id: "a", member_count: 2 }]);
  },
  "group.get": async (q) => {
    const g = await q("group.get", { callerId: "b", groupId: "g1", cursor: "", limit: 10 });
    assert.deepEqual(g.members, [{ id: "a", name: "name-a" }, { id: "b", name: "name-b" }]);
    const refused = async (callerId: string, groupId: string) => {
      try {
        await q("group.get", { callerId, groupId, cursor: "", limit: 10 });
      } catch (err) {
        return (err as { code?: string }).code;
      }
      return "answered";
    };
    assert.equal(await refused("c", "g1"), "not_member");
    assert.equal(await refused("b", "zz"), "not_found");
  },
  "admin.session_expiry": async (q, fx) => {
    assert.equal(
      await q("admin.session_expiry", { tokenHash: "session-hash-1" }),
      fx.sessionExpiresAt,
    );
    assert.equal(await q("admin.session_expiry", { tokenHash: "nope" }), null);
  },
  "admin.token_by_hash": async (q) => {
    assert.equal((await q("admin.token_by_hash", { tokenHash: "token-hash-1" }))?.id, "t1");
    assert.equal(await q("admin.token_by_hash", { tokenHash: "nope" }), null);
  },
  "admin.token_by_id": async (q) => {
    const t = await q("admin.token_by_id", { id: "t1" });
    assert.equal(t?.name, "tok");
    assert.equal(t?.enabled, 1);
    assert.ok(!Object.keys(t ?? {}).some((k) => k.includes("hash")), "no hash in a token row");
  },
  "admin.tokens_list": async (q) => {
    const rows = await q("admin.tokens_list", { after: null, limit: 10 });
    assert.deepEqual(rows.map((r) => r.id), ["t1"]);
  },
  "admin.endpoints_list": async (q) => {
    const all = await q("admin.endpoints_list", { filter: {}, afterId: "", limit: 10 });
    assert.deepEqual(all.map((r) => r.id), ["a", "b", "c"]);
    const after = await q("admin.endpoints_list", { filter: {}, afterId: "a", limit: 1 });
    assert.deepEqual(after.map((r) => r.id), ["b"]);
    const q2 = await q("admin.endpoints_list", {
      filter: { q: "REMARK C" },
      afterId: "",
      limit: 10,
    });
    assert.deepEqual(q2.map((r) => r.id), ["c"]);
  },
  "admin.endpoints_count": async (q) => {
    assert.equal(await q("admin.endpoints_count", { filter: {} }), 3);
    assert.equal(await q("admin.endpoints_count", { filter: { enabled: false } }), 0);
  },
  "admin.endpoint_by_id": async (q) => {
    const c = await q("admin.endpoint_by_id", { id: "c" });
    assert.equal(c?.talk_password_set, 1);
    assert.equal(c?.source, "admin");
    assert.equal(await q("admin.endpoint_by_id", { id: "zz" }), null);
  },
  "admin.endpoint_group_count": async (q) => {
    assert.equal(await q("admin.endpoint_group_count", { id: "b" }), 1);
    assert.equal(await q("admin.endpoint_group_count", { id: "c" }), 0);
  },
  "admin.overview_counts": async (q) => {
    assert.deepEqual(await q("admin.overview_counts", {}), {
      endpoints: 3,
      endpoints_enabled: 3,
      groups: 1,
      pending_deliveries: 1,
      scheduled_messages: 1,
    });
  },
  "admin.registration_settings": async (q) => {
    const r = await q("admin.registration_settings", {});
    assert.equal(r.enabled, true);
    assert.equal(r.code, "c0de");
    assert.equal(typeof r.updated_at, "number");
  },
  "admin.messages_list": async (q) => {
    const rows = await q("admin.messages_list", {
      filter: { sender: "a" },
      beforeSeq: null,
      limit: 10,
    });
    assert.deepEqual(rows.map((r) => r.id), ["m3", "m2", "m1"]);
    const scheduled = await q("admin.messages_list", {
      filter: { states: ["scheduled"] },
      beforeSeq: null,
      limit: 10,
    });
    assert.deepEqual(scheduled.map((r) => r.id), ["m2"]);
  },
  "admin.message_record": async (q, fx) => {
    const m1 = await q("admin.message_record", { seq: fx.seq.m1 });
    assert.equal(m1?.id, "m1");
    assert.equal(m1?.counts.accepted, 1);
    assert.equal(await q("admin.message_record", { seq: fx.seq.m3 + 1000 }), null);
  },
  "admin.message_recipients": async (q, fx) => {
    const rows = await q("admin.message_recipients", { seq: fx.seq.m1, afterId: "", limit: 10 });
    assert.deepEqual(rows.map((r) => [r.endpoint_id, r.state]), [["b", "accepted"]]);
  },
  "admin.groups_list": async (q) => {
    const rows = await q("admin.groups_list", { filter: {}, afterId: "", limit: 10 });
    assert.deepEqual(rows.map((r) => r.id), ["g1"]);
  },
  "admin.groups_count": async (q) => {
    assert.equal(await q("admin.groups_count", { filter: {} }), 1);
    assert.equal(await q("admin.groups_count", { filter: { member: "c" } }), 0);
  },
  "admin.group_record": async (q) => {
    assert.equal((await q("admin.group_record", { id: "g1" }))?.name, "G one");
    assert.equal(await q("admin.group_record", { id: "zz" }), null);
  },
  "admin.group_members": async (q) => {
    const rows = await q("admin.group_members", { groupId: "g1", afterId: "", limit: 10 });
    assert.deepEqual(rows.map((r) => r.id), ["a", "b"]);
  },
  "metrics.window_counts": async (q, fx) => {
    const w = await q("metrics.window_counts", { from: 0, to: BIG });
    assert.equal(w.submitted, 3);
    assert.ok(w.outcomes.some((o) => o.state === "accepted" && o.n === 1), JSON.stringify(w));
    const none = await q("metrics.window_counts", { from: fx.now + HOUR, to: BIG });
    assert.deepEqual(none, { submitted: 0, outcomes: [] });
  },
  "metrics.latency_at_ranks": async (q) => {
    const [first, missing] = await q("metrics.latency_at_ranks", {
      from: 0,
      to: BIG,
      ranks: [0, 5],
    });
    assert.equal(typeof first, "number");
    assert.equal(missing, null);
  },
  "audit.list": async (q, fx) => {
    const all = await q("audit.list", { filter: {}, beforeId: null, limit: 10 });
    assert.deepEqual(all.map((r) => r.action), [
      "endpoints.import",
      "endpoint.kick",
      "endpoint.disable",
    ]);
    for (const r of all) assert.ok(Math.abs(r.at - fx.now) < 60_000, `at ${r.at}`);
    assert.ok(all[0].id > all[1].id && all[1].id > all[2].id);
    // `endpoint` is a family: it matches `endpoint.*` but not `endpoints.*`.
    const family = await q("audit.list", {
      filter: { action: "endpoint" },
      beforeId: null,
      limit: 10,
    });
    assert.deepEqual(family.map((r) => r.target), ["b", "a"]);
    const page = await q("audit.list", { filter: {}, beforeId: all[0].id, limit: 1 });
    assert.deepEqual(page.map((r) => r.id), [all[1].id]);
    const one = await q("audit.list", {
      filter: { actor: "token:ci", result: "not_found", target: "b", from: 0, to: BIG },
      beforeId: null,
      limit: 10,
    });
    assert.deepEqual(one.map((r) => [r.actor, r.ip]), [["token:ci", "127.0.0.1"]]);
    assert.deepEqual(
      await q("audit.list", { filter: { to: 0 }, beforeId: null, limit: 10 }),
      [],
    );
  },
  // Filled by server/store/contract/lockouts_test.ts on both stores; here only nothing locked.
  "lockout.state": async (q, fx) => {
    assert.deepEqual(await q("lockout.state", { keys: ["none"], now: fx.now }), []);
    assert.deepEqual(await q("lockout.state", { keys: [], now: fx.now }), []);
  },
  "node.list": async (q, fx) => {
    const nodes = await q("node.list", {});
    assert.deepEqual(nodes.map((n) => [n.node_id, n.address, n.version]), [
      ["n1", "n1:7443", "9.9"],
      ["n2", "n2:7443", "9.9"],
    ]);
    for (const n of nodes) {
      assert.ok(Math.abs(n.renewed_at - fx.now) < 60_000, `renewed_at ${n.renewed_at}`);
      assert.equal(n.started_at, n.renewed_at);
      assert.equal(n.lease_until, n.renewed_at + HOUR);
    }
  },
  "webhook.get": async (q, fx) => {
    const row = await q("webhook.get", { endpointId: "b" });
    assert.ok(row !== null);
    assert.equal(row.url, "https://hooks.example/b");
    assert.equal(row.secret, "whsec_b");
    assert.equal(row.enabled, true);
    assert.ok(Math.abs(row.createdAt - fx.now) < 60_000, `created ${row.createdAt}`);
    assert.equal(await q("webhook.get", { endpointId: "a" }), null);
  },
  "webhook.list": async (q) => {
    assert.deepEqual((await q("webhook.list", {})).map((w) => w.endpointId), ["b"]);
  },
  "webhook.due": async (q, fx) => {
    // m3 is pending for b and was never attempted.
    assert.deepEqual(await q("webhook.due", { now: fx.now + 60_000 }), ["b"]);
  },
  "webhook.backlog": async (q) => {
    assert.deepEqual(await q("webhook.backlog", {}), { msgs: 1, receipts: 0 });
  },
};

/**
 * Seeds `store` (empty, migrated) through its ops and runs every query check against it. Returns
 * the names checked, which are exactly the registry's.
 *
 * @example
 * ```ts
 * const names = await checkQueryContract(store, Date.now());
 * ```
 */
export async function checkQueryContract(store: ContractStore, now: number): Promise<string[]> {
  const fx = await seed(store, now);
  const names = Object.keys(CHECKS) as (keyof Queries)[];
  for (const name of names) {
    try {
      await CHECKS[name](store.query.bind(store) as ContractStore["query"], fx);
    } catch (err) {
      throw new Error(`Query ${name}: ${(err as Error).message}`, { cause: err });
    }
  }
  return names;
}
