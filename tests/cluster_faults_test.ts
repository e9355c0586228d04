// issue 30, the cluster's failure tests under a steady stream: three `nixmsg serve` nodes (the
// shipped permissions) on one real PostgreSQL database and one real nats-server, real MQTT clients
// over WebSocket (tests/helpers/cluster.ts `ClusterPeer`: one connection per endpoint, moved to the
// next live node when its node goes). Senders pace kept messages with receipts at a steady total
// rate, each receiver acks what it gets, each sender confirms its receipts.
//
// - Rolling restart: node 1, then 2, then 3 are stopped (SIGTERM) and started again with the same
//   node id and data directory, each once the previous one serves again; 0 lost, 0 duplicated.
// - NATS outage: nats-server is stopped for a while and started again; what is sent meanwhile is
//   delivered through the store poll within its bound, and afterwards the nodes route through
//   NATS again; 0 lost, 0 duplicated.
//
// Both count after a bounded drain and a quiet window (tests/helpers/fault_counts.ts), print and
// record the figures to the fault summary, then assert. Knobs (environment):
//
//   NIXMSG_CLUSTER_RATE=200            total kept msg/s of both tests
//   NIXMSG_CLUSTER_PAIRS=20            sender/receiver pairs (every pair crosses nodes)
//   NIXMSG_NATS_OUTAGE_SECONDS=30      how long NATS is down
//
//   eval "$(bash scripts/test_postgres.sh start)"
//   deno test -A --frozen tests/cluster_faults_test.ts
import assert from "node:assert/strict";
import { KEEP, sendFrame } from "./helpers/messaging.ts";
import { NATS_SKIP_REASON } from "./helpers/nats_server.ts";
import { type Cluster, ClusterPeer, type PeerFrame, startCluster } from "./helpers/cluster.ts";
import {
  countFaults,
  QUIET_MS,
  reportFaults,
  scaledMs,
  settle,
  type Settled,
} from "./helpers/fault_counts.ts";
import { PG_SKIP_REASON } from "../server/store/postgres/_testing.ts";
import { NatsBus } from "../server/cluster/nats_bus.ts";
import { WAKE_SUBJECT, type WakeNotice } from "../server/cluster/cluster_node.ts";
import { Logger } from "../server/log/log.ts";

const SKIP = PG_SKIP_REASON ?? NATS_SKIP_REASON;
if (SKIP) console.error(SKIP);

const envNumber = (name: string, fallback: number): number => {
  const v = Number(Deno.env.get(name) ?? fallback);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
};
const RATE = envNumber("NIXMSG_CLUSTER_RATE", 200);
const PAIRS = envNumber("NIXMSG_CLUSTER_PAIRS", 20);
const OUTAGE_S = envNumber("NIXMSG_NATS_OUTAGE_SECONDS", 30);
/** Sends in flight per sender at most; more wait in its queue (the backlog). */
const WINDOW = 16;
/** A cluster node's store poll (server default). */
const POLL_MS = 1000;
/** One request's answer, and a sender's wait for a connection. */
const REQUEST_MS = scaledMs(15_000, { capMs: 45_000 });
/** How long one message's send is retried (busy, a closed connection) before it is given up. */
const SEND_BOUND_MS = scaledMs(60_000, { capMs: 180_000 });
/** How long a phase may take to see the stream move (acks counted) before the test goes on. */
const PHASE_MS = scaledMs(20_000, { capMs: 60_000 });

/**
 * The stream: P senders and P receivers, pair i's sender on node i mod 3 and its receiver on the
 * next node, `rate` kept messages per second in total. Everything is counted by message id.
 */
class Stream {
  readonly cl: Cluster;
  readonly senders: ClusterPeer[] = [];
  readonly receivers: ClusterPeer[] = [];
  /** Every id handed to a sender, in order. */
  readonly issued: string[] = [];
  readonly answeredAt = new Map<string, number>();
  readonly seenAt = new Map<string, number>();
  /** Ids whose ack was answered ok. */
  readonly acked = new Set<string>();
  /** Ids with an `accepted` receipt whose `receipt_ack` was answered ok. */
  readonly receiptAcked = new Set<string>();
  /** Receipts with another state than `accepted`. */
  readonly badReceipts: string[] = [];
  /** A `msg` got again after its ack was answered. */
  duplicated = 0;
  /** A `msg` got again before its ack was answered (dedup by id hides it). */
  redelivered = 0;
  /** A receipt got again after its `receipt_ack` was answered (allowed, spec: dedup by id). */
  receiptRepeats = 0;
  busyRetried = 0;
  sendRetries = 0;
  readonly refused = new Map<string, number>();
  readonly gaveUp: string[] = [];
  maxBacklog = 0;
  #queues: string[][] = [];
  #inflight: number[] = [];
  #sends = new Set<Promise<void>>();
  #pacer: ReturnType<typeof setInterval> | undefined;
  #listeners = new Set<() => void>();
  #closed = false;
  #sendStart = 0;
  #perSecond: number[] = [];
  #answeredBefore = 0;
  #sendEnd = 0;

  constructor(cl: Cluster) {
    this.cl = cl;
  }

  /** Calls `fn` on every event (a msg, an ack or receipt answered); returns its removal. */
  subscribe = (fn: () => void): () => void => {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  };

  #notify(): void {
    for (const fn of [...this.#listeners]) fn();
  }

  /** Connects every peer (sender i to node i mod n, its receiver to the next). */
  async connect(): Promise<void> {
    const n = this.cl.nodes.length;
    for (let i = 0; i < PAIRS; i++) {
      const s = new ClusterPeer(this.cl, `s${i}`);
      const r = new ClusterPeer(this.cl, `r${i}`);
      s.onFrame = (f) => this.#onSenderFrame(s, f);
      r.onFrame = (f) => this.#onReceiverFrame(r, f);
      this.senders.push(s);
      this.receivers.push(r);
      this.#queues.push([]);
      this.#inflight.push(0);
      await r.start((i + 1) % n);
      await s.start(i % n);
    }
  }

  #onReceiverFrame(r: ClusterPeer, f: PeerFrame): void {
    if (f.type !== "msg") return;
    const id = String(f.id);
    if (this.acked.has(id)) this.duplicated++;
    else if (this.seenAt.has(id)) this.redelivered++;
    else this.seenAt.set(id, performance.now());
    this.#notify();
    // Acked on the connection it came on; when that one closes first, the message is pushed
    // again to the next one and acked there.
    void this.#retryBusy(r, { type: "ack", from: f.from, id: f.id }).then((resp) => {
      if (resp?.ok !== true) return;
      this.acked.add(id);
      this.#notify();
    });
  }

  #onSenderFrame(s: ClusterPeer, f: PeerFrame): void {
    if (f.type !== "receipt") return;
    const id = String(f.id);
    if (f.state !== "accepted") this.badReceipts.push(`${id}:${String(f.state)}`);
    if (this.receiptAcked.has(id)) this.receiptRepeats++;
    void this.#retryBusy(s, { type: "receipt_ack", receipt_id: f.receipt_id }).then((resp) => {
      if (resp?.ok !== true) return;
      this.receiptAcked.add(id);
      this.#notify();
    });
  }

  /** One request, sent again while answered `busy` (bounded); null when it got no answer. */
  async #retryBusy(p: ClusterPeer, frame: Record<string, unknown>): Promise<PeerFrame | null> {
    for (let i = 0; i < 5; i++) {
      const r = await p.request(frame, REQUEST_MS).catch(() => null);
      const code = (r?.error as Record<string, unknown> | undefined)?.code;
      if (r === null || code !== "busy") return r;
      this.busyRetried++;
      await new Promise((res) => setTimeout(res, 20 * (i + 1)));
    }
    return null;
  }

  /** Sends `id` until it is answered ok (busy and a lost connection are retried), bounded. */
  async #sendOne(i: number, id: string): Promise<void> {
    const end = Date.now() + SEND_BOUND_MS;
    const frame = sendFrame(id, `r${i}`, id, { delay_ms: 0, ...KEEP });
    for (let attempt = 0; Date.now() < end && !this.#closed; attempt++) {
      if (attempt > 0) this.sendRetries++;
      const r = await this.senders[i]!.request(frame, REQUEST_MS).catch(() => null);
      if (r === null) {
        // Closed or unanswered: the same id again, on the next connection (not in a hot loop).
        await new Promise((res) => setTimeout(res, 50));
        continue;
      }
      if (r.ok === true) {
        this.answeredAt.set(id, performance.now());
        this.#notify();
        return;
      }
      const code = String((r.error as Record<string, unknown> | undefined)?.code);
      if (code === "busy") {
        this.busyRetried++;
        await new Promise((res) => setTimeout(res, 50));
        continue;
      }
      this.refused.set(code, (this.refused.get(code) ?? 0) + 1);
      return;
    }
    if (!this.#closed) this.gaveUp.push(id);
  }

  #pump(i: number): void {
    const q = this.#queues[i]!;
    while (this.#inflight[i]! < WINDOW && q.length > 0) {
      const id = q.shift()!;
      this.#inflight[i]!++;
      const p = this.#sendOne(i, id).finally(() => {
        this.#inflight[i]!--;
        this.#sends.delete(p);
        this.#pump(i);
      });
      this.#sends.add(p);
    }
  }

  /** Starts pacing: every 20 ms, the ids due at `rate` per second go to the senders in turn. */
  start(): void {
    this.#sendStart = performance.now();
    this.#pacer = setInterval(() => {
      const due = Math.floor((RATE * (performance.now() - this.#sendStart)) / 1000);
      while (this.issued.length < due) {
        const k = this.issued.length;
        const i = k % PAIRS;
        const id = `s${i}-${Math.floor(k / PAIRS)}`;
        this.issued.push(id);
        this.#queues[i]!.push(id);
        this.#pump(i);
      }
      const backlog = this.#queues.reduce((n, q) => n + q.length, 0);
      this.maxBacklog = Math.max(this.maxBacklog, backlog);
      // Messages answered in each whole second of the sending.
      const sec = Math.floor((performance.now() - this.#sendStart) / 1000);
      while (this.#perSecond.length < sec) {
        this.#perSecond.push(this.answeredAt.size - this.#answeredBefore);
        this.#answeredBefore = this.answeredAt.size;
      }
    }, 20);
  }

  /** Stops pacing and waits for every send to be answered or given up (bounded by the sends). */
  async stop(): Promise<void> {
    clearInterval(this.#pacer);
    if (this.#sendEnd === 0) this.#sendEnd = performance.now();
    while (this.#sends.size > 0) {
      await Promise.race(this.#sends);
    }
  }

  /** Messages answered per second over the sending time. */
  get achievedRate(): number {
    const s = (this.#sendEnd - this.#sendStart) / 1000;
    return s > 0 ? Math.round((this.answeredAt.size / s) * 10) / 10 : 0;
  }

  /**
   * Sends answered per second over the whole seconds of the sending after the first two (the
   * stream starting): the lowest and the median. A steady rate has its median at the target.
   */
  get perSecond(): { min: number; median: number } {
    const s = this.#perSecond.slice(2).sort((a, b) => a - b);
    return { min: s[0] ?? 0, median: s[Math.floor(s.length / 2)] ?? 0 };
  }

  /** Resolves once `check()` holds (re-checked on every event), or false after `ms`. */
  until(check: () => boolean, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      let off = () => {};
      const timer = setTimeout(() => {
        off();
        resolve(false);
      }, ms);
      const w = () => {
        if (!check()) return;
        clearTimeout(timer);
        off();
        resolve(true);
      };
      off = this.subscribe(w);
      w();
    });
  }

  /** After the sends: waits until every answered message is acked and its receipt confirmed. */
  drain(): Promise<Settled> {
    const done = () => {
      for (const id of this.answeredAt.keys()) {
        if (!this.acked.has(id) || !this.receiptAcked.has(id)) return false;
      }
      return true;
    };
    return settle({
      done,
      subscribe: this.subscribe,
      timeoutMs: scaledMs(30_000, { units: this.issued.length, perUnitMs: 2, capMs: 180_000 }),
      quietMs: QUIET_MS,
    });
  }

  /** Reconnects of all peers (connections opened after the first). */
  get reconnects(): number {
    return [...this.senders, ...this.receivers].reduce((n, p) => n + p.joins.length - 1, 0);
  }

  /** Lost (issued, never seen by its receiver) and duplicated, plus the figures both tests share. */
  counts() {
    const missingReceipts = [...this.answeredAt.keys()].filter((id) => !this.receiptAcked.has(id));
    return {
      ...countFaults(this.issued, [{
        has: (id) => this.seenAt.has(id),
        duplicates: this.duplicated,
        redelivered: this.redelivered,
      }]),
      missingReceipts,
      figures: {
        nodes: this.cl.nodes.length,
        pairs: PAIRS,
        target_rate: RATE,
        achieved_rate: this.achievedRate,
        answered_per_s_min: this.perSecond.min,
        answered_per_s_median: this.perSecond.median,
        answered: this.answeredAt.size,
        acked: this.acked.size,
        receipts_confirmed: this.receiptAcked.size,
        receipt_repeats: this.receiptRepeats,
        busy_retried: this.busyRetried,
        send_retries: this.sendRetries,
        gave_up: this.gaveUp.length,
        max_backlog: this.maxBacklog,
        reconnects: this.reconnects,
      },
    };
  }

  /** Fails on what the fault counts do not cover: refused sends, missing or bad receipts. */
  assertClean(missingReceipts: readonly string[]): void {
    assert.deepEqual([...this.refused], [], "sends refused");
    assert.deepEqual(this.gaveUp.slice(0, 20), [], `sends given up: ${this.gaveUp.length}`);
    assert.deepEqual(
      missingReceipts.slice(0, 20),
      [],
      `receipts not confirmed: ${missingReceipts.length}`,
    );
    assert.deepEqual(this.badReceipts.slice(0, 20), [], "receipts not accepted");
  }

  /** Ends everything (also after a failed step): no more sends, every peer closed. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#pacer);
    for (const p of [...this.senders, ...this.receivers]) await p.close();
    await this.stop();
  }
}

/** Waits (bounded, re-checking every 100 ms) until `check()` holds; false after `ms`. */
async function poll(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() >= end) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/** The `q` quantile (0..1) of `values`, in ms, rounded. */
function quantile(values: number[], q: number): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor(q * s.length))]!);
}

const ids = Array.from({ length: PAIRS }, (_, i) => [`s${i}`, `r${i}`]).flat();

/** Runs `fn` on a fresh 3-node cluster with a stream of the pairs; closes everything after. */
async function withStream(fn: (s: Stream, cl: Cluster) => Promise<void>): Promise<void> {
  const cl = await startCluster(3, [...ids, "probe"]);
  const s = new Stream(cl);
  try {
    await s.connect();
    await fn(s, cl);
  } finally {
    await s.close();
    await cl.close();
  }
}

Deno.test({
  name:
    "rolling restart of all 3 nodes under a steady stream of kept messages: 0 lost, 0 duplicated",
  ignore: SKIP !== null,
  fn: () =>
    withStream(async (s, cl) => {
      const t0 = performance.now();
      s.start();
      // Two seconds of the stream acked before the first restart.
      const warm = await s.until(() => s.acked.size >= 2 * RATE, PHASE_MS);
      assert.ok(warm, `the stream did not start: acked ${s.acked.size}`);
      const restartMs: number[] = [];
      const reconnectMs: number[] = [];
      const allConnected = () => [...s.senders, ...s.receivers].every((p) => p.node >= 0);
      for (let i = 0; i < 3; i++) {
        const r0 = performance.now();
        await cl.stop(i);
        // Its clients moved to the two other nodes (the reconnect storm onto them).
        assert.ok(await poll(allConnected, PHASE_MS), `peers not back after node ${i + 1} stopped`);
        reconnectMs.push(Math.round(performance.now() - r0));
        await cl.restart(i);
        restartMs.push(Math.round(performance.now() - r0));
        // Serving again: a fresh login on it completes hello.
        const probe = new ClusterPeer(cl, "probe");
        try {
          await probe.start(i);
          assert.equal(probe.joins[0], i, `the probe logged in on node ${i + 1}`);
        } finally {
          await probe.close();
        }
        // The stream moves on (one second of it acked).
        const before = s.acked.size;
        await s.until(() => s.acked.size >= before + RATE, PHASE_MS);
      }
      await s.stop();
      const drained = await s.drain();
      const c = s.counts();
      const row = reportFaults({
        key: "cluster/rolling-restart",
        fault: "rolling restart of 3 nodes (SIGTERM, start again) under a steady kept stream",
        messages: c.messages,
        lost: c.lost,
        lost_ids: c.lost_ids,
        duplicated: c.duplicated,
        redelivered: c.redelivered,
        crashes: 0,
        ms: Math.round(performance.now() - t0),
        figures: {
          ...c.figures,
          restarts: 3,
          restart_ms_max: Math.max(...restartMs),
          reconnect_ms_max: Math.max(...reconnectMs),
          drain_ms: drained.ms,
          drained: drained.done ? 1 : 0,
        },
      });
      console.error(
        `stop → every client on another node, ms: ${reconnectMs.join(", ")}; ` +
          `stop → serving again, ms: ${restartMs.join(", ")}; ${JSON.stringify(row.figures)}`,
      );
      s.assertClean(c.missingReceipts);
    }),
});

Deno.test({
  name:
    `NATS stopped for ${OUTAGE_S} s under a steady stream: delivered through the poll, 0 lost, 0 duplicated, routing resumes`,
  ignore: SKIP !== null,
  fn: () =>
    withStream(async (s, cl) => {
      const t0 = performance.now();
      s.start();
      const warm = await s.until(() => s.acked.size >= 2 * RATE, PHASE_MS);
      assert.ok(warm, `the stream did not start: acked ${s.acked.size}`);
      const ackedBefore = s.acked.size;
      const down0 = performance.now();
      await cl.nats.stop();
      // The outage itself lasts a fixed time: it is the fault under test, not a wait for a state.
      await new Promise((r) => setTimeout(r, OUTAGE_S * 1000));
      const ackedDuring = s.acked.size - ackedBefore;
      await cl.nats.start();
      const down1 = performance.now();
      // Every node reconnects to NATS (its log says so), bounded.
      const reconnected = await poll(
        () => cl.nodes.every((n) => n!.logs.some((l) => l.msg === "NATS reconnected")),
        scaledMs(20_000, { capMs: 60_000 }),
      );
      // Routing resumes: the nodes publish wake-ups for the receivers on other nodes again.
      const wakes = new Set<string>();
      const bus = NatsBus.open({
        url: cl.nats.url,
        token: "cluster-test-token",
        credentials: null,
        name: "test-listener",
        log: new Logger("error"),
      }, {
        [WAKE_SUBJECT]: (v) => {
          for (const e of (v as WakeNotice).d) wakes.add(e);
        },
      });
      let routed = false;
      try {
        routed = await poll(
          () => s.receivers.every((r) => wakes.has(r.id)),
          scaledMs(15_000, { capMs: 45_000 }),
        );
      } finally {
        await bus.close();
      }
      const before = s.acked.size;
      await s.until(() => s.acked.size >= before + RATE, PHASE_MS);
      await s.stop();
      const drained = await s.drain();
      // Delivery time of what was answered while NATS was down: answer → msg at the receiver.
      const outageLatency: number[] = [];
      for (const [id, at] of s.answeredAt) {
        if (at < down0 || at > down1) continue;
        const seen = s.seenAt.get(id);
        if (seen !== undefined) outageLatency.push(Math.max(0, seen - at));
      }
      const c = s.counts();
      const bound = scaledMs(3 * POLL_MS + 2000, { capMs: 20_000 });
      const row = reportFaults({
        key: "cluster/nats-outage",
        fault: `NATS stopped for ${OUTAGE_S} s under a steady kept stream, then started again`,
        messages: c.messages,
        lost: c.lost,
        lost_ids: c.lost_ids,
        duplicated: c.duplicated,
        redelivered: c.redelivered,
        crashes: 0,
        ms: Math.round(performance.now() - t0),
        figures: {
          ...c.figures,
          outage_s: OUTAGE_S,
          outage_messages: outageLatency.length,
          acked_during_outage: ackedDuring,
          outage_delivery_p50_ms: quantile(outageLatency, 0.5),
          outage_delivery_p99_ms: quantile(outageLatency, 0.99),
          outage_delivery_max_ms: quantile(outageLatency, 1),
          outage_delivery_bound_ms: bound,
          drain_ms: drained.ms,
          drained: drained.done ? 1 : 0,
        },
      });
      console.error(JSON.stringify(row.figures));
      s.assertClean(c.missingReceipts);
      assert.ok(reconnected, "every node logged NATS reconnected");
      assert.ok(
        routed,
        `wake-ups seen for ${wakes.size} of ${PAIRS} receivers after NATS returned`,
      );
      assert.ok(outageLatency.length > 0, "messages were sent during the outage");
      assert.ok(
        quantile(outageLatency, 1) <= bound,
        `slowest delivery during the outage ${quantile(outageLatency, 1)} ms > ${bound} ms`,
      );
    }),
});
