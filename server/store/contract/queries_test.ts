import assert from "node:assert/strict";
import { binaryArgs } from "../ops/_testing.ts";
import { type ContractStore, contractTest, T0 } from "./_stores.ts";

// Every read query of server/store/queries/mod.ts, on both stores, against the same rows.

async function world(s: ContractStore): Promise<void> {
  await s.addEndpoint("a", { name: "Alice", onlineSince: T0 - 10, offlineSince: T0 - 5 });
  await s.addEndpoint("b", { name: "Bob", talkHash: "hb", talkVersion: 2, sessionHash: "sb" });
  await s.addEndpoint("Zed", { name: "zed", enabled: false });
  await s.addGroup("g1", ["a", "b"]);
  await s.addGroup("g2", ["b"]);
  await s.run("context.connected", { endpointId: "b", connCode: "cb" });
  await s.run("talk.grant", { senderId: "a", targetId: "b", kind: "password", talkVersion: 2 });
}

contractTest("endpoint, settings and talk queries read what the ops wrote", async (s) => {
  await world(s);
  await s.run("settings.set", { key: "registration_code", value: "c0de" });
  assert.equal(await s.query("settings.get", { key: "registration_code" }), "c0de");
  assert.equal(await s.query("settings.get", { key: "admin_password_hash" }), null);
  assert.deepEqual(await s.query("endpoint.login_row", { id: "b" }), {
    id: "b",
    enabled: 1,
    login_hash: "x",
    session_hash: "sb",
    session_used_at: null,
  });
  assert.equal(await s.query("endpoint.login_row", { id: "nobody" }), null);
  const self = await s.query("endpoint.self_row", { id: "b" });
  assert.deepEqual({ ...self }, {
    id: "b",
    name: "Bob",
    remark: "",
    source: "admin",
    default_delay_ms: 0,
    enabled: 1,
    created_at: 0,
    talk_password_set: 1,
  });
  assert.equal(await s.query("endpoint.exists", { id: "Zed" }), true);
  assert.equal(await s.query("endpoint.exists", { id: "zed" }), false);
  assert.deepEqual(await s.query("endpoint.existing", { ids: ["b", "nobody", "Zed", "a"] }), [
    "Zed",
    "a",
    "b",
  ]);
  assert.deepEqual(await s.query("endpoint.existing", { ids: [] }), []);
  assert.deepEqual(await s.query("talk.grant_state", { senderId: "a", targetId: "b" }), {
    found: true,
    needsPassword: false,
    hasValidGrant: true,
    talkHash: "hb",
    talkVersion: 2,
  });
});

contractTest(
  "message queries: status pages, frame source, pending, receipts, next due",
  async (s) => {
    await world(s);
    for (const id of ["c", "d"]) await s.addEndpoint(id);
    await s.addGroup("g3", ["a", "b", "c", "d"]);
    const m = await s.run(
      "message.submit",
      binaryArgs("s1", { toKind: "group", toId: "g3", keep: true }),
    );
    await s.run("message.submit", binaryArgs("later", { sendAt: T0 + 5000 }));
    assert.equal(await s.query("message.send_key_exists", { senderId: "a", id: "s1" }), true);
    assert.equal(await s.query("message.send_key_exists", { senderId: "b", id: "s1" }), false);
    await s.run("delivery.ack", { endpointId: "c", from: "a", id: "s1" });
    const first = await s.query("message.status", {
      senderId: "a",
      id: "s1",
      cursor: "",
      limit: 2,
    });
    assert.deepEqual(first, {
      id: "s1",
      state: "dispatched",
      reason: "",
      sendAtMs: T0,
      counts: { pending: 2, accepted: 1, recalled: 0, expired: 0, dropped: 0, rejected: 0 },
      items: [
        { endpointId: "b", state: "pending", reason: "" },
        { endpointId: "c", state: "accepted", reason: "" },
      ],
      nextCursor: "c",
    });
    const second = await s.query("message.status", {
      senderId: "a",
      id: "s1",
      cursor: "c",
      limit: 2,
    });
    assert.deepEqual([second?.items, second?.nextCursor], [[{
      endpointId: "d",
      state: "pending",
      reason: "",
    }], ""]);
    assert.equal(
      await s.query("message.status", { senderId: "a", id: "none", cursor: "", limit: 5 }),
      null,
    );
    const frame = await s.query("message.frame_source", { seq: m.seq! });
    assert.deepEqual({ ...frame!, body: [...frame!.body] }, {
      id: "s1",
      senderId: "a",
      destKind: "group",
      destId: "g3",
      body: [1],
      bodyEnc: "base64",
      contentType: "application/octet-stream",
      meta: "{}",
      sendAt: T0,
    });
    assert.equal(await s.query("message.any_pending", { seq: m.seq! }), true);
    assert.equal(await s.query("message.next_due_at", {}), T0 + 5000);
    const receipts = await s.query("receipt.pending", {
      senderId: "a",
      afterReceiptId: 0,
      limit: 10,
    });
    assert.deepEqual(receipts.map((r) => `${r.msgId}:${r.endpointId}:${r.state}`), [
      "s1:c:accepted",
    ]);
    assert.deepEqual(
      await s.query("receipt.pending", {
        senderId: "a",
        afterReceiptId: receipts[0].receiptId,
        limit: 10,
      }),
      [],
    );
  },
);

contractTest("presence, directory and group queries page by id in byte order", async (s) => {
  await world(s);
  assert.deepEqual(await s.query("presence.times", { ids: ["a", "nobody"] }), [
    { id: "a", online_since: T0 - 10, offline_since: T0 - 5 },
  ]);
  const page1 = await s.query("directory.list", { cursor: "", limit: 2, query: "" });
  // Byte order, as SQLite: upper case before lower case.
  assert.deepEqual(page1.items.map((i) => i.id), ["Zed", "a"]);
  assert.equal(page1.next_cursor, "a");
  const page2 = await s.query("directory.list", { cursor: "a", limit: 2, query: "" });
  assert.deepEqual([page2.items.map((i) => i.id), page2.next_cursor], [["b"], ""]);
  const found = await s.query("directory.list", { cursor: "", limit: 10, query: "BO" });
  assert.deepEqual(found.items, [{
    id: "b",
    name: "Bob",
    online_since_ms: null,
    offline_since_ms: T0,
    talk_password_set: true,
  }]);
  assert.deepEqual(await s.query("group.list_mine", { endpointId: "b", cursor: "", limit: 1 }), {
    items: [{ id: "g1", name: "g1", owner_id: "a", member_count: 2 }],
    next_cursor: "g1",
  });
  assert.deepEqual(
    await s.query("group.get", { callerId: "b", groupId: "g1", cursor: "", limit: 10 }),
    {
      id: "g1",
      name: "g1",
      owner_id: "a",
      member_count: 2,
      members: [{ id: "a", name: "Alice" }, { id: "b", name: "Bob" }],
      next_cursor: "",
    },
  );
  for (
    const [args, code] of [
      [{ callerId: "Zed", groupId: "g1" }, "not_member"],
      [{ callerId: "a", groupId: "nope" }, "not_found"],
    ] as const
  ) {
    await assert.rejects(
      () => s.query("group.get", { ...args, cursor: "", limit: 5 }),
      (e) => (e as { code?: string }).code === code,
    );
  }
});

contractTest("admin queries: sessions, tokens, endpoints, overview, registration", async (s) => {
  await world(s);
  await s.run("admin.session_create", { tokenHash: "sess", expiresAt: T0 + 99 });
  assert.equal(await s.query("admin.session_expiry", { tokenHash: "sess" }), T0 + 99);
  assert.equal(await s.query("admin.session_expiry", { tokenHash: "none" }), null);
  await s.run("admin.token_create", { id: "t1", name: "one", tokenHash: "h1" }, T0);
  await s.run("admin.token_create", { id: "t2", name: "two", tokenHash: "h2" }, T0);
  await s.run("admin.token_create", { id: "t3", name: "three", tokenHash: "h3" }, T0 + 1);
  assert.equal((await s.query("admin.token_by_hash", { tokenHash: "h2" }))?.id, "t2");
  assert.deepEqual(await s.query("admin.token_by_id", { id: "t1" }), {
    id: "t1",
    name: "one",
    enabled: 1,
    created_at: T0,
    last_used_at: null,
  });
  const tokens = await s.query("admin.tokens_list", { after: null, limit: 2 });
  assert.deepEqual(tokens.map((t) => t.id), ["t3", "t2"]);
  const more = await s.query("admin.tokens_list", { after: { createdAt: T0, id: "t2" }, limit: 5 });
  assert.deepEqual(more.map((t) => t.id), ["t1"]);
  const listed = await s.query("admin.endpoints_list", {
    filter: { q: "b" },
    afterId: "",
    limit: 10,
  });
  assert.deepEqual(listed.map((e) => e.id), ["b"]);
  assert.deepEqual(
    (await s.query("admin.endpoints_list", { filter: { q: "ZED" }, afterId: "", limit: 10 })).map((
      e,
    ) => e.id),
    ["Zed"],
  );
  assert.equal(await s.query("admin.endpoints_count", { filter: { enabled: true } }), 2);
  assert.equal(await s.query("admin.endpoints_count", { filter: { q: "%" } }), 0);
  const b = await s.query("admin.endpoint_by_id", { id: "b" });
  assert.deepEqual([b?.talk_password_set, b?.session_active, b?.enabled], [1, 1, 1]);
  assert.equal(await s.query("admin.endpoint_group_count", { id: "b" }), 2);
  assert.deepEqual(await s.query("admin.overview_counts", {}), {
    endpoints: 3,
    endpoints_enabled: 2,
    groups: 2,
    pending_deliveries: 0,
    scheduled_messages: 0,
  });
  await s.run("admin.registration_set", { enabled: true, code: "k" }, T0 + 7);
  assert.deepEqual(await s.query("admin.registration_settings", {}), {
    enabled: true,
    code: "k",
    updated_at: T0 + 7,
  });
});

contractTest(
  "admin record queries: messages newest first with counts, groups, members",
  async (s) => {
    await world(s);
    const m1 = await s.run("message.submit", binaryArgs("r1", { toKind: "group", toId: "g1" }), T0);
    const m2 = await s.run("message.submit", binaryArgs("r2", { sendAt: T0 + 100 }), T0 + 1);
    const all = await s.query("admin.messages_list", { filter: {}, beforeSeq: null, limit: 10 });
    assert.deepEqual(all.map((m) => m.id), ["r2", "r1"]);
    assert.equal(all[1].counts.pending, 1);
    const scheduled = await s.query("admin.messages_list", {
      filter: { states: ["scheduled"], sender: "a" },
      beforeSeq: null,
      limit: 10,
    });
    assert.deepEqual(scheduled.map((m) => m.seq), [m2.seq]);
    const toB = await s.query("admin.messages_list", {
      filter: { recipient: "b", from: T0, to: T0 + 1 },
      beforeSeq: m2.seq!,
      limit: 10,
    });
    assert.deepEqual(toB.map((m) => m.seq), [m1.seq]);
    const rec = await s.query("admin.message_record", { seq: m1.seq! });
    assert.deepEqual([rec?.dest_kind, rec?.counts.pending, rec?.keep], ["group", 1, 0]);
    assert.equal(await s.query("admin.message_record", { seq: 999_999 }), null);
    const recipients = await s.query("admin.message_recipients", {
      seq: m1.seq!,
      afterId: "",
      limit: 5,
    });
    assert.deepEqual(recipients.map((r) => `${r.endpoint_id}:${r.state}:${r.attempts}`), [
      "b:pending:0",
    ]);
    assert.deepEqual(
      (await s.query("admin.groups_list", { filter: { member: "a" }, afterId: "", limit: 5 })).map((
        g,
      ) => `${g.id}:${g.members}`),
      ["g1:2"],
    );
    assert.equal(await s.query("admin.groups_count", { filter: { q: "G" } }), 2);
    assert.deepEqual(await s.query("admin.group_record", { id: "g2" }), {
      id: "g2",
      name: "g2",
      owner_id: "b",
      created_at: 0,
      members: 1,
    });
    assert.deepEqual(
      await s.query("admin.group_members", { groupId: "g1", afterId: "a", limit: 5 }),
      [
        { id: "b", name: "Bob", joined_at: 1 },
      ],
    );
  },
);

contractTest("metrics queries count a window and rank its latencies", async (s) => {
  await world(s);
  for (const [id, at] of [["k1", 10], ["k2", 30], ["k3", 20]] as const) {
    await s.run("message.submit", binaryArgs(id, { toId: "b" }), T0);
    await s.run("delivery.ack", { endpointId: "b", from: "a", id }, T0 + at);
  }
  assert.deepEqual(await s.query("metrics.window_counts", { from: T0 - 1, to: T0 + 100 }), {
    submitted: 3,
    outcomes: [{ state: "accepted", reason: "", n: 3 }],
  });
  assert.deepEqual(
    await s.query("metrics.latency_at_ranks", { from: T0, to: T0 + 100, ranks: [0, 2, 3] }),
    [10, 30, null],
  );
});
