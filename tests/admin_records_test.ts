// The admin API's read side and its remaining writes (spec 8): message records without bodies,
// groups with their events, registration settings, overview and settings.
import assert from "node:assert/strict";
import { online } from "./helpers/client.ts";
import { type AdminClient, adminSession, auditLines } from "./helpers/admin.ts";

const PW = "device-password-1";
const SECRET_BODY = "zebra-quartz-7731-body";

type Item = Record<string, unknown>;

/** Every key anywhere in a JSON value. */
function keys(value: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) value.forEach((v) => keys(v, out));
  else if (typeof value === "object" && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      out.add(k);
      keys(v, out);
    }
  }
  return out;
}

/** GETs every read route and checks that no answer holds `text` or a `body` key (spec 8). */
async function assertNoBodyAnywhere(admin: AdminClient, paths: string[], text: string) {
  for (const path of paths) {
    const r = await admin.get(path);
    assert.equal(r.status, 200, `${path}: ${r.text}`);
    assert.ok(!r.text.includes(text), `${path} leaks the body`);
    assert.ok(!keys(r.json).has("body"), `${path} has a body field`);
    assert.ok(!keys(r.json).has("meta"), `${path} has a meta field`);
  }
}

Deno.test("no admin response contains a message body; records list and detail show states and counts", async () => {
  const { t, admin } = await adminSession();
  try {
    for (const id of ["alice", "bob", "carol"]) await t.createEndpoint(id, PW);
    const a = await online(t.wsUrl, "alice", PW);
    const b = await online(t.wsUrl, "bob", PW);
    const sent = await a.client.request({
      type: "send",
      id: "msg-1",
      to: { kind: "endpoint", id: "bob" },
      body: { enc: "utf8", data: SECRET_BODY },
      meta: { note: SECRET_BODY },
      delay_ms: 0,
    });
    assert.equal(sent.ok, true, JSON.stringify(sent));
    const later = await a.client.request({
      type: "send",
      id: "msg-2",
      to: { kind: "endpoint", id: "carol" },
      body: { enc: "utf8", data: SECRET_BODY },
      delay_ms: 3_600_000,
    });
    assert.equal(later.ok, true);
    await b.client.waitFrame((f) => f.type === "msg" && f.id === "msg-1");

    const list = await admin.get("/api/admin/messages");
    const items = list.data.items as Item[];
    assert.deepEqual(items.map((m) => [m.id, m.state]), [
      ["msg-2", "scheduled"],
      ["msg-1", "dispatched"],
    ]);
    const first = items[1];
    assert.deepEqual(
      [first.sender_id, first.dest_kind, first.dest_id, first.keep, first.receipt],
      ["alice", "endpoint", "bob", false, true],
    );
    assert.equal((first.counts as Item).pending, 1);
    const seq = first.seq as number;
    const detail = await admin.get(`/api/admin/messages/${seq}`);
    assert.deepEqual((detail.data.items as Item[]).map((r) => [r.endpoint_id, r.state]), [
      ["bob", "pending"],
    ]);
    assert.equal(typeof (detail.data.items as Item[])[0].pushed_at, "number");

    const ids = async (q: string) =>
      ((await admin.get(`/api/admin/messages${q}`)).data.items as Item[]).map((m) => m.id);
    assert.deepEqual(await ids("?state=scheduled"), ["msg-2"]);
    assert.deepEqual(await ids("?state=scheduled,dispatched"), ["msg-2", "msg-1"]);
    assert.deepEqual(await ids("?dest=bob"), ["msg-1"]);
    assert.deepEqual(await ids("?recipient=bob"), ["msg-1"]);
    assert.deepEqual(await ids("?sender=bob"), []);
    assert.deepEqual(await ids("?from=1&to=2"), []);
    assert.deepEqual(await ids("?limit=1"), ["msg-2"]);
    const page = await admin.get("/api/admin/messages?limit=1");
    assert.deepEqual(await ids(`?limit=1&cursor=${page.data.next_cursor}`), ["msg-1"]);
    assert.equal((await admin.get("/api/admin/messages?state=lost")).status, 400);
    assert.equal((await admin.get("/api/admin/messages/999999")).status, 404);
    assert.equal((await admin.get("/api/admin/messages/abc")).status, 404);

    await admin.post("/api/admin/groups", { id: "g1", name: "一组", owner_id: "alice" });
    await assertNoBodyAnywhere(admin, [
      "/api/admin/me",
      "/api/admin/overview",
      "/api/admin/settings",
      "/api/admin/tokens",
      "/api/admin/endpoints",
      "/api/admin/endpoints/alice",
      "/api/admin/endpoints/bob",
      "/api/admin/registration",
      "/api/admin/groups",
      "/api/admin/groups/g1",
      "/api/admin/messages",
      "/api/admin/messages?state=scheduled",
      `/api/admin/messages/${seq}`,
      `/api/admin/messages/${items[0].seq}`,
    ], SECRET_BODY);
    assert.ok(!JSON.stringify(t.logs).includes(SECRET_BODY), "nor does any log line");
    await a.client.close();
    await b.client.close();
  } finally {
    await t.close();
  }
});

Deno.test("groups: create with an owner, add, remove, transfer, rename and dissolve, with events to online members", async () => {
  const { t, admin } = await adminSession();
  try {
    for (const id of ["own", "m1", "m2", "off"]) await t.createEndpoint(id, PW);
    await admin.put("/api/admin/endpoints/m1/talk-password", { talk_password: "secret" });
    await admin.patch("/api/admin/endpoints/off", { enabled: false });
    const m1 = await online(t.wsUrl, "m1", PW);
    const created = await admin.post("/api/admin/groups", {
      name: "一组",
      owner_id: "own",
      members: ["m1", "off", "ghost"],
    });
    assert.equal(created.status, 200, created.text);
    const group = created.data.item as Item;
    const gid = group.id as string;
    assert.match(gid, /^g_[0-9a-z]{8}$/);
    assert.deepEqual([group.name, group.owner_id, group.members], ["一组", "own", 2]);
    assert.deepEqual(created.data.failed, [
      { id: "off", code: "endpoint_disabled" },
      { id: "ghost", code: "invalid_target" },
    ], "no talk password needed for m1 (spec 8)");
    await m1.client.waitFrame((f) =>
      f.type === "group_event" && f.event === "member_added" && f.endpoint_id === "m1"
    );

    const added = await admin.post(`/api/admin/groups/${gid}/members`, { members: ["m2"] });
    assert.deepEqual(added.data, { added: ["m2"], failed: [] });
    await m1.client.waitFrame((f) => f.event === "member_added" && f.endpoint_id === "m2");
    const detail = await admin.get(`/api/admin/groups/${gid}`);
    assert.deepEqual((detail.data.items as Item[]).map((m) => [m.id, m.online]), [
      ["m1", true],
      ["m2", false],
      ["own", false],
    ]);

    const moved = await admin.post(`/api/admin/groups/${gid}/transfer`, { endpoint_id: "m1" });
    assert.equal((moved.data.item as Item).owner_id, "m1");
    await m1.client.waitFrame((f) => f.event === "owner_changed" && f.endpoint_id === "m1");
    const ownerOut = await admin.delete(`/api/admin/groups/${gid}/members/m1`);
    assert.equal(ownerOut.status, 403, "the owner cannot be removed");
    const removed = await admin.delete(`/api/admin/groups/${gid}/members/m2`);
    assert.equal(removed.status, 200, removed.text);
    await m1.client.waitFrame((f) => f.event === "member_removed" && f.endpoint_id === "m2");
    const notMember = await admin.delete(`/api/admin/groups/${gid}/members/m2`);
    assert.equal(notMember.code, "not_member");

    const renamed = await admin.patch(`/api/admin/groups/${gid}`, { name: "新名" });
    assert.equal((renamed.data.item as Item).name, "新名");
    await m1.client.waitFrame((f) => f.event === "renamed");
    const list = await admin.get("/api/admin/groups?member=own");
    assert.deepEqual((list.data.items as Item[]).map((g) => g.id), [gid]);
    assert.equal(list.data.total, 1);
    assert.deepEqual((await admin.get("/api/admin/groups?q=zzz")).data.items, []);

    const taken = await admin.post("/api/admin/groups", { id: gid, name: "x", owner_id: "own" });
    assert.equal(taken.status, 409);
    const noOwner = await admin.post("/api/admin/groups", { name: "x", owner_id: "ghost" });
    assert.equal(noOwner.status, 404);
    assert.equal((await admin.delete(`/api/admin/groups/${gid}`)).status, 200);
    await m1.client.waitFrame((f) => f.event === "dissolved");
    assert.equal((await admin.get(`/api/admin/groups/${gid}`)).status, 404);
    const actions = auditLines(t).filter((l) => l.object === gid).map((l) => l.action);
    assert.deepEqual(actions, [
      "group.create",
      "group.add",
      "group.transfer",
      "group.rename",
      "group.create",
      "group.dissolve",
    ]);
    await m1.client.close();
  } finally {
    await t.close();
  }
});

Deno.test("registration settings: a generated code, enabling, and the code working on /api/client/register", async () => {
  const { t, admin } = await adminSession();
  try {
    const initial = await admin.get("/api/admin/registration");
    assert.deepEqual(initial.data, { enabled: false, code: "", updated_at: null });
    const noCode = await admin.put("/api/admin/registration", { enabled: true });
    assert.equal(noCode.status, 400, "enabling needs a code");
    const gen = await admin.put("/api/admin/registration", { generate: true, enabled: true });
    assert.equal(gen.status, 200, gen.text);
    const code = gen.data.code as string;
    assert.match(code, /^[A-Za-z2-9]{16}$/);
    assert.equal(gen.data.enabled, true);
    assert.equal(typeof gen.data.updated_at, "number");
    const reg = await fetch(`${t.httpUrl}/api/client/register`, {
      method: "POST",
      body: JSON.stringify({ registration_code: code, id: "self-1", login_password: PW }),
    });
    assert.equal(reg.status, 200, await reg.text());
    const self = await admin.get("/api/admin/endpoints?source=self");
    assert.deepEqual((self.data.items as Item[]).map((i) => i.id), ["self-1"]);
    const set = await admin.put("/api/admin/registration", { code: "my-own-code-1" });
    assert.equal(set.data.code, "my-own-code-1");
    assert.equal((await admin.put("/api/admin/registration", { code: "short" })).status, 400);
    const both = await admin.put("/api/admin/registration", {
      code: "another-code",
      generate: true,
    });
    assert.equal(both.status, 400);
    const off = await admin.put("/api/admin/registration", { enabled: false });
    assert.equal(off.data.enabled, false);
    const logs = JSON.stringify(t.logs);
    assert.ok(!logs.includes(code) && !logs.includes("my-own-code-1"), "codes are never logged");
    assert.ok(auditLines(t).some((l) => l.action === "registration.update" && l.result === "ok"));
  } finally {
    await t.close();
  }
});

Deno.test("the overview counts endpoints, online endpoints, connections, pending and scheduled", async () => {
  const { t, admin } = await adminSession();
  try {
    for (const id of ["o1", "o2", "o3"]) await t.createEndpoint(id, PW);
    await admin.patch("/api/admin/endpoints/o3", { enabled: false });
    const one = await online(t.tcpUrl, "o1", PW);
    await one.client.request({
      type: "send",
      id: "x1",
      to: { kind: "endpoint", id: "o2" },
      body: { enc: "utf8", data: "hi" },
      delay_ms: 0,
      offline: { keep: true },
    });
    await one.client.request({
      type: "send",
      id: "x2",
      to: { kind: "endpoint", id: "o2" },
      body: { enc: "utf8", data: "hi" },
      delay_ms: 600_000,
    });
    const r = await admin.get("/api/admin/overview");
    const d = r.data;
    assert.equal(d.version, "0.1.0");
    assert.deepEqual(
      [d.endpoints, d.endpoints_enabled, d.online, d.pending_deliveries, d.scheduled_messages],
      [3, 2, 1, 1, 1],
    );
    assert.deepEqual(d.connections, { ws: 0, tcp: 1 });
    await one.client.close();
  } finally {
    await t.close();
  }
});

Deno.test("the settings show the configuration but never the metrics token", async () => {
  const { t, admin } = await adminSession({ metrics: { token: "metrics-secret-token" } });
  try {
    const r = await admin.get("/api/admin/settings");
    assert.equal(r.status, 200);
    assert.ok(!r.text.includes("metrics-secret-token"));
    assert.deepEqual(r.data.metrics, { token_set: true });
    assert.equal((r.data.limits as Item).max_body_bytes, 262144);
    assert.equal((r.data.tls as Item).enabled, false);
    // The configured port is 0; the real one is the port the system chose.
    assert.equal(r.data.listen, "127.0.0.1:0");
    assert.equal(r.data.listen_bound, `127.0.0.1:${t.port}`);
    assert.equal(r.data.admin_listen_bound, "");
  } finally {
    await t.close();
  }
});
