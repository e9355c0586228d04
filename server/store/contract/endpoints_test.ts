import assert from "node:assert/strict";
import type { CreateEndpointArgs } from "../ops/endpoints.ts";
import { binaryArgs } from "../ops/_testing.ts";
import { contractTest, T0 } from "./_stores.ts";

// Endpoint writes, connections and restart recovery (spec 5, 6.6, 7.5, 7.8) on both stores.

const NEW: CreateEndpointArgs = {
  id: "dev1",
  name: "Dev",
  remark: "",
  source: "self",
  loginHash: "h1",
  talkHash: null,
  defaultDelayMs: 0,
};

contractTest("endpoint.create inserts once and answers id_taken for a repeat", async (s) => {
  assert.deepEqual(await s.run("endpoint.create", NEW), { id: "dev1" });
  assert.equal(await s.codeOf("endpoint.create", NEW), "id_taken");
  assert.deepEqual(await s.rows("SELECT id, name, source, enabled, created_at FROM endpoints"), [
    { id: "dev1", name: "Dev", source: "self", enabled: 1, created_at: T0 },
  ]);
});

contractTest("sessions are set, touched only with the current hash, and cleared", async (s) => {
  await s.run("endpoint.create", NEW);
  assert.deepEqual(
    await s.run("endpoint.set_session", { id: "dev1", sessionHash: "s1", loginHash: "h2" }),
    {
      changed: true,
    },
  );
  assert.deepEqual(
    await s.run("endpoint.touch_session", { id: "dev1", sessionHash: "old", usedAt: T0 + 9 }),
    { changed: false },
  );
  assert.deepEqual(
    await s.run("endpoint.touch_session", { id: "dev1", sessionHash: "s1", usedAt: T0 + 9 }),
    { changed: true },
  );
  assert.deepEqual(
    await s.run("endpoint.set_login_password", { id: "dev1", loginHash: "h3", sessionHash: "s2" }),
    { changed: true },
  );
  assert.deepEqual(
    await s.run("endpoint.update_self", { id: "dev1", name: "N", defaultDelayMs: 5 }),
    {
      changed: true,
    },
  );
  assert.deepEqual(
    await s.rows("SELECT login_hash, session_hash, name, default_delay_ms FROM endpoints"),
    [{ login_hash: "h3", session_hash: "s2", name: "N", default_delay_ms: 5 }],
  );
  assert.deepEqual(await s.run("endpoint.clear_session", { id: "dev1" }), { changed: true });
  assert.deepEqual(await s.run("endpoint.update_self", { id: "nobody", name: "x" }), {
    changed: false,
  });
});

contractTest("an endpoint stays connected while any of its connections is alive", async (s) => {
  await s.run("context.connected", { endpointId: "e", connCode: "1" });
  await s.run("context.connected", { endpointId: "e", connCode: "2" });
  assert.deepEqual(await s.run("context.disconnected", { endpointId: "e", connCode: "1" }), {
    connected: true,
  });
  assert.deepEqual(await s.run("context.disconnected", { endpointId: "e", connCode: "2" }), {
    connected: false,
  });
  assert.equal(await s.codeOf("context.configure", { graceMs: -1 }), "busy");
  assert.equal((await s.run("context.configure", { graceMs: 5 })).graceMs, 5);
});

contractTest(
  "disconnect gives not-kept deliveries the grace period; handshake clears it",
  async (s) => {
    await s.addEndpoint("a");
    await s.addEndpoint("b");
    await s.run("context.connected", { endpointId: "b", connCode: "c1" });
    const m = await s.run("message.submit", binaryArgs("g"));
    await s.run("delivery.claim", { endpointId: "b", connCode: "c1", limit: 5 });
    const d = await s.run("endpoint.disconnect", {
      endpointId: "b",
      connCode: "c1",
      isCurrent: true,
    }, T0 + 100);
    assert.deepEqual(d, { cleared: 1 });
    const grace = () =>
      s.rows<{ expire_at: number | null; pushed_conn: string | null }>(
        "SELECT expire_at, pushed_conn FROM deliveries WHERE seq = ?",
        m.seq,
      );
    assert.deepEqual(await grace(), [{ expire_at: T0 + 100 + 60_000, pushed_conn: null }]);
    assert.deepEqual(await s.rows("SELECT offline_since FROM endpoints WHERE id = 'b'"), [
      { offline_since: T0 + 100 },
    ]);
    const h = await s.run("endpoint.handshake", { endpointId: "b" }, T0 + 200);
    assert.deepEqual(h, { onlineSince: T0 + 200, cleared: 1, wasOnline: false });
    assert.deepEqual(await grace(), [{ expire_at: null, pushed_conn: null }]);
  },
);

contractTest(
  "startup recovery unmarks every push and waits at least the grace period",
  async (s) => {
    await s.addEndpoint("a");
    await s.addEndpoint("b", { onlineSince: T0 - 5, offlineSince: null });
    await s.run("context.connected", { endpointId: "b", connCode: "c1" });
    await s.run("message.submit", binaryArgs("k", { keep: true, ttlSeconds: 1 }));
    await s.run("delivery.claim", { endpointId: "b", connCode: "c1", limit: 5 });
    const r = await s.run("recovery.startup", {}, T0 + 10_000);
    assert.deepEqual(r, { deliveries: 1, endpoints: 1 });
    assert.deepEqual(await s.rows("SELECT expire_at, pushed_conn FROM deliveries"), [
      { expire_at: T0 + 10_000 + 60_000, pushed_conn: null },
    ]);
  },
);

contractTest(
  "online_since moves forward on every handshake; a superseded connection's disconnect keeps the endpoint online",
  async (s) => {
    await s.addEndpoint("b");
    // Two handshakes in the same millisecond (two nodes): each gets its own revision.
    const h1 = await s.run("endpoint.handshake", { endpointId: "b" }, T0 + 100);
    const h2 = await s.run("endpoint.handshake", { endpointId: "b" }, T0 + 100);
    assert.equal(h1.onlineSince, T0 + 100);
    assert.equal(h2.onlineSince, T0 + 101);
    // The second found b online already (the first login): no second online for watchers.
    assert.deepEqual([h1.wasOnline, h2.wasOnline], [false, true]);
    // The first connection closes later on its node: the second login is newer, so b stays online.
    await s.run("endpoint.disconnect", {
      endpointId: "b",
      connCode: "n1.aa",
      isCurrent: true,
      onlineSince: h1.onlineSince,
    }, T0 + 200);
    assert.deepEqual(await s.rows("SELECT online_since, offline_since FROM endpoints"), [
      { online_since: T0 + 101, offline_since: T0 },
    ]);
    // The current one's disconnect takes it offline.
    await s.run("endpoint.disconnect", {
      endpointId: "b",
      connCode: "n2.bb",
      isCurrent: true,
      onlineSince: h2.onlineSince,
    }, T0 + 300);
    assert.deepEqual(await s.rows("SELECT offline_since FROM endpoints"), [
      { offline_since: T0 + 300 },
    ]);
  },
);
