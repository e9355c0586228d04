import assert from "node:assert/strict";
import { online } from "./helpers/client.ts";
import { startTestServer } from "./helpers/test_server.ts";

const PW = "device-password-1";
const send = (id: string, to: string, extra: Record<string, unknown> = {}) => ({
  type: "send",
  id,
  to: { kind: "endpoint", id: to },
  body: { enc: "utf8", data: "hi" },
  delay_ms: 0,
  ...extra,
});
const code = (f: Record<string, unknown>) => (f.error as Record<string, unknown> | undefined)?.code;

Deno.test("talk passwords: refused without, unlocked with, invalid after a change, and a reply needs none", async () => {
  const t = await startTestServer();
  try {
    for (const id of ["a", "b"]) await t.createEndpoint(id, PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    const b = (await online(t.wsUrl, "b", PW)).client;
    assert.equal(
      (await b.request({ type: "self.talk_password", talk_password: "open-b" })).ok,
      true,
    );
    assert.equal(code(await a.request(send("m1", "b"))), "talk_password_required");
    assert.equal(
      code(await a.request(send("m2", "b", { talk_password: "wrong" }))),
      "talk_password_invalid",
    );
    const ok = await a.request(send("m3", "b", { talk_password: "open-b" }));
    assert.equal(ok.ok, true, JSON.stringify(ok));
    // The grant now lets `a` write without the password, even with a wrong one attached.
    assert.equal((await a.request(send("m4", "b", { talk_password: "wrong" }))).ok, true);
    // b changes its password: old grants are void.
    assert.equal(
      (await b.request({ type: "self.talk_password", talk_password: "new-b" })).ok,
      true,
    );
    assert.equal(code(await a.request(send("m5", "b"))), "talk_password_required");
    assert.equal(
      code(await a.request({ type: "unlock", endpoint_id: "b", talk_password: "open-b" })),
      "talk_password_invalid",
    );
    assert.equal(
      (await a.request({ type: "unlock", endpoint_id: "b", talk_password: "new-b" })).ok,
      true,
    );
    assert.equal((await a.request(send("m6", "b"))).ok, true);
    // a sets a password and writes to b first: b may reply without it (reply grant).
    assert.equal(
      (await a.request({ type: "self.talk_password", talk_password: "open-a" })).ok,
      true,
    );
    assert.equal(code(await b.request(send("r1", "a"))), "talk_password_required");
    assert.equal((await a.request(send("m7", "b"))).ok, true);
    assert.equal((await b.request(send("r2", "a"))).ok, true);
    await a.close();
    await b.close();
  } finally {
    await t.close();
  }
});

Deno.test("a group message reaches both members once and not the sender", async () => {
  const t = await startTestServer();
  try {
    for (const id of ["o", "m1", "m2"]) await t.createEndpoint(id, PW);
    const o = (await online(t.wsUrl, "o", PW)).client;
    const m1 = (await online(t.wsUrl, "m1", PW)).client;
    const m2 = (await online(t.tcpUrl, "m2", PW)).client;
    const created = await o.request({
      type: "group.create",
      name: "一组",
      members: [{ id: "m1" }, { id: "m2" }, { id: "ghost" }],
    });
    assert.equal(created.ok, true, JSON.stringify(created));
    const data = created.data as { group_id: string; added: string[]; failed: unknown[] };
    assert.match(data.group_id, /^g_[a-z0-9]{8}$/);
    assert.deepEqual(data.added.sort(), ["m1", "m2"]);
    assert.deepEqual(data.failed, [{ id: "ghost", code: "invalid_target" }]);
    await m1.waitFrame((f) => f.type === "group_event" && f.event === "member_added");
    const sent = await o.request({
      type: "send",
      id: "g1",
      to: { kind: "group", id: data.group_id },
      body: { enc: "utf8", data: "大家好" },
      delay_ms: 0,
    });
    assert.equal(sent.ok, true, JSON.stringify(sent));
    const f1 = await m1.waitFrame((f) => f.type === "msg" && f.id === "g1");
    const f2 = await m2.waitFrame((f) => f.type === "msg" && f.id === "g1");
    assert.deepEqual(f1, f2);
    assert.deepEqual(f1.to, { kind: "group", id: data.group_id });
    await m1.request({ type: "ack", from: "o", id: "g1" });
    await m2.request({ type: "ack", from: "o", id: "g1" });
    const receipts = [
      await o.waitFrame((f) => f.type === "receipt" && f.endpoint_id === "m1"),
      await o.waitFrame((f) => f.type === "receipt" && f.endpoint_id === "m2"),
    ];
    assert.ok(receipts.every((r) => r.state === "accepted"));
    assert.equal(o.frames.filter((f) => f.type === "msg").length, 0, "the sender gets nothing");
    const got = await m1.request({ type: "group.get", group_id: data.group_id });
    assert.equal((got.data as { member_count: number }).member_count, 3);
    const stranger = await t.createEndpoint("x", PW).then(() => online(t.wsUrl, "x", PW));
    const denied = await stranger.client.request({ type: "group.get", group_id: data.group_id });
    assert.equal(code(denied), "not_member");
    for (const c of [o, m1, m2, stranger.client]) await c.close();
  } finally {
    await t.close();
  }
});

Deno.test("presence watch reports online and offline, and a takeover is not an offline", async () => {
  const t = await startTestServer();
  try {
    for (const id of ["w", "p"]) await t.createEndpoint(id, PW);
    const w = (await online(t.wsUrl, "w", PW)).client;
    assert.equal((await w.request({ type: "presence.watch", ids: ["p"] })).ok, true);
    const p1 = await online(t.wsUrl, "p", PW);
    await w.waitFrame((f) => f.type === "presence" && f.id === "p" && f.online === true);
    const p2 = await online(t.wsUrl, "p", p1.token!); // takeover by token
    await p1.client.until(() => p1.client.closed, "old connection closed");
    await p2.client.close();
    await w.waitFrame((f) => f.type === "presence" && f.id === "p" && f.online === false);
    const offline = w.frames.filter((f) => f.type === "presence" && f.online === false);
    assert.equal(offline.length, 1, "only the real disconnect is an offline");
    const got = await w.request({ type: "presence.get", ids: ["p", "nobody"] });
    const items = (got.data as { items: Record<string, unknown>[] }).items;
    assert.equal(items[0].online, false);
    assert.equal(items[1].not_found, true);
    const dir = await w.request({ type: "directory.list", query: "" });
    const ids = (dir.data as { items: { id: string }[] }).items.map((i) => i.id);
    assert.deepEqual(ids, ["p", "w"]);
    await w.close();
  } finally {
    await t.close();
  }
});

Deno.test("unlock checks the password even while a grant exists: wrong is talk_password_invalid, the grant stays", async () => {
  const t = await startTestServer();
  try {
    for (const id of ["a", "b"]) await t.createEndpoint(id, PW);
    const a = (await online(t.wsUrl, "a", PW)).client;
    const b = (await online(t.wsUrl, "b", PW)).client;
    assert.equal(
      (await b.request({ type: "self.talk_password", talk_password: "open-b" })).ok,
      true,
    );
    const unlock = (pw: string) =>
      a.request({ type: "unlock", endpoint_id: "b", talk_password: pw });
    assert.equal((await unlock("open-b")).ok, true);
    // spec 6.6: unlock is the password check, so a wrong one is refused despite the grant ...
    assert.equal(code(await unlock("wrong")), "talk_password_invalid");
    // ... and the grant is untouched: sends need no password, a wrong extra one is ignored (6.3).
    assert.equal((await a.request(send("g1", "b"))).ok, true);
    assert.equal((await a.request(send("g2", "b", { talk_password: "wrong" }))).ok, true);
    assert.equal((await unlock("open-b")).ok, true);
    // Unlocking oneself, or an endpoint without a talk password, succeeds whatever is given.
    assert.equal(
      (await b.request({ type: "unlock", endpoint_id: "b", talk_password: "anything" })).ok,
      true,
    );
    assert.equal(
      (await b.request({ type: "unlock", endpoint_id: "a", talk_password: "anything" })).ok,
      true,
    );
    await a.close();
    await b.close();
  } finally {
    await t.close();
  }
});
