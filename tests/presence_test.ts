// Presence, watches and the directory over MQTT (spec 6.5). A negative ("no notification")
// is checked after a later notification on the same connection, or after a request round trip
// on it: QoS 0 frames on one connection arrive in the order the server wrote them.
import assert from "node:assert/strict";
import { type Frame, online, type TestClient } from "./helpers/client.ts";
import { startTestServer, type TestServer } from "./helpers/test_server.ts";

const PW = "device-password-1";

const code = (f: Frame) => (f.error as Record<string, unknown> | undefined)?.code;
const data = <T>(f: Frame): T => {
  assert.equal(f.ok, true, JSON.stringify(f));
  return f.data as T;
};
const isPresence = (id: string, isOnline: boolean) => (f: Frame) =>
  f.type === "presence" && f.id === id && f.online === isOnline;
const presenceOf = (c: TestClient, id: string) =>
  c.frames.filter((f) => f.type === "presence" && f.id === id);

async function withServer(
  fn: (t: TestServer, closeLater: (c: TestClient) => TestClient) => Promise<void>,
): Promise<void> {
  const t = await startTestServer();
  const clients: TestClient[] = [];
  try {
    await fn(t, (c) => {
      clients.push(c);
      return c;
    });
  } finally {
    for (const c of clients) await c.close();
    await t.close();
  }
}

Deno.test("a watch reports the watched endpoint coming and going, and no other", async () => {
  await withServer(async (t, keep) => {
    for (const id of ["w", "p", "q"]) await t.createEndpoint(id, PW);
    const w = keep((await online(t.wsUrl, "w", PW)).client);
    assert.deepEqual(data(await w.request({ type: "presence.watch", ids: ["p"] })), {
      watching: 1,
    });
    keep((await online(t.wsUrl, "q", PW)).client);
    const p = (await online(t.tcpUrl, "p", PW)).client;
    const up = await w.waitFrame(isPresence("p", true), "p online");
    assert.equal(typeof up.at_ms, "number");
    assert.deepEqual(presenceOf(w, "q"), [], "q is not watched");
    const got = data<{ items: Record<string, unknown>[] }>(
      await w.request({ type: "presence.get", ids: ["p", "q", "w"] }),
    );
    assert.deepEqual(got.items.map((i) => `${i.id}:${i.online}`), ["p:true", "q:true", "w:true"]);
    assert.ok((got.items[0].since_ms as number) <= (up.at_ms as number));
    await p.close();
    const down = await w.waitFrame(isPresence("p", false), "p offline");
    assert.ok((down.at_ms as number) >= (up.at_ms as number));
    const after = data<{ items: Record<string, unknown>[] }>(
      await w.request({ type: "presence.get", ids: ["p"] }),
    );
    assert.equal(after.items[0].online, false);
    assert.ok((after.items[0].since_ms as number) >= (up.at_ms as number), "since = offline time");
  });
});

Deno.test("a watch of all reports every endpoint", async () => {
  await withServer(async (t, keep) => {
    for (const id of ["w", "x", "y"]) await t.createEndpoint(id, PW);
    const w = keep((await online(t.wsUrl, "w", PW)).client);
    assert.deepEqual(data(await w.request({ type: "presence.watch", ids: [], all: true })), {
      watching: "all",
    });
    const x = (await online(t.wsUrl, "x", PW)).client;
    keep((await online(t.wsUrl, "y", PW)).client);
    await w.waitFrame(isPresence("x", true), "x online");
    await w.waitFrame(isPresence("y", true), "y online");
    await x.close();
    await w.waitFrame(isPresence("x", false), "x offline");
    assert.equal(presenceOf(w, "w").length, 0, "its own connection came before the watch");
  });
});

Deno.test("a new watch replaces the old one, and a watch ends with its connection", async () => {
  await withServer(async (t, keep) => {
    for (const id of ["w", "p", "q", "r"]) await t.createEndpoint(id, PW);
    const w = (await online(t.wsUrl, "w", PW)).client;
    data(await w.request({ type: "presence.watch", ids: ["p"] }));
    data(await w.request({ type: "presence.watch", ids: ["q"] }));
    keep((await online(t.wsUrl, "p", PW)).client);
    keep((await online(t.wsUrl, "q", PW)).client);
    // p came online before q, so its notification would have arrived first.
    await w.waitFrame(isPresence("q", true), "q online");
    assert.deepEqual(presenceOf(w, "p"), [], "the watch on p was replaced");
    // A new connection of the same endpoint starts with no watch (spec 6.5 断线清空).
    data(await w.request({ type: "presence.watch", ids: ["r"] }));
    await w.close();
    const w2 = keep((await online(t.wsUrl, "w", PW)).client);
    keep((await online(t.wsUrl, "r", PW)).client);
    // The round trip comes after r's handshake, so a notification would already be here.
    const got = data<{ items: { online: boolean }[] }>(
      await w2.request({ type: "presence.get", ids: ["r"] }),
    );
    assert.equal(got.items[0].online, true);
    assert.deepEqual(presenceOf(w2, "r"), [], "the old connection's watch is gone");
  });
});

Deno.test("presence.get takes at most 200 ids and presence.watch at most 1000", async () => {
  await withServer(async (t, keep) => {
    await t.createEndpoint("w", PW);
    const w = keep((await online(t.wsUrl, "w", PW)).client);
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `id-${i}`);
    const got = data<{ items: { id: string; not_found?: boolean }[] }>(
      await w.request({ type: "presence.get", ids: ids(200) }),
    );
    assert.equal(got.items.length, 200);
    assert.ok(got.items.every((i, n) => i.id === `id-${n}` && i.not_found === true));
    assert.equal(code(await w.request({ type: "presence.get", ids: ids(201) })), "bad_request");
    assert.deepEqual(data(await w.request({ type: "presence.watch", ids: ids(1000) })), {
      watching: 1000,
    });
    assert.equal(code(await w.request({ type: "presence.watch", ids: ids(1001) })), "bad_request");
  });
});

const NAMES: Record<string, string> = {
  "Door-1": "Front Door",
  "cam-north": "北门摄像头",
  "cam-south": "南门 Camera",
  "sensor": "Küche Sensor",
  "zeta": "zeta",
};

Deno.test("the directory matches an id prefix or a name substring in any case, paged by id", async () => {
  await withServer(async (t, keep) => {
    for (const id of Object.keys(NAMES)) await t.createEndpoint(id, PW);
    await t.createEndpoint("asleep", PW); // never online
    const clients = new Map<string, TestClient>();
    for (const [id, name] of Object.entries(NAMES)) {
      const c = keep((await online(t.wsUrl, id, PW)).client);
      data(await c.request({ type: "self.update", name }));
      clients.set(id, c);
    }
    const asker = clients.get("zeta")!;
    data(await asker.request({ type: "self.talk_password", talk_password: "z" }));
    type Item = {
      id: string;
      name: string;
      online: boolean;
      online_since_ms: number | null;
      offline_since_ms: number | null;
      talk_password_set: boolean;
    };
    type Page = { items: Item[]; next_cursor: string };
    const find = async (query: string) =>
      data<Page>(await asker.request({ type: "directory.list", query })).items.map((i) => i.id);
    assert.deepEqual(await find("CAM"), ["cam-north", "cam-south"]); // id prefix, any case
    assert.deepEqual(await find("门"), ["cam-north", "cam-south"]); // Chinese name substring
    assert.deepEqual(await find("AMERA"), ["cam-south"]); // name substring, any case
    assert.deepEqual(await find("door"), ["Door-1"]);
    assert.deepEqual(await find("KÜCHE"), ["sensor"]); // case folding beyond ASCII
    assert.deepEqual(await find("north"), [], "an id matches by prefix only");
    // Paging walks every endpoint once, in id order.
    const all = [...Object.keys(NAMES), "asleep"].sort();
    const seen: Item[] = [];
    let cursor = "";
    do {
      const p = data<Page>(await asker.request({ type: "directory.list", limit: 2, cursor }));
      assert.ok(p.items.length <= 2);
      seen.push(...p.items);
      cursor = p.next_cursor;
    } while (cursor !== "");
    assert.deepEqual(seen.map((i) => i.id), all);
    const zeta = seen.find((i) => i.id === "zeta")!;
    assert.deepEqual([zeta.name, zeta.online, zeta.talk_password_set], ["zeta", true, true]);
    assert.equal(typeof zeta.online_since_ms, "number");
    const asleep = seen.find((i) => i.id === "asleep")!;
    assert.deepEqual([asleep.online, asleep.online_since_ms, asleep.talk_password_set], [
      false,
      null,
      false,
    ]);
    // A query pages too.
    const first = data<Page>(
      await asker.request({ type: "directory.list", query: "门", limit: 1 }),
    );
    assert.deepEqual([first.items.map((i) => i.id), first.next_cursor], [
      ["cam-north"],
      "cam-north",
    ]);
    const second = data<Page>(
      await asker.request({ type: "directory.list", query: "门", limit: 1, cursor: "cam-north" }),
    );
    assert.deepEqual([second.items.map((i) => i.id), second.next_cursor], [["cam-south"], ""]);
    assert.equal(
      code(await asker.request({ type: "directory.list", limit: 201 })),
      "bad_request",
    );
  });
});

Deno.test("a takeover is not reported to watchers: the endpoint stayed online", async () => {
  await withServer(async (t, keep) => {
    for (const id of ["w", "p", "q"]) await t.createEndpoint(id, PW);
    const w = keep((await online(t.wsUrl, "w", PW)).client);
    data(await w.request({ type: "presence.watch", ids: ["p", "q"] }));
    const first = keep((await online(t.tcpUrl, "p", PW)).client);
    await w.waitFrame(isPresence("p", true), "p online");
    for (const url of [t.wsUrl, t.tcpUrl]) {
      const next = keep((await online(url, "p", PW)).client);
      assert.equal(next.connected, true);
    }
    await first.until(() => first.closed, "the first connection taken over");
    // q coming online is written after anything the takeovers caused.
    keep((await online(t.wsUrl, "q", PW)).client);
    await w.waitFrame(isPresence("q", true), "q online");
    assert.deepEqual(presenceOf(w, "p").map((f) => f.online), [true], "one online, no repeat");
  });
});
