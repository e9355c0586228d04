// issue 30: several `nixmsg serve` processes (the shipped permissions, `store.kind: postgres`,
// `cluster.nats_url`) on one real PostgreSQL database, with a real nats-server between them, and
// real MQTT clients. A message from a client on one node reaches a client on another, with its
// receipt back; a group spans three nodes; a login on another node takes the session over (0x8E),
// the last one winning under races; with NATS stopped, deliveries still arrive through the store
// poll; a node killed with -9 while kept messages are in flight loses none of them.
import assert from "node:assert/strict";
import { type Frame, online, TestClient } from "./helpers/client.ts";
import { KEEP, PW, sendFrame, waitMsg, waitReceipt } from "./helpers/messaging.ts";
import { NATS_SKIP_REASON } from "./helpers/nats_server.ts";
import { HAS_HAPROXY, startHaproxy } from "./helpers/haproxy.ts";
import { type Cluster, startCluster } from "./helpers/cluster.ts";
import { AdminClient } from "./helpers/admin.ts";
import { startReceiver } from "./helpers/webhook_receiver.ts";
import { PG_SKIP_REASON } from "../server/store/postgres/_testing.ts";

const SKIP = PG_SKIP_REASON ?? NATS_SKIP_REASON;
if (SKIP) console.error(SKIP);

/** MQTT 5 DISCONNECT: session taken over. */
const TAKEN_OVER = 0x8e;
/** A cluster node's store poll (server default): a lost notification delays by about this. */
const POLL_MS = 1000;

/** Runs `fn` on a fresh cluster; every client it opens is closed afterwards. */
async function withCluster(
  n: number,
  ids: readonly string[],
  fn: (c: Cluster, clients: TestClient[]) => Promise<void>,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const c = await startCluster(n, ids, extra);
  const clients: TestClient[] = [];
  try {
    await fn(c, clients);
  } finally {
    for (const cl of clients) await cl.close();
    await c.close();
  }
}

/** Connects b and tries the handshake; a takeover may close it first (then it is closed). */
async function racingLogin(url: string): Promise<TestClient> {
  const c = await TestClient.connect(url, "b", PW);
  if (c.connected) await c.handshake().catch(() => {});
  return c;
}

/** Retries of one request answered `busy`, at most. */
const BUSY_RETRIES = 5;

/**
 * Sends `frame` and sends it again while it is answered `busy` (bounded), as the SDKs do: a send
 * is idempotent by its id and an ack by (from, id). Counts the retries in `busy.count`.
 */
async function requestRetrying(
  c: TestClient,
  frame: Record<string, unknown>,
  busy: { count: number },
): Promise<Frame> {
  for (let i = 0;; i++) {
    const r = await c.request(frame);
    const code = (r.error as Record<string, unknown> | undefined)?.code;
    if (r.ok === true || code !== "busy" || i === BUSY_RETRIES) return r;
    busy.count++;
  }
}

async function ackAll(c: TestClient, frames: readonly Frame[]): Promise<void> {
  for (const f of frames) {
    const r = await c.request({ type: "ack", from: f.from, id: f.id });
    assert.equal(r.ok, true, JSON.stringify(r));
  }
}

Deno.test({
  name: "a message from node 1 reaches node 2, its receipt comes back, and a group spans 3 nodes",
  ignore: SKIP !== null,
  fn: () =>
    withCluster(3, ["a", "b", "c"], async (cl, clients) => {
      const a = (await online(cl.url(0), "a", PW)).client;
      const b = (await online(cl.url(1), "b", PW)).client;
      const c = (await online(cl.url(2), "c", PW)).client;
      clients.push(a, b, c);
      // Not kept: dispatch must see b connected on another node, or it would drop it (offline).
      const sent = await a.request(sendFrame("m1", "b", "across", { delay_ms: 0 }));
      assert.equal(sent.ok, true, JSON.stringify(sent));
      const m = await waitMsg(b, "m1");
      assert.equal((m.body as Record<string, unknown>).data, "across");
      await ackAll(b, [m]);
      const r = await waitReceipt(a, "m1");
      assert.equal(r.state, "accepted");
      assert.equal((await a.request({ type: "receipt_ack", receipt_id: r.receipt_id })).ok, true);

      const g = await a.request({
        type: "group.create",
        name: "g",
        members: [{ id: "b" }, { id: "c" }],
      });
      assert.equal(g.ok, true, JSON.stringify(g));
      const groupId = (g.data as Record<string, unknown>).group_id as string;
      const gs = await a.request(
        sendFrame("gm1", "", "to all", { to: { kind: "group", id: groupId }, delay_ms: 0 }),
      );
      assert.equal(gs.ok, true, JSON.stringify(gs));
      for (const x of [b, c]) await ackAll(x, [await waitMsg(x, "gm1")]);
      // The group's events (QoS 0, not stored) reach members on other nodes through NATS.
      for (const x of [b, c]) {
        await x.waitFrame((f) => f.type === "group_event" && f.group_id === groupId, "group event");
      }
      await a.until(
        () => a.frames.filter((f) => f.type === "receipt" && f.id === "gm1").length === 2,
        "two group receipts",
      );
      // The console sees every node.
      const nodes = cl.nodes.map((s) => s!.logs.some((l) => l.msg === "cluster node started"));
      assert.deepEqual(nodes, [true, true, true]);
    }),
});

Deno.test({
  name: "a login on another node takes the session over with 0x8E; of racing logins one wins",
  ignore: SKIP !== null,
  fn: () =>
    withCluster(2, ["a", "b"], async (cl, clients) => {
      const b1 = (await online(cl.url(0), "b", PW)).client;
      clients.push(b1);
      const b2 = (await online(cl.url(1), "b", PW)).client;
      clients.push(b2);
      assert.equal(await b1.closedWith("b1 closed by the takeover"), TAKEN_OVER);
      // The winner gets b's messages, and b stays online in the store.
      const a = (await online(cl.url(0), "a", PW)).client;
      clients.push(a);
      const sent = await a.request(sendFrame("t1", "b", "after takeover", { delay_ms: 0 }));
      assert.equal(sent.ok, true, JSON.stringify(sent));
      await ackAll(b2, [await waitMsg(b2, "t1")]);
      await b2.close();

      // Races: two logins of b at once, one per node, again and again. A login whose hello is
      // cut by the takeover counts as the loser; the other must stay and answer.
      const ROUNDS = 100;
      let bad = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const both = await Promise.all([0, 1].map((i) => racingLogin(cl.url(i))));
        clients.push(...both);
        const loser = await Promise.any(
          both.map((x, i) => x.until(() => x.closed, "a loser", 4 * POLL_MS + 6000).then(() => i)),
        ).catch(() => -1);
        const winner = loser === -1 ? null : both[1 - loser];
        const answered = winner === null || winner.closed
          ? null
          : await winner.request({ type: "self.get" }).catch(() => null);
        if (winner === null || winner.closed || answered?.ok !== true) bad++;
        for (const x of both) await x.close();
      }
      assert.equal(bad, 0, `rounds without exactly one winner: ${bad} of ${ROUNDS}`);
    }),
});

/** MQTT 5 DISCONNECT of an admin kick (spec 6.8: no frame, the client may reconnect). */
const KICKED = 0;

/**
 * Kick, disable, password reset and delete of endpoints connected to node 2, each through node 1's
 * admin API; e on node 2 is left alone. Each connection must close once, as on one node (a `fatal`
 * frame with its reason, or none for the kick), within `boundMs` of its request; a kicked
 * endpoint logs in again and is not closed by a later poll; a disabled one cannot log in on either
 * node. Returns how many of the closes node 2's store poll found (the others came through NATS).
 */
async function adminCloses(
  cl: Cluster,
  clients: TestClient[],
  boundMs: number,
): Promise<number> {
  const admin = new AdminClient(`http://${cl.nodes[0]!.addr}`);
  await admin.login();
  const on2: Record<string, TestClient> = {};
  for (const id of ["a", "b", "c", "d", "e"]) {
    on2[id] = (await online(cl.url(1), id, PW)).client;
    clients.push(on2[id]);
  }
  const fatals = (x: TestClient) => x.frames.filter((f) => f.type === "fatal");
  /** Issues `request`, then waits for `x` to close; answers the DISCONNECT reason and the time. */
  const closeOf = async (
    x: TestClient,
    request: () => Promise<{ status: number; text: string }>,
  ) => {
    const t0 = Date.now();
    const r = await request();
    assert.equal(r.status, 200, r.text);
    const reason = await x.closedWith(`${x.id} closed on node 2`);
    const ms = Date.now() - t0;
    assert.ok(ms < boundMs, `${x.id} closed ${ms} ms after the request (bound ${boundMs} ms)`);
    return { reason, ms };
  };

  const kick = await closeOf(on2.a, () => admin.call("POST", "/api/admin/endpoints/a/kick"));
  assert.equal(kick.reason, KICKED);
  assert.equal(fatals(on2.a).length, 0, "a kick sends no fatal frame");
  // The kick closed the logins before it, not a later one: a logs in again and stays (below).
  const a2 = (await online(cl.url(1), "a", PW)).client;
  clients.push(a2);

  const cases = [
    [
      "b",
      "disabled",
      () => admin.call("PATCH", "/api/admin/endpoints/b", { body: { enabled: false } }),
    ],
    [
      "c",
      "password_reset",
      () => admin.call("POST", "/api/admin/endpoints/c/reset-login-password"),
    ],
    ["d", "deleted", () => admin.call("DELETE", "/api/admin/endpoints/d")],
  ] as const;
  const times = [`kick ${kick.ms} ms`];
  for (const [id, reason, request] of cases) {
    const x = on2[id];
    const closed = await closeOf(x, request);
    // Exactly one fatal, with the reason one node gives, then the disconnect: no double close.
    assert.deepEqual(
      fatals(x).map((f) => f.reason),
      [reason],
      `${id}: ${JSON.stringify(x.frames)}`,
    );
    assert.equal(closed.reason, KICKED, `${id} disconnected after its fatal frame`);
    times.push(`${reason} ${closed.ms} ms`);
  }
  // The disabled endpoint cannot log in on any node.
  for (const i of [0, 1]) {
    const again = await TestClient.connect(cl.url(i), "b", PW);
    clients.push(again);
    assert.equal(again.connected, false, `b logged in on node ${i + 1} after its disable`);
  }
  // a's new login and e survived the polls since: both still answer.
  for (const x of [a2, on2.e]) {
    const r = await x.request({ type: "self.get" });
    assert.equal(r.ok, true, `${x.id}: ${JSON.stringify(r)}`);
    assert.equal(x.closed, false);
  }
  const polled = cl.nodes[1]!.logs.filter((l) => l.msg === "Admin close found by the store poll");
  assert.equal(
    cl.nodes[0]!.logs.filter((l) => l.msg === "Admin close found by the store poll").length,
    0,
    "node 1 held none of them",
  );
  console.error(`admin closes on node 2: ${times.join(", ")}; found by its poll: ${polled.length}`);
  return polled.length;
}

Deno.test({
  name: "an admin kick, disable, reset or delete on node 1 closes the connection on node 2 once",
  ignore: SKIP !== null,
  fn: () =>
    withCluster(2, ["a", "b", "c", "d", "e"], async (cl, clients) => {
      // Through NATS, well before the next poll would: a close the poll found too is not repeated.
      await adminCloses(cl, clients, 3 * POLL_MS + 2000);
    }),
});

Deno.test({
  name: "with NATS stopped admin closes on node 1 reach node 2 through the store poll",
  ignore: SKIP !== null,
  fn: () =>
    withCluster(2, ["a", "b", "c", "d", "e"], async (cl, clients) => {
      await cl.nats.stop();
      // Within the poll interval, plus a margin for the shared machine.
      const polled = await adminCloses(cl, clients, 3 * POLL_MS + 2000);
      assert.equal(polled, 4, "node 2's poll found every close");
      await cl.nats.start();
    }),
});

Deno.test({
  name: "with NATS stopped a message to another node arrives through the store poll",
  ignore: SKIP !== null,
  fn: () =>
    withCluster(2, ["a", "b"], async (cl, clients) => {
      const a = (await online(cl.url(0), "a", PW)).client;
      const b = (await online(cl.url(1), "b", PW)).client;
      clients.push(a, b);
      await cl.nats.stop();
      const ids = ["n1", "n2", "n3"];
      for (const id of ids) {
        const sent = await a.request(sendFrame(id, "b", id, { delay_ms: 0, ...KEEP }));
        assert.equal(sent.ok, true, JSON.stringify(sent));
      }
      const t0 = Date.now();
      for (const id of ids) await ackAll(b, [await waitMsg(b, id)]);
      const waited = Date.now() - t0;
      for (const id of ids) await waitReceipt(a, id);
      // Within the poll interval, plus a margin for the shared machine.
      assert.ok(waited < 3 * POLL_MS + 2000, `delivered after ${waited} ms without NATS`);
      await cl.nats.start();
    }),
});

/**
 * 1,000 kept messages a (node 1) → b (node 2); after 200 are acked node 2 is killed with -9 or
 * stopped cleanly, and b reconnects to node 3. Every message answered ok must arrive (lost) and
 * none again after its ack was answered (duplicated).
 */
async function failover(
  cl: Cluster,
  clients: TestClient[],
  mode: "kill" | "stop",
): Promise<{ allAckedMs: number; released: number }> {
  const TOTAL = 1000;
  const a = (await online(cl.url(0), "a", PW)).client;
  clients.push(a);
  let b = (await online(cl.url(1), "b", PW)).client;
  clients.push(b);
  const acked = new Set<string>();
  let duplicated = 0;
  /** `busy` answers retried (spec 6.10: the client sends the same request again). */
  const busy = { count: 0 };
  /** Waiters on the acked count, checked on every answered ack. */
  const ackWaiters = new Set<() => void>();
  const ackedAtLeast = (n: () => number, timeoutMs: number) =>
    new Promise<boolean>((resolve) => {
      const check = () => {
        if (acked.size < n()) return;
        ackWaiters.delete(check);
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        ackWaiters.delete(check);
        resolve(false);
      }, timeoutMs);
      ackWaiters.add(check);
      check();
    });
  /** Acks every message b gets; one got again after its ack was answered is a duplicate. */
  const receiver = (c: TestClient) => {
    let seen = 0;
    const stop = c.watch(() => {
      for (; seen < c.frames.length; seen++) {
        const f = c.frames[seen];
        if (f.type !== "msg") continue;
        const id = String(f.id);
        if (acked.has(id)) {
          duplicated++;
          continue;
        }
        requestRetrying(c, { type: "ack", from: f.from, id: f.id }, busy).then((r) => {
          if (r.ok !== true) return;
          acked.add(id);
          for (const w of [...ackWaiters]) w();
        }).catch(() => {});
      }
    });
    return stop;
  };
  const stopB = receiver(b);
  const answered: string[] = [];
  const refused = new Map<string, number>();
  const sending = (async () => {
    for (let i = 0; i < TOTAL; i++) {
      const id = `k${i}`;
      const r = await requestRetrying(
        a,
        sendFrame(id, "b", id, { delay_ms: 0, ...KEEP }),
        busy,
      );
      if (r.ok === true) answered.push(id);
      else {
        const code = String((r.error as Record<string, unknown> | undefined)?.code);
        refused.set(code, (refused.get(code) ?? 0) + 1);
      }
    }
  })();
  // Kill b's node once part of the stream went through.
  assert.ok(
    await ackedAtLeast(() => TOTAL / 5, 30_000),
    `acked before the kill: ${acked.size}`,
  );
  if (mode === "kill") await cl.nodes[1]!.kill();
  else assert.equal(await cl.nodes[1]!.stop(), 0, "a clean stop");
  const killedAt = Date.now();
  cl.nodes[1] = null;
  stopB();
  await b.close();
  b = (await online(cl.url(2), "b", PW)).client;
  clients.push(b);
  receiver(b);
  await sending;
  // A killed node's push marks are released once its lease (15 s) ran out and a node reaped
  // it (every 5 s); a stopped node released them itself. Bounded wait, then count.
  await ackedAtLeast(() => answered.length, 45_000);
  const allAckedMs = Date.now() - killedAt;
  // What the surviving nodes released of the dead node's push marks (its lease ran out).
  const released = [0, 2].flatMap((i) =>
    cl.nodes[i]!.logs.filter((l) => l.msg === "Dead nodes' push marks released")
  ).reduce((n, l) => n + Number(l.deliveries), 0);
  const lost = answered.filter((id) => !acked.has(id)).length;
  console.error(
    `${mode}: answered=${answered.length} acked=${acked.size} lost=${lost} ` +
      `duplicated=${duplicated} busy_retried=${busy.count} released=${released} ` +
      `all_acked_ms_after_failure=${allAckedMs} (the sending goes on meanwhile)`,
  );
  assert.equal(
    answered.length,
    TOTAL,
    `sends answered ok: ${answered.length}, refused: ${JSON.stringify([...refused])}`,
  );
  assert.equal(lost, 0, `lost=${lost}`);
  assert.equal(duplicated, 0, `duplicated=${duplicated}`);
  return { allAckedMs, released };
}

Deno.test({
  name: "kill -9 of the receiver's node with kept messages in flight: 0 lost, 0 duplicated",
  ignore: SKIP !== null,
  fn: () =>
    withCluster(3, ["a", "b"], (cl, clients) => failover(cl, clients, "kill").then(() => {})),
});

Deno.test({
  name: "a clean stop of the receiver's node releases its marks at once: 0 lost, 0 duplicated",
  ignore: SKIP !== null,
  fn: () =>
    withCluster(3, ["a", "b"], async (cl, clients) => {
      const r = await failover(cl, clients, "stop");
      // Every message arrived, and no node had to reap the stopped one's marks: it cleared them.
      assert.equal(r.released, 0, `reaped marks: ${r.released}`);
    }),
});

Deno.test({
  name:
    "behind HAProxy (round robin, PROXY v2) over 3 nodes: a group message, and a re-login on the next node takes over",
  ignore: SKIP !== null || !HAS_HAPROXY,
  fn: () =>
    withCluster(3, ["a", "b", "c"], async (cl, clients) => {
      const haproxy = await startHaproxy(cl.homes[0].dir, cl.nodes.map((s) => s!.port));
      try {
        const url = `ws://127.0.0.1:${haproxy.port}/mqtt`;
        // Consecutive connections go to consecutive nodes: a, b and c on three different ones.
        const [a, b, c] = [
          (await online(url, "a", PW)).client,
          (await online(url, "b", PW)).client,
          (await online(url, "c", PW)).client,
        ];
        clients.push(a, b, c);
        const g = await a.request({
          type: "group.create",
          name: "g",
          members: [{ id: "b" }, { id: "c" }],
        });
        assert.equal(g.ok, true, JSON.stringify(g));
        const groupId = (g.data as Record<string, unknown>).group_id as string;
        const sent = await a.request(
          sendFrame("h1", "", "via haproxy", { to: { kind: "group", id: groupId }, delay_ms: 0 }),
        );
        assert.equal(sent.ok, true, JSON.stringify(sent));
        for (const x of [b, c]) await ackAll(x, [await waitMsg(x, "h1")]);
        await a.until(
          () => a.frames.filter((f) => f.type === "receipt" && f.id === "h1").length === 2,
          "two receipts through haproxy",
        );
        // b again: the next connection lands on the next node, and the old session goes (0x8E).
        const b2 = (await online(url, "b", PW)).client;
        clients.push(b2);
        assert.equal(await b.closedWith("b taken over across nodes"), TAKEN_OVER);
        const s2 = await a.request(sendFrame("h2", "b", "to the new b", { delay_ms: 0 }));
        assert.equal(s2.ok, true, JSON.stringify(s2));
        await ackAll(b2, [await waitMsg(b2, "h2")]);
        await waitReceipt(a, "h2");
      } finally {
        await haproxy.stop();
      }
    }, { trusted_proxies: ["127.0.0.1/32"] }),
});

/** The `data` of an ok response. */
function dataOf(r: Frame): Record<string, unknown> {
  assert.equal(r.ok, true, JSON.stringify(r));
  return r.data as Record<string, unknown>;
}

/** `id`'s online flag in a `presence.get` asked of `c`. */
async function presenceGet(c: TestClient, id: string): Promise<boolean> {
  const items = dataOf(await c.request({ type: "presence.get", ids: [id] })).items as Record<
    string,
    unknown
  >[];
  return items[0].online as boolean;
}

const presenceFrames = (c: TestClient, id: string, isOnline: boolean) =>
  c.frames.filter((f) => f.type === "presence" && f.id === id && f.online === isOnline);

/** A killed node's endpoints go offline after its lease (15 s) ran out and the next reap (5 s). */
const REAP_WAIT_MS = 45_000;

Deno.test({
  name: "presence spans nodes: a watcher on node 1 sees b on node 2 come and go, and its node die",
  ignore: SKIP !== null,
  fn: () =>
    withCluster(2, ["a", "b"], async (cl, clients) => {
      const a = (await online(cl.url(0), "a", PW)).client;
      clients.push(a);
      assert.deepEqual(dataOf(await a.request({ type: "presence.watch", ids: ["b"] })), {
        watching: 1,
      });
      assert.equal(await presenceGet(a, "b"), false);
      let b = (await online(cl.url(1), "b", PW)).client;
      clients.push(b);
      await a.until(() => presenceFrames(a, "b", true).length === 1, "b online (node 2)");
      // The answers of node 1 count b, connected to node 2.
      assert.equal(await presenceGet(a, "b"), true);
      const dir = dataOf(await a.request({ type: "directory.list", query: "b" }));
      assert.deepEqual(
        (dir.items as Record<string, unknown>[]).map((i) => `${i.id}:${i.online}`),
        ["b:true"],
      );
      const g = dataOf(
        await a.request({ type: "group.create", name: "g", members: [{ id: "b" }] }),
      );
      const got = dataOf(await a.request({ type: "group.get", group_id: g.group_id }));
      assert.deepEqual(
        (got.members as Record<string, unknown>[]).map((m) => `${m.id}:${m.online}`).sort(),
        ["a:true", "b:true"],
      );
      // b logs in on node 1, taking over from node 2 (0x8E): b stayed online, no event.
      const b1 = (await online(cl.url(0), "b", PW)).client;
      clients.push(b1);
      await b.until(() => b.closed, "b on node 2 taken over");
      assert.equal(await presenceGet(a, "b"), true);
      // b logs out: the watcher hears one offline, and heard one online in all.
      await b1.close();
      await a.until(() => presenceFrames(a, "b", false).length === 1, "b offline");
      assert.equal(await presenceGet(a, "b"), false);
      assert.equal(presenceFrames(a, "b", true).length, 1, "no second online for the takeover");

      // b again on node 2, then node 2 is killed: no disconnect is written, the reap does it.
      b = (await online(cl.url(1), "b", PW)).client;
      clients.push(b);
      await a.until(() => presenceFrames(a, "b", true).length === 2, "b online again");
      assert.equal(await presenceGet(a, "b"), true);
      await cl.nodes[1]!.kill();
      const killedAt = Date.now();
      cl.nodes[1] = null;
      await a.until(
        () => presenceFrames(a, "b", false).length === 2,
        "b offline after its node died",
        REAP_WAIT_MS,
      );
      const offlineMs = Date.now() - killedAt;
      assert.equal(await presenceGet(a, "b"), false);
      const reaped = cl.nodes[0]!.logs.filter((l) => l.msg === "Dead nodes' push marks released");
      assert.deepEqual(reaped.map((l) => [l.nodes, l.offline]), [["node-2", 1]]);
      console.error(`b reported offline ${offlineMs} ms after its node was killed`);

      // Node 2 again, b on it, then a clean stop: b goes offline at once, the watcher hears it.
      await cl.restart(1);
      b = (await online(cl.url(1), "b", PW)).client;
      clients.push(b);
      await a.until(() => presenceFrames(a, "b", true).length === 3, "b online on node 2 again");
      assert.equal(await cl.nodes[1]!.stop(), 0, cl.nodes[1]!.stderr());
      cl.nodes[1] = null;
      await a.until(() => presenceFrames(a, "b", false).length === 3, "b offline at the stop");
      assert.equal(await presenceGet(a, "b"), false);
    }),
});

Deno.test({
  name: "one node dispatches scheduled messages, exactly once; the next takes over when it dies",
  ignore: SKIP !== null,
  fn: () =>
    withCluster(2, ["a", "b"], async (cl, clients) => {
      // Both endpoints on node 2; node 1 (the smallest id) holds the duties.
      const a = (await online(cl.url(1), "a", PW)).client;
      const b = (await online(cl.url(1), "b", PW)).client;
      clients.push(a, b);
      const sent = await a.request(sendFrame("s1", "b", "later", { ...KEEP, delay_ms: 1500 }));
      assert.equal(sent.ok, true, JSON.stringify(sent));
      const m = await waitMsg(b, "s1");
      await ackAll(b, [m]);
      assert.equal((await waitReceipt(a, "s1")).state, "accepted");
      assert.equal(b.frames.filter((f) => f.type === "msg" && f.id === "s1").length, 1);
      const taken = (i: number) =>
        cl.nodes[i]!.logs.filter((l) => l.msg === "Cluster duties taken").length;
      assert.deepEqual([taken(0), taken(1)], [1, 0], "node 1 alone holds the duties");

      // Node 1 dies with the duties; a message due meanwhile is dispatched by node 2.
      await cl.nodes[0]!.kill();
      const killedAt = Date.now();
      cl.nodes[0] = null;
      const again = await a.request(sendFrame("s2", "b", "after", { ...KEEP, delay_ms: 1000 }));
      assert.equal(again.ok, true, JSON.stringify(again));
      // Node 2 takes the duties once node 1's lease (15 s) ran out.
      await b.until(
        () => b.frames.some((f) => f.type === "msg" && f.id === "s2"),
        "s2 dispatched by node 2",
        REAP_WAIT_MS,
      );
      const m2 = b.frames.find((f) => f.type === "msg" && f.id === "s2")!;
      const handedMs = Date.now() - killedAt;
      await ackAll(b, [m2]);
      assert.equal((await waitReceipt(a, "s2")).state, "accepted");
      assert.equal(b.frames.filter((f) => f.type === "msg" && f.id === "s2").length, 1);
      assert.equal(taken(1), 1, "node 2 took the duties");
      console.error(`s2 dispatched ${handedMs} ms after the duty holder was killed`);
    }),
});

Deno.test({
  name: "an endpoint online on another node gets its messages over MQTT, not through its webhook",
  ignore: SKIP !== null,
  fn: () =>
    withCluster(2, ["a", "b"], async (cl, clients) => {
      const ref = { secret: "" };
      const hook = startReceiver(ref);
      try {
        const admin = new AdminClient(`http://${cl.nodes[0]!.addr}`);
        await admin.login();
        const made = await admin.call("PUT", "/api/admin/endpoints/b/webhook", {
          body: { url: hook.url },
        });
        assert.equal(made.status, 200, made.text);
        ref.secret = made.data.secret as string;
        // b online on node 2; a (and b's webhook's dispatcher that node 1 runs too) on node 1.
        const b = (await online(cl.url(1), "b", PW)).client;
        const a = (await online(cl.url(0), "a", PW)).client;
        clients.push(a, b);
        const ids = ["w1", "w2", "w3"];
        for (const id of ids) {
          const r = await a.request(sendFrame(id, "b", id, { ...KEEP, delay_ms: 0 }));
          assert.equal(r.ok, true, JSON.stringify(r));
        }
        const got: Frame[] = [];
        for (const id of ids) got.push(await waitMsg(b, id));
        await ackAll(b, got);
        for (const id of ids) assert.equal((await waitReceipt(a, id)).state, "accepted");
        const posted = hook.hits.filter((h) => h.event.type === "msg").length;
        assert.equal(posted, 0, `${posted} messages were POSTed while b was online on node 2`);
      } finally {
        await hook.close();
      }
    }, { webhooks: { allow: ["127.0.0.1"] } }),
});

Deno.test({
  name:
    "a kept message from node 1 recalled while node 2's receiver holds it unacked: revoked there, recalled here",
  ignore: SKIP !== null,
  fn: () =>
    withCluster(2, ["a", "b"], async (cl, clients) => {
      const a = (await online(cl.url(0), "a", PW)).client;
      const b = (await online(cl.url(1), "b", PW)).client;
      clients.push(a, b);
      const sent = await a.request(sendFrame("rc1", "b", "oops", { ...KEEP, delay_ms: 0 }));
      assert.equal(sent.ok, true, JSON.stringify(sent));
      // b holds it and does not ack yet.
      await waitMsg(b, "rc1");
      const recall = await a.request({ type: "recall", id: "rc1" });
      assert.deepEqual(recall.data, { result: "recalled", recalled: 1, accepted: 0, other: 0 });
      const revoked = await b.waitFrame((f) => f.type === "revoked", "revoked on node 2");
      assert.deepEqual(revoked, {
        v: 1,
        type: "revoked",
        id: "rc1",
        from: "a",
        reason: "recalled",
      });
      // An ack after the recall answers the final state, as on one node (spec 6.3).
      const ack = await b.request({ type: "ack", from: "a", id: "rc1" });
      assert.deepEqual(ack.data, { result: "recalled" });
      const status = dataOf(await a.request({ type: "status", id: "rc1" }));
      assert.equal(status.state, "completed");
      assert.deepEqual(status.items, [{ endpoint_id: "b", state: "recalled", reason: "" }]);
      // No receipt for a recalled message (spec 7.6).
      assert.deepEqual(a.frames.filter((f) => f.type === "receipt"), []);
    }),
});
