// Checklist item 16 (spec 13 弱网): through toxiproxy, kept messages all arrive, the application
// sees each exactly once, and every receipt arrives once. Follows sdk/conformance/checklist.md
// step by step, with the harness's toxiproxy commands only (the same ones every SDK uses).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { ConnectionEvent, Message, Receipt, SendResult } from "@nixevol/nixmsg";
import { closeAll, online, text, type Tracked } from "../helpers/clients.ts";
import { Events, within } from "../helpers/events.ts";
import { Harness } from "../helpers/harness.ts";
import {
  countFaults,
  reportFaults,
  scaledMs,
  settle,
} from "../../../../tests/helpers/fault_counts.ts";

const N = 100;
const BATCH = 10;
const KEEPALIVE_B = 10;
/** Bound of one step's wait (a disruption, then "B holds every body so far"). */
const STEP_MS = scaledMs(30_000, { capMs: 90_000 });
/** Bound of the final wait for every answer, body and receipt. */
const SETTLE_MS = scaledMs(60_000, { capMs: 240_000 });
/** Quiet window after the last event: a re-push after the 2 s ack timeout would land in it. */
const QUIET_MS = scaledMs(3000, { capMs: 12_000 });
/**
 * No message, receipt or answer for this long while some are missing: nothing more is coming
 * (the SDK re-sends after its backoff and the server re-pushes after the 2 s ack timeout), so what is missing is counted as lost.
 */
const STALL_MS = scaledMs(30_000, { capMs: 60_000 });

let h: Harness;
before(async () => {
  h = await Harness.start();
});
after(async () => {
  await closeAll();
  await h?.stop();
});

interface ProxyInfo {
  name: string;
  ws_url: string;
  tcp_url: string;
}

type Stream = "upstream" | "downstream";

/** `toxic_add` on `proxy`; resolves with the toxic's name. */
async function addToxic(
  proxy: string,
  type: string,
  stream: Stream,
  attributes: Record<string, number>,
): Promise<string> {
  const t = await h.command<{ name: string }>({
    cmd: "toxic_add",
    proxy,
    type,
    stream,
    attributes,
  });
  return t.name;
}

async function removeToxics(proxy: string, names?: string[]): Promise<void> {
  if (names === undefined) await h.command({ cmd: "toxic_remove", proxy });
  else for (const name of names) await h.command({ cmd: "toxic_remove", proxy, name });
}

/** Resolves on the client's next `reconnecting` state (counted from now). */
function nextReconnect(t: Tracked, timeoutMs: number, what: string): Promise<ConnectionEvent> {
  const n = t.states.count((e) => e.state === "reconnecting");
  return t.states.waitCount(n + 1, (e) => e.state === "reconnecting", what, timeoutMs)
    .then(() => t.states.items.filter((e) => e.state === "reconnecting")[n]!);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("checklist 16: weak network through toxiproxy: kept messages arrive exactly once, receipts once", async (t) => {
  const [ea, eb] = [await h.endpoint(), await h.endpoint()];
  // 1. A over raw TCP through PA, B over WebSocket through PB.
  const pa = await h.command<ProxyInfo>({ cmd: "toxiproxy_start" });
  const pb = await h.command<ProxyInfo>({ cmd: "toxiproxy_start" });
  assert.match(pa.tcp_url, /^mqtt:\/\/127\.0\.0\.1:\d+$/);
  assert.match(pb.ws_url, /^ws:\/\/127\.0\.0\.1:\d+\/mqtt$/);
  const t0 = Date.now();
  const reconnects = (x: Tracked) => x.states.count((e) => e.state === "reconnecting");
  const a = await online(pa.ws_url, ea, { transport: "tcp" });
  const b = await online(pb.ws_url, eb, { keepaliveSeconds: KEEPALIVE_B });
  const seen = new Map<string, number>(); // body -> callback runs
  const idOfBody = new Map<string, string>();
  const bodies = new Events<string>();
  b.client.onMessage((m: Message) => {
    const body = text(m);
    seen.set(body, (seen.get(body) ?? 0) + 1);
    idOfBody.set(body, m.id);
    bodies.push(body);
  });
  const receiptRuns = new Map<string, number>();
  const receipts = new Events<Receipt>();
  a.client.onReceipt((r: Receipt) => {
    receiptRuns.set(r.receiptId, (receiptRuns.get(r.receiptId) ?? 0) + 1);
    receipts.push(r);
  });

  // 2. Latency with jitter on every stream, to the end.
  for (const p of [pa.name, pb.name]) {
    for (const stream of ["upstream", "downstream"] as const) {
      await addToxic(p, "latency", stream, { latency: 40, jitter: 30 });
    }
  }

  // 3. Ten batches of ten kept messages, each with its disruption.
  const sends: Promise<SendResult>[] = [];
  const sendBatch = () => {
    for (let i = 0; i < BATCH; i++) {
      const n = sends.length;
      sends.push(a.client.send(eb.id, `w-${n}`, { keep: true, ttl: 600, meta: { n } }));
    }
  };
  // Bodies an earlier step stopped waiting for (bounded, or stalled): counted as lost at the
  // end if they never come; later steps do not wait for them again.
  let givenUp = 0;
  const allSoFar = async () => {
    const want = sends.length;
    const s = await settle({
      done: () => seen.size + givenUp >= want,
      subscribe: (f) => bodies.watch(f),
      timeoutMs: STEP_MS,
      quietMs: 0,
      stallMs: STALL_MS,
    });
    if (!s.done) givenUp = want - seen.size;
  };
  const steps: Record<number, () => Promise<void>> = {
    2: async () => {
      const sliced = [
        await addToxic(pb.name, "slicer", "upstream", {
          average_size: 16,
          size_variation: 8,
          delay: 500,
        }),
        await addToxic(pb.name, "slicer", "downstream", {
          average_size: 16,
          size_variation: 8,
          delay: 500,
        }),
      ];
      const slow = await addToxic(pa.name, "bandwidth", "upstream", { rate: 16 });
      sendBatch();
      await allSoFar();
      await removeToxics(pb.name, sliced);
      await removeToxics(pa.name, [slow]);
    },
    3: async () => {
      const late = await addToxic(pb.name, "latency", "upstream", { latency: 3000 });
      sendBatch();
      await sleep(3000); // how long the acks are held back, past the 2 s ack timeout
      await removeToxics(pb.name, [late]);
      await allSoFar();
    },
    4: async () => {
      const gone = nextReconnect(b, STEP_MS, "B reconnecting after its acks were lost");
      const lost = await addToxic(pb.name, "timeout", "upstream", { timeout: 300 });
      sendBatch();
      await gone;
      await removeToxics(pb.name, [lost]);
      await allSoFar();
    },
    5: async () => {
      const gone = nextReconnect(a, STEP_MS, "A reconnecting after its responses were lost");
      const lost = await addToxic(pa.name, "timeout", "downstream", { timeout: 300 });
      sendBatch();
      await gone;
      await removeToxics(pa.name, [lost]);
      await allSoFar();
    },
    6: async () => {
      const gone = nextReconnect(a, STEP_MS, "A reconnecting after reset_peer");
      const reset = await addToxic(pa.name, "reset_peer", "upstream", { timeout: 0 });
      sendBatch();
      await gone;
      await removeToxics(pa.name, [reset]);
      await allSoFar();
    },
    7: async () => {
      const gone = nextReconnect(b, STEP_MS, "B reconnecting after limit_data");
      const limit = await addToxic(pb.name, "limit_data", "downstream", { bytes: 1500 });
      sendBatch();
      await gone;
      await removeToxics(pb.name, [limit]);
      await allSoFar();
    },
    8: async () => {
      const bound = 1.5 * KEEPALIVE_B * 1000 + 15_000;
      const gone = nextReconnect(b, bound, "B's keep-alive ending the half-open connection");
      const dead = [
        await addToxic(pb.name, "timeout", "upstream", { timeout: 0 }),
        await addToxic(pb.name, "timeout", "downstream", { timeout: 0 }),
      ];
      sendBatch();
      await gone;
      await removeToxics(pb.name, dead);
      await allSoFar();
    },
    9: async () => {
      await removeToxics(pa.name);
      await removeToxics(pb.name);
      sendBatch();
      await allSoFar();
    },
  };
  for (let batch = 1; batch <= N / BATCH; batch++) {
    const step = steps[batch];
    if (step) await step();
    else {
      sendBatch();
      await allSoFar();
    }
  }

  // 4. Every send answered, A holds N receipts (bounded, never failing); then a quiet window for
  // late duplicates. The counts are printed and recorded before they are asserted.
  const answered = await within(
    Promise.allSettled(sends),
    SETTLE_MS,
    "every send answered",
  )
    .catch(() => null);
  const settled = await settle({
    done: () => seen.size >= N && receiptRuns.size >= N,
    subscribe: (f) => {
      const offs = [bodies.watch(f), receipts.watch(f)];
      return () => offs.forEach((off) => off());
    },
    timeoutMs: SETTLE_MS,
    quietMs: QUIET_MS,
    stallMs: STALL_MS,
  });
  const unanswered = answered === null ? N : answered.filter((r) => r.status === "rejected").length;
  const pushes = await serverPushes(ea.id).catch(() => null);
  const extra = (m: Map<string, number>) => [...m.values()].reduce((n, v) => n + v - 1, 0);
  reportFaults({
    key: "weak-network/checklist-16",
    fault: "checklist 16: toxiproxy disruptions, A over TCP, B over WebSocket",
    ...countFaults(Array.from({ length: N }, (_, i) => `w-${i}`), [{
      has: (body) => seen.has(body),
      duplicates: extra(seen) + extra(receiptRuns),
      redelivered: pushes === null ? null : pushes.attempts - N,
    }]),
    crashes: h.crashes(),
    ms: Date.now() - t0,
    figures: {
      pushes: pushes?.attempts ?? -1,
      reconnects: reconnects(a) + reconnects(b),
      unanswered_sends: unanswered,
      missing_receipts: Math.max(0, N - receiptRuns.size),
      late_events: settled.late,
    },
  }, `waited ${settled.ms} ms (bound ${SETTLE_MS} ms), done ${settled.done}`);
  assert.equal(unanswered, 0, "every send answered");
  const sent = (answered ?? []).map((r) => (r as PromiseFulfilledResult<SendResult>).value);

  // 5. Exactly once at the application, one accepted receipt per message.
  const ids = sent.map((r) => r.id);
  assert.equal(new Set(ids).size, N, "distinct message ids");
  sent.forEach((r, i) => assert.equal(idOfBody.get(`w-${i}`), r.id, `id of w-${i}`));
  assert.equal(seen.size, N, "B's application saw every body");
  assert.deepEqual([...seen].filter(([, n]) => n !== 1), [], "each exactly once");
  assert.equal(receipts.items.length, N, "one receipt callback per message");
  assert.equal(receiptRuns.size, N, "distinct receipts");
  for (const r of receipts.items) {
    assert.equal(r.state, "accepted");
    assert.equal(r.endpointId, eb.id);
  }
  assert.deepEqual(new Set(receipts.items.map((r) => r.id)), new Set(ids), "a receipt per id");
  assert.ok(reconnects(a) >= 2, `A reconnected ${reconnects(a)} times`);
  assert.ok(reconnects(b) >= 2, `B reconnected ${reconnects(b)} times`);
  assert.equal(b.revoked.count(), 0, "nothing revoked at B");

  // 6. The server agrees, and it pushed some messages more than once.
  assert.ok(pushes !== null, "the admin API listed the messages");
  const items = pushes.items;
  assert.equal(items.length, N, "one record per send");
  assert.deepEqual(new Set(items.map((m) => m.id)), new Set(ids));
  for (const m of items) {
    assert.equal(m.state, "completed", `record ${m.id}`);
    assert.equal(m.counts.accepted, 1, `record ${m.id} accepted once`);
  }
  const attempts = pushes.attempts;
  t.diagnostic(
    `${N} sent, ${seen.size} delivered once to the application, ${attempts} server pushes, ` +
      `${receipts.items.length} receipts; reconnects A ${reconnects(a)}, B ${reconnects(b)}`,
  );
  assert.ok(
    attempts > N,
    `the server pushed again (${attempts} pushes for ${N} messages)`,
  );
});

interface MessageRecord {
  seq: number;
  id: string;
  state: string;
  counts: Record<string, number>;
}

/** `sender`'s message records (at most 200) and the push attempts of all their deliveries. */
async function serverPushes(
  sender: string,
): Promise<{ items: MessageRecord[]; attempts: number }> {
  const list = await h.admin(
    "GET",
    `/api/admin/messages?sender=${sender}&limit=200`,
  );
  assert.equal(list.status, 200, JSON.stringify(list.body));
  const items = (list.body as { data: { items: MessageRecord[] } }).data.items;
  let attempts = 0;
  for (const m of items) {
    const d = await h.admin("GET", `/api/admin/messages/${m.seq}`);
    assert.equal(d.status, 200, JSON.stringify(d.body));
    for (
      const x of (d.body as { data: { items: { attempts: number }[] } }).data
        .items
    ) {
      attempts += x.attempts;
    }
  }
  return { items, attempts };
}
