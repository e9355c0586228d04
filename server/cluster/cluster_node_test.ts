// The routing decisions of a cluster node (issue 30) on a real SQLite store: which login
// announcements close a local connection (0x8E), which wake-ups reach the local push loops, what
// the store poll wakes and closes, and that malformed or own notices are ignored. The real NATS
// and PostgreSQL paths: nats_bus_test.ts and tests/cluster_test.ts.
import assert from "node:assert/strict";
import { join } from "node:path";
import { type Conn, ConnectionTable } from "../app/connections.ts";
import { Logger } from "../log/log.ts";
import { openSqliteStore } from "../store/sqlite_store.ts";
import type { Store } from "../store/store.ts";
import { binaryArgs } from "../store/ops/_testing.ts";
import {
  CLOSE_SUBJECT,
  type ClusterBus,
  ClusterNode,
  FRAME_SUBJECT,
  LOGIN_SUBJECT,
  PRESENCE_SUBJECT,
  WAKE_SUBJECT,
} from "./cluster_node.ts";

const T0 = 1_800_000_000_000;

function conn(code: string, endpointId: string, onlineSince?: number): Conn {
  return {
    code,
    endpointId,
    transport: "tcp",
    remoteAddress: "127.0.0.1",
    protocolVersion: 5,
    maxPacketSize: null,
    issuedToken: null,
    subscribed: true,
    handshaken: onlineSince !== undefined,
    ...(onlineSince !== undefined ? { onlineSince } : {}),
    maxReceiveBytes: null,
    helloTimer: null,
    queue: null,
    closed: false,
  };
}

interface Rig {
  node: ClusterNode;
  conns: ConnectionTable;
  store: Store;
  kicked: [string, number | undefined][];
  woken: { d: string[]; r: string[] };
  published: [string, unknown][];
  scheduled: number[];
  /** What other nodes' closes and frames did here. */
  sessions: string[];
  /** Presence changes from other nodes and reaps, as the local watchers got them. */
  presence: string[];
  /** The duties taken (true) and handed over (false). */
  duties: boolean[];
  /** Moves the store's and the node's clock on. */
  advance(ms: number): void;
}

/** Creates admin endpoints `ids` (name = id) in `store`. */
async function createEndpoints(store: Store, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    await store.run("endpoint.create", {
      id,
      name: id,
      remark: "",
      source: "admin",
      loginHash: "x",
      talkHash: null,
      defaultDelayMs: 0,
    });
  }
}

async function withRig(fn: (r: Rig) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-cluster-node-" });
  let now = T0;
  const store = await openSqliteStore({
    path: join(dir, "n.db"),
    backupDir: join(dir, "backup"),
    synchronous: "FULL",
    maxBatch: 256,
    maxWaitMs: 2,
    clock: () => now,
  });
  const conns = new ConnectionTable();
  const kicked: [string, number | undefined][] = [];
  const woken = { d: [] as string[], r: [] as string[] };
  const published: [string, unknown][] = [];
  const scheduled: number[] = [];
  const sessions: string[] = [];
  const presence: string[] = [];
  const duties: boolean[] = [];
  const node = new ClusterNode({
    app: {
      store,
      conns,
      broker: { disconnect: (code, reason) => kicked.push([code, reason]) },
      clock: () => now,
    },
    nodeId: "n1",
    waker: {
      wakeLocal: (d, r) => {
        woken.d.push(...d);
        woken.r.push(...r);
      },
      scheduled: (at) => scheduled.push(at),
    },
    sessions: {
      fatalLocal: (e, r) => {
        sessions.push(`fatal ${e} ${r}`);
        return Promise.resolve();
      },
      kickLocal: (e) => sessions.push(`kick ${e}`) > 0,
      postLocal: (ids, bytes) => sessions.push(`post ${ids} ${new TextDecoder().decode(bytes)}`),
    },
    presence: {
      remoteChange: (e, online, at) => presence.push(`${e} ${online} ${at}`),
      reaped: (ids) => presence.push(`reaped ${ids}`),
    },
    onDuties: (held) => duties.push(held),
    log: new Logger("error"),
    pollMs: 60_000,
  });
  const bus: ClusterBus = {
    connected: true,
    publish: (subject, value) => published.push([subject, value]),
  };
  node.start(bus);
  try {
    const advance = (ms: number) => {
      now += ms;
    };
    await fn({
      node,
      conns,
      store,
      kicked,
      woken,
      published,
      scheduled,
      sessions,
      presence,
      duties,
      advance,
    });
  } finally {
    await node.stop();
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a later login on another node closes the local connection with 0x8E; an older one does not", () =>
  withRig(async ({ node, conns, kicked }) => {
    const login = node.handlers()[LOGIN_SUBJECT];
    conns.add(conn("n1.c1", "b", 100));
    conns.add(conn("n1.c2", "c"));
    login({ n: "n2", e: "b", v: 99 }); // older: ours wins
    login({ n: "n2", e: "b", v: 100 }); // the same revision cannot be another login's
    login({ n: "n1", e: "b", v: 500 }); // our own announcement
    login({ n: "n2", e: "c", v: 500 }); // c is still in its handshake: it will be later
    login({ n: "n2", e: "zz", v: 500 }); // not held here
    login({ n: "n2", e: "b" }); // malformed
    login("garbage");
    assert.deepEqual(kicked, []);
    login({ n: "n2", e: "b", v: 101 });
    assert.deepEqual(kicked, [["n1.c1", 0x8e]]);
    assert.equal(node.counts.takenOver, 1);
    await Promise.resolve();
  }));

Deno.test("wake-ups of other nodes reach the local waker; own and malformed ones do not", () =>
  withRig(async ({ node, woken, published }) => {
    const wake = node.handlers()[WAKE_SUBJECT];
    wake({ n: "n2", d: ["b"], r: ["a"] });
    wake({ n: "n1", d: ["x"], r: [] });
    wake({ n: "n2", d: [1], r: [] });
    wake(null);
    assert.deepEqual(woken, { d: ["b"], r: ["a"] });
    node.remoteWake(["b"], []);
    node.remoteWake([], []);
    node.loggedIn("b", 7);
    assert.deepEqual(published, [
      [WAKE_SUBJECT, { n: "n1", d: ["b"], r: [] }],
      [LOGIN_SUBJECT, { n: "n1", e: "b", v: 7 }],
    ]);
    await Promise.resolve();
  }));

Deno.test("the store poll wakes held endpoints with work, closes superseded ones, arms the scheduler and reaps", () =>
  withRig(async ({ node, conns, store, kicked, woken, scheduled, duties, presence, advance }) => {
    await createEndpoints(store, ["a", "b", "c"]);
    // b and c held here; b has a kept message waiting; a later handshake of c happened elsewhere.
    const hb = await store.run("endpoint.handshake", { endpointId: "b" });
    const hc = await store.run("endpoint.handshake", { endpointId: "c" });
    conns.add(conn("n1.b", "b", hb.onlineSince));
    conns.add(conn("n1.c", "c", hc.onlineSince));
    await store.run("endpoint.handshake", { endpointId: "c" });
    await store.run("message.submit", binaryArgs("k1", { keep: true, ttlSeconds: 3600 }));
    await store.run(
      "message.submit",
      binaryArgs("s1", { keep: true, ttlSeconds: 3600, sendAt: T0 + 5000 }),
    );
    // A dead node with a lease long run out, holding a; this node's own lease.
    await store.run("node.lease", { nodeId: "n0", address: "x:1", version: "1", leaseMs: 1 });
    await store.run("endpoint.handshake", { endpointId: "a", nodeId: "n0" });
    await store.run("node.lease", { nodeId: "n1", address: "x:2", version: "1", leaseMs: 60_000 });
    advance(10);
    await node.pollNow();
    assert.deepEqual(woken.d, ["b"]);
    assert.deepEqual(kicked, [["n1.c", 0x8e]]);
    // n0's lease ran out: n1 is the live node with the smallest id and arms the scheduler.
    assert.deepEqual(duties, [true]);
    assert.equal(node.duties, true);
    assert.deepEqual(scheduled, [T0 + 5000]);
    // The dead node is gone and its endpoint offline; the poll reaps at most every reapMs.
    assert.deepEqual((await store.query("node.list", {})).map((n) => n.node_id), ["n1"]);
    assert.deepEqual(presence, ["reaped a"]);
    assert.equal(node.counts.polls, 1);
  }));

Deno.test("the store poll closes held connections an admin closed elsewhere, as that node did", () =>
  withRig(async ({ node, conns, store, sessions, kicked, published }) => {
    const ids = ["d", "e", "f", "g", "h", "i", "j"];
    await createEndpoints(store, ids);
    const since = new Map<string, number>();
    for (const id of ids) {
      since.set(id, (await store.run("endpoint.handshake", { endpointId: id })).onlineSince);
    }
    // h: kicked before its current login (the kick closed an older one); j: untouched.
    await store.run("endpoint.kick", { endpointId: "h" });
    since.set("h", (await store.run("endpoint.handshake", { endpointId: "h" })).onlineSince);
    for (const id of ids) conns.add(conn(`n1.${id}`, id, since.get(id)));
    // Done on another node while NATS was down: nothing reached this one.
    await store.run("endpoint.delete", { endpointId: "d" });
    await store.run("endpoint.disable", { endpointId: "e" });
    await store.run("endpoint.reset_password", { endpointId: "f", loginHash: "y" });
    await store.run("endpoint.kick", { endpointId: "g" });
    await store.run("endpoint.kick", { endpointId: "i" });
    // i's close is already under way (its NATS notice came first): not repeated.
    conns.current("i")!.closing = true;
    await node.pollNow();
    assert.deepEqual(sessions, [
      "fatal d deleted",
      "fatal e disabled",
      "fatal f password_reset",
      "kick g",
    ]);
    assert.equal(node.counts.polledCloses, 4);
    assert.deepEqual(kicked, []);
    // A kick through this node is recorded in the store before its notice goes out.
    await node.closeElsewhere("j");
    assert.deepEqual(published, [[CLOSE_SUBJECT, { n: "n1", e: "j" }]]);
    const [j] = await store.query("cluster.logins", { ids: ["j"] });
    assert.deepEqual([j.closed_through, j.closed_reason], [since.get("j"), "kick"]);
  }));

Deno.test("admin closes and live frames travel to the other nodes and reach their sessions", () =>
  withRig(async ({ node, sessions, published }) => {
    const close = node.handlers()[CLOSE_SUBJECT];
    const frame = node.handlers()[FRAME_SUBJECT];
    close({ n: "n2", e: "b", r: "disabled" });
    close({ n: "n2", e: "c" });
    close({ n: "n2", e: "d", r: "made-up" }); // not a fatal reason: ignored
    close({ n: "n1", e: "e", r: "deleted" }); // our own
    frame({ n: "n2", e: ["b", "c"], f: '{"type":"group_event"}' });
    frame({ n: "n2", e: "b", f: "{}" }); // malformed
    assert.deepEqual(sessions, [
      "fatal b disabled",
      "kick c",
      'post b,c {"type":"group_event"}',
    ]);
    await node.closeElsewhere("b", "password_reset");
    await node.closeElsewhere("c");
    node.postElsewhere(["x"], new TextEncoder().encode("{}"));
    node.postElsewhere([], new TextEncoder().encode("{}"));
    assert.deepEqual(published, [
      [CLOSE_SUBJECT, { n: "n1", e: "b", r: "password_reset" }],
      [CLOSE_SUBJECT, { n: "n1", e: "c" }],
      [FRAME_SUBJECT, { n: "n1", e: ["x"], f: "{}" }],
    ]);
    await Promise.resolve();
  }));

Deno.test("the live node with the smallest id holds the duties; presence changes travel", () =>
  withRig(async ({ node, store, scheduled, duties, presence, published, advance }) => {
    await store.run("node.lease", { nodeId: "n0", address: "x:1", version: "1", leaseMs: 2000 });
    await store.run("node.lease", { nodeId: "n1", address: "x:2", version: "1", leaseMs: 60_000 });
    await createEndpoints(store, ["a"]);
    await store.run("message.submit", {
      ...binaryArgs("s1", { keep: true, ttlSeconds: 3600, sendAt: T0 + 9000 }),
      toId: "a",
    });
    await node.pollNow();
    // n0 is alive and smaller: n1 neither holds the duties nor arms the scheduler.
    assert.deepEqual(duties, []);
    assert.deepEqual(scheduled, []);
    advance(2001);
    await node.pollNow();
    assert.deepEqual(duties, [true]);
    assert.deepEqual(scheduled, [T0 + 9000]);
    // n0 comes back (a later lease): n1 hands over.
    await store.run("node.lease", { nodeId: "n0", address: "x:1", version: "1", leaseMs: 2000 });
    await node.pollNow();
    assert.deepEqual(duties, [true, false]);

    const onPresence = node.handlers()[PRESENCE_SUBJECT];
    onPresence({ n: "n2", e: "b", o: true, t: 5 });
    onPresence({ n: "n1", e: "c", o: true, t: 5 }); // our own
    onPresence({ n: "n2", e: "d", o: "yes", t: 5 }); // malformed
    assert.deepEqual(presence, ["b true 5"]);
    node.presenceChanged("e", false, 7);
    // A stopping node announces the endpoints its stop took offline, after its poll stopped.
    await node.stop();
    node.presenceChanged("x", false, 8); // stopped: not published
    node.leaving(["f"], 8);
    assert.deepEqual(published.filter(([s]) => s === PRESENCE_SUBJECT), [
      [PRESENCE_SUBJECT, { n: "n1", e: "e", o: false, t: 7 }],
      [PRESENCE_SUBJECT, { n: "n1", e: "f", o: false, t: 8 }],
    ]);
  }));
