// Groups over MQTT (spec 6.7) and the group rows of the invalidation table (spec 7.6), seen from
// real clients: responses, `group_event` frames (QoS 0), `revoked` frames and receipts.
import assert from "node:assert/strict";
import { type Frame, online, type TestClient } from "./helpers/client.ts";
import { startTestServer, type TestServer } from "./helpers/test_server.ts";

const PW = "device-password-1";

const code = (f: Frame) => (f.error as Record<string, unknown> | undefined)?.code;
const data = <T>(f: Frame): T => {
  assert.equal(f.ok, true, JSON.stringify(f));
  return f.data as T;
};

/** The QoS of every `group_event` any test client received: spec 5 says QoS 0. */
const eventQos: number[] = [];

/** Online clients for `ids`, each recording the QoS of every `group_event` it receives. */
async function connect(t: TestServer, ids: readonly string[]): Promise<TestClient[]> {
  const out: TestClient[] = [];
  for (const id of ids) {
    await t.createEndpoint(id, PW);
    const c = (await online(t.wsUrl, id, PW)).client;
    c.mqtt.on("message", (_topic, payload, packet) => {
      const f = JSON.parse(new TextDecoder().decode(payload)) as Frame;
      if (f.type === "group_event") eventQos.push(packet.qos);
    });
    out.push(c);
  }
  return out;
}

/** Waits for the `group_event` `event` about `who` in `groupId`. */
function event(c: TestClient, groupId: string, kind: string, who: string): Promise<Frame> {
  return c.waitFrame(
    (f) =>
      f.type === "group_event" && f.group_id === groupId && f.event === kind &&
      f.endpoint_id === who,
    `${kind} ${who}`,
  );
}

function groupSend(id: string, groupId: string, extra: Record<string, unknown> = {}) {
  return {
    type: "send",
    id,
    to: { kind: "group", id: groupId },
    body: { enc: "utf8", data: `body of ${id}` },
    delay_ms: 0,
    ...extra,
  };
}

async function withServer(
  overrides: Record<string, unknown>,
  fn: (t: TestServer, closeLater: (c: TestClient[]) => void) => Promise<void>,
): Promise<void> {
  const t = await startTestServer(overrides);
  const clients: TestClient[] = [];
  try {
    await fn(t, (cs) => clients.push(...cs));
  } finally {
    for (const c of clients) await c.close();
    await t.close();
  }
}

Deno.test("group.create adds the members it can and lists each refused one with its code", async () => {
  await withServer({}, async (t, closeLater) => {
    await t.createEndpoint("off", PW, { enabled: false });
    const cs = await connect(t, ["owner", "locked", "guarded", "plain", "keyed"]);
    closeLater(cs);
    const [owner, locked, guarded, plain, keyed] = cs;
    for (const [c, pw] of [[locked, "pl"], [guarded, "pg"], [keyed, "pk"]] as const) {
      data(await c.request({ type: "self.talk_password", talk_password: pw }));
    }
    const created = data<{ group_id: string; added: string[]; failed: unknown[] }>(
      await owner.request({
        type: "group.create",
        rid: "create",
        id: "team-1",
        name: "一组",
        members: [
          { id: "locked" },
          { id: "guarded", talk_password: "wrong" },
          { id: "off" },
          { id: "ghost" },
          { id: "plain" },
          { id: "keyed", talk_password: "pk" },
        ],
      }),
    );
    assert.equal(created.group_id, "team-1");
    assert.deepEqual(created.added, ["plain", "keyed"]);
    assert.deepEqual(created.failed, [
      { id: "locked", code: "talk_password_required" },
      { id: "guarded", code: "talk_password_invalid" },
      { id: "off", code: "endpoint_disabled" },
      { id: "ghost", code: "invalid_target" },
    ]);
    for (const c of [owner, plain, keyed]) {
      await event(c, "team-1", "member_added", "plain");
      await event(c, "team-1", "member_added", "keyed");
    }
    // The events follow the resp: a bulk create must not hold the answer (handlers/groups.ts).
    const order = owner.frames.filter((f) => f.rid === "create" || f.type === "group_event");
    assert.deepEqual(order.map((f) => f.type), ["resp", "group_event", "group_event"]);
    const info = data<{ owner_id: string; member_count: number; name: string }>(
      await plain.request({ type: "group.get", group_id: "team-1" }),
    );
    assert.deepEqual([info.owner_id, info.member_count, info.name], ["owner", 3, "一组"]);
    // The verified talk password became a grant: the owner may now write to `keyed` directly.
    const direct = await owner.request({
      type: "send",
      id: "d1",
      to: { kind: "endpoint", id: "keyed" },
      body: { enc: "utf8", data: "hi" },
      delay_ms: 0,
    });
    assert.equal(direct.ok, true, JSON.stringify(direct));
    const again = await plain.request({ type: "group.create", id: "team-1", members: [] });
    assert.equal(code(again), "id_taken");
    assert.equal(
      locked.frames.some((f) => f.type === "group_event"),
      false,
      "outsiders hear nothing",
    );
    assert.ok(eventQos.length > 0 && eventQos.every((q) => q === 0), "group events are QoS 0");
  });
});

Deno.test("only the owner removes, transfers, renames and dissolves, and every member hears it", async () => {
  await withServer({}, async (t, closeLater) => {
    const cs = await connect(t, ["o", "a", "b", "c", "d"]);
    closeLater(cs);
    const [o, a, b, c, d] = cs;
    const g = data<{ group_id: string }>(
      await o.request({ type: "group.create", name: "g", members: [{ id: "a" }, { id: "b" }] }),
    ).group_id;
    // Adding is open to every member; the owner-only frames below answer `forbidden`.
    const added = data<{ added: string[] }>(
      await a.request({ type: "group.add", group_id: g, members: [{ id: "c" }, { id: "d" }] }),
    );
    assert.deepEqual(added.added, ["c", "d"]);
    await event(d, g, "member_added", "d");
    const ownerOnly = [
      { type: "group.remove", group_id: g, endpoint_id: "b" },
      { type: "group.transfer", group_id: g, endpoint_id: "a" },
      { type: "group.rename", group_id: g, name: "x" },
      { type: "group.dissolve", group_id: g },
    ];
    for (const frame of ownerOnly) {
      assert.equal(code(await a.request(frame)), "forbidden", frame.type);
    }
    data(await o.request({ type: "group.remove", group_id: g, endpoint_id: "d" }));
    for (const m of [o, a, b, c, d]) await event(m, g, "member_removed", "d");
    assert.equal(code(await d.request({ type: "group.get", group_id: g })), "not_member");
    assert.equal(code(await o.request({ type: "group.leave", group_id: g })), "owner_cannot_leave");
    data(await c.request({ type: "group.leave", group_id: g }));
    for (const m of [o, a, b, c]) await event(m, g, "left", "c");
    data(await o.request({ type: "group.transfer", group_id: g, endpoint_id: "a" }));
    for (const m of [o, a, b]) await event(m, g, "owner_changed", "a");
    data(await o.request({ type: "group.leave", group_id: g })); // no longer the owner
    for (const m of [o, a, b]) await event(m, g, "left", "o");
    data(await a.request({ type: "group.rename", group_id: g, name: "新名" }));
    for (const m of [a, b]) await event(m, g, "renamed", "a");
    const info = data<{ name: string; owner_id: string; member_count: number }>(
      await b.request({ type: "group.get", group_id: g }),
    );
    assert.deepEqual([info.name, info.owner_id, info.member_count], ["新名", "a", 2]);
    data(await a.request({ type: "group.dissolve", group_id: g }));
    for (const m of [a, b]) await event(m, g, "dissolved", "a");
    assert.equal(o.frames.some((f) => f.event === "renamed"), false, "a leaver hears no more");
    assert.equal(code(await b.request({ type: "group.get", group_id: g })), "not_found");
    assert.equal(code(await b.request(groupSend("late", g))), "invalid_target");
    assert.ok(eventQos.every((q) => q === 0), "group events are QoS 0");
  });
});

Deno.test("group.list and group.get page by cursor, and group.get refuses non-members", async () => {
  await withServer({}, async (t, closeLater) => {
    const cs = await connect(t, ["m1", "m2", "m3", "m4", "out"]);
    closeLater(cs);
    const [m1, , , , out] = cs;
    const members = [{ id: "m2" }, { id: "m3" }, { id: "m4" }];
    for (const id of ["ga", "gb", "gc"]) {
      data(await m1.request({ type: "group.create", id, name: `n-${id}`, members }));
    }
    type Page<T> = { items: T[]; next_cursor: string };
    const first = data<Page<{ id: string }>>(await m1.request({ type: "group.list", limit: 2 }));
    assert.deepEqual(first.items.map((i) => i.id), ["ga", "gb"]);
    assert.equal(first.next_cursor, "gb");
    const second = data<Page<Record<string, unknown>>>(
      await m1.request({ type: "group.list", limit: 2, cursor: first.next_cursor }),
    );
    assert.deepEqual(second.items, [{ id: "gc", name: "n-gc", owner_id: "m1", member_count: 4 }]);
    assert.equal(second.next_cursor, "");
    assert.deepEqual(data<Page<unknown>>(await out.request({ type: "group.list" })).items, []);
    const seen: { id: string; online: boolean }[] = [];
    let cursor = "";
    do {
      const p = data<{ members: { id: string; online: boolean }[]; next_cursor: string }>(
        await m1.request({ type: "group.get", group_id: "gb", limit: 3, cursor }),
      );
      assert.ok(p.members.length <= 3);
      seen.push(...p.members);
      cursor = p.next_cursor;
    } while (cursor !== "");
    assert.deepEqual(seen.map((m) => m.id), ["m1", "m2", "m3", "m4"]);
    assert.ok(seen.every((m) => m.online), "all members are online");
    assert.equal(code(await out.request({ type: "group.get", group_id: "gb" })), "not_member");
    assert.equal(code(await out.request({ type: "group.get", group_id: "nope" })), "not_found");
    assert.equal(code(await m1.request({ type: "group.list", limit: 201 })), "bad_request");
  });
});

Deno.test("a group holds at most max_group_members, the owner included", async () => {
  await withServer({ limits: { max_group_members: 3 } }, async (t, closeLater) => {
    const cs = await connect(t, ["o", "a", "b", "c"]);
    closeLater(cs);
    const [o, a] = cs;
    const r = data<{ group_id: string; added: string[]; failed: unknown[] }>(
      await o.request({
        type: "group.create",
        name: "small",
        members: [{ id: "a" }, { id: "b" }, { id: "c" }],
      }),
    );
    assert.deepEqual(r.added, ["a", "b"]);
    assert.deepEqual(r.failed, [{ id: "c", code: "group_full" }]);
    const add = data<{ added: string[]; failed: unknown[] }>(
      await a.request({ type: "group.add", group_id: r.group_id, members: [{ id: "c" }] }),
    );
    assert.deepEqual(add, {
      group_id: r.group_id,
      added: [],
      failed: [{ id: "c", code: "group_full" }],
    });
    const tooMany = [{ id: "a" }, { id: "b" }, { id: "c" }, { id: "x" }];
    assert.equal(code(await o.request({ type: "group.create", members: tooMany })), "group_full");
  });
});

Deno.test("leaving or being removed rejects that member's pending group deliveries as left_group", async () => {
  await withServer({}, async (t, closeLater) => {
    const cs = await connect(t, ["o", "m1", "m2", "m3"]);
    closeLater(cs);
    const [o, m1, m2, m3] = cs;
    const members = [{ id: "m1" }, { id: "m2" }, { id: "m3" }];
    const g = data<{ group_id: string }>(
      await o.request({ type: "group.create", members }),
    ).group_id;
    data(await o.request(groupSend("p1", g)));
    for (const m of [m1, m2, m3]) await m.waitFrame((f) => f.type === "msg" && f.id === "p1");
    data(await m3.request({ type: "ack", from: "o", id: "p1" })); // m3 has it: not voided
    data(await m1.request({ type: "group.leave", group_id: g }));
    data(await o.request({ type: "group.remove", group_id: g, endpoint_id: "m2" }));
    for (const m of [m1, m2]) {
      const rv = await m.waitFrame((f) => f.type === "revoked");
      assert.deepEqual([rv.id, rv.from, rv.reason], ["p1", "o", "left_group"]);
    }
    for (const who of ["m1", "m2"]) {
      const rc = await o.waitFrame((f) => f.type === "receipt" && f.endpoint_id === who);
      assert.deepEqual([rc.id, rc.state, rc.reason], ["p1", "rejected", "left_group"]);
    }
    await o.waitFrame((f) => f.type === "receipt" && f.endpoint_id === "m3");
    assert.equal(m3.frames.some((f) => f.type === "revoked"), false);
    // An ack after the rejection reports the final state (spec 6.3).
    assert.deepEqual(data(await m1.request({ type: "ack", from: "o", id: "p1" })), {
      result: "rejected",
    });
    const st = data<{ state: string; counts: Record<string, number> }>(
      await o.request({ type: "status", id: "p1" }),
    );
    assert.equal(st.state, "completed");
    assert.equal(st.counts.rejected, 2);
    assert.equal(st.counts.accepted, 1);
    // A former member may no longer send to the group (spec 7.3 step 3).
    assert.equal(code(await m1.request(groupSend("x1", g))), "not_member");
  });
});

Deno.test("dissolving rejects pending deliveries and completes scheduled group messages as group_dissolved", async () => {
  await withServer({}, async (t, closeLater) => {
    const cs = await connect(t, ["o", "m1", "m2"]);
    closeLater(cs);
    const [o, m1, m2] = cs;
    const g = data<{ group_id: string }>(
      await o.request({ type: "group.create", members: [{ id: "m1" }, { id: "m2" }] }),
    ).group_id;
    data(await o.request(groupSend("now", g)));
    const later = data<{ state: string }>(
      await o.request(groupSend("later", g, { delay_ms: 10000 })),
    );
    assert.equal(later.state, "scheduled");
    await m1.waitFrame((f) => f.type === "msg" && f.id === "now");
    await m2.waitFrame((f) => f.type === "msg" && f.id === "now");
    data(await m2.request({ type: "ack", from: "o", id: "now" }));
    await o.waitFrame((f) => f.type === "receipt" && f.endpoint_id === "m2");
    data(await o.request({ type: "group.dissolve", group_id: g }));
    const rv = await m1.waitFrame((f) => f.type === "revoked");
    assert.deepEqual([rv.id, rv.from, rv.reason], ["now", "o", "group_dissolved"]);
    const rc = await o.waitFrame((f) => f.type === "receipt" && f.endpoint_id === "m1");
    assert.deepEqual([rc.id, rc.state, rc.reason], ["now", "rejected", "group_dissolved"]);
    // spec 6.4: a message-level receipt has endpoint_id "".
    const ml = await o.waitFrame((f) => f.type === "receipt" && f.id === "later");
    assert.deepEqual([ml.endpoint_id, ml.state, ml.reason], ["", "rejected", "group_dissolved"]);
    const st = data<{ state: string; reason: string }>(
      await o.request({ type: "status", id: "later" }),
    );
    assert.deepEqual([st.state, st.reason], ["completed", "group_dissolved"]);
    for (const m of [o, m1, m2]) await event(m, g, "dissolved", "o");
    assert.equal(m2.frames.some((f) => f.type === "revoked"), false, "an acked message stays");
  });
});

Deno.test("a scheduled group message whose sender left completes as sender_left", async () => {
  await withServer({}, async (t, closeLater) => {
    const cs = await connect(t, ["o", "s", "m"]);
    closeLater(cs);
    const [o, s, m] = cs;
    const g = data<{ group_id: string }>(
      await o.request({ type: "group.create", members: [{ id: "s" }, { id: "m" }] }),
    ).group_id;
    const sent = data<{ state: string }>(await s.request(groupSend("soon", g, { delay_ms: 2000 })));
    assert.equal(sent.state, "scheduled");
    data(await s.request({ type: "group.leave", group_id: g }));
    const rc = await s.waitFrame((f) => f.type === "receipt" && f.id === "soon");
    assert.deepEqual([rc.endpoint_id, rc.state, rc.reason], ["", "rejected", "sender_left"]);
    const st = data<{ state: string; reason: string }>(
      await s.request({ type: "status", id: "soon" }),
    );
    assert.deepEqual([st.state, st.reason], ["completed", "sender_left"]);
    const copies = [m, o].flatMap((c) => c.frames.filter((f) => f.type === "msg"));
    assert.deepEqual(copies, [], "nothing was delivered");
  });
});

Deno.test("a message to a group with no other members completes as no_recipients", async () => {
  await withServer({}, async (t, closeLater) => {
    const [o] = await connect(t, ["o"]);
    closeLater([o]);
    const g = data<{ group_id: string }>(
      await o.request({ type: "group.create", name: "alone", members: [] }),
    ).group_id;
    data(await o.request(groupSend("echo", g)));
    const rc = await o.waitFrame((f) => f.type === "receipt" && f.id === "echo");
    assert.deepEqual([rc.endpoint_id, rc.state, rc.reason], ["", "rejected", "no_recipients"]);
    const st = data<{ state: string; reason: string }>(
      await o.request({ type: "status", id: "echo" }),
    );
    assert.deepEqual([st.state, st.reason], ["completed", "no_recipients"]);
    assert.equal(o.frames.some((f) => f.type === "msg"), false, "the sender gets no copy");
  });
});
