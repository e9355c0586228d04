// Spec 13 "弱网", packet loss: the server runs inside a network namespace joined to this one by a
// veth pair, and nftables on the namespace's side drops a random 20 % of the packets each way
// (`numgen random mod 100 < 20 drop`; the kernel here has no sch_netem, so `tc … netem loss` is
// not available). Sender A and receiver B (the SDK, in this process) reach the server only over
// that pair. Every kept message arrives, B's application sees each exactly once, A gets one
// `accepted` receipt per message.
//
// Needs root, iproute2 and nftables (tests/run.sh installs nftables); otherwise it is skipped with
// the reason. The namespace, the pair and the nft table are removed in `finally`, also on failure.
// NIXMSG_LOSS_SCALE=N (default 1) sends N times as many messages; NIXMSG_LOSS_PERCENT changes the
// loss (default 20).
import assert from "node:assert/strict";
import { after, test } from "node:test";
import type { Message, Receipt, SendResult } from "@nixevol/nixmsg";
import { closeAll, online, text } from "../helpers/clients.ts";
import { Events, within } from "../helpers/events.ts";
import {
  countFaults,
  reportFaults,
  scaledMs,
  settle,
} from "../../../../tests/helpers/fault_counts.ts";
import { Harness } from "../helpers/harness.ts";
import { LossyNamespace } from "../helpers/netns.ts";

const SCALE = Math.max(1, Number(process.env.NIXMSG_LOSS_SCALE ?? 1));
const PERCENT = Number(process.env.NIXMSG_LOSS_PERCENT ?? 20);
const N = 200 * SCALE;
/**
 * Bound for "everything delivered and receipted": about 4 packets a message each way, each lost
 * at PERCENT, a lost one retransmitted after TCP's RTO (≥ 200 ms) — 60 s plus 0.5 s a message at
 * 20 %, times the load factor, at most 15 minutes.
 */
const SETTLE_MS = scaledMs(60_000, {
  units: N,
  perUnitMs: 25 * PERCENT,
  capMs: 900_000,
});
/**
 * Bound for a client's first "online": a lost SYN is sent again after 1, 2, 4, 8 … s, and the
 * CONNECT, CONNACK and hello may each be lost too; a minute is ~8 losses in a row at 20 %.
 */
const ONLINE_MS = scaledMs(60_000, { capMs: 180_000 });
/** Quiet window after the last message: a re-push after the 2 s ack timeout would land in it. */
const QUIET_MS = scaledMs(3000, { capMs: 12_000 });
/**
 * No message, receipt or answer for this long while some are missing: nothing more is coming
 * (a lost SYN or segment is resent after a backoff (1, 2, 4 … s), a cut connection is re-made), so what is missing is counted as lost.
 */
const STALL_MS = scaledMs(30_000, { capMs: 60_000 });

let ns: LossyNamespace | null = null;
let h: Harness | null = null;
after(async () => {
  await closeAll();
  await h?.stop();
  ns?.destroy();
});

test(`packet loss: ${PERCENT} % each way, kept messages all arrive exactly once`, async (t) => {
  const made = LossyNamespace.create(PERCENT);
  if (typeof made === "string") {
    console.log(`# packet loss test skipped: ${made}`);
    t.skip(made);
    return;
  }
  ns = made;
  try {
    h = await Harness.start({
      netns: ns.name,
      set: { listen: `${ns.nsAddr}:0` },
    });
    assert.ok(
      h.info.ws_url.includes(ns.nsAddr),
      `the server listens in the namespace`,
    );
    const [ea, eb] = [await h.endpoint(), await h.endpoint()];
    const a = await online(h.info.ws_url, ea, { keepaliveSeconds: 10 }, ONLINE_MS);
    const b = await online(h.info.ws_url, eb, { keepaliveSeconds: 10 }, ONLINE_MS);

    const seen = new Map<string, number>(); // body -> callback runs
    const idOfBody = new Map<string, string>();
    const bodies = new Events<string>();
    b.client.onMessage((m: Message) => {
      const body = text(m);
      seen.set(body, (seen.get(body) ?? 0) + 1);
      idOfBody.set(body, m.id);
      bodies.push(body);
    });
    const receipts = new Events<Receipt>();
    const receiptRuns = new Map<string, number>();
    a.client.onReceipt((r: Receipt) => {
      receiptRuns.set(r.receiptId, (receiptRuns.get(r.receiptId) ?? 0) + 1);
      receipts.push(r);
    });

    const t0 = Date.now();
    const sends: Promise<SendResult>[] = [];
    for (let i = 0; i < N; i++) {
      sends.push(
        a.client.send(eb.id, `loss-${i}`, {
          keep: true,
          ttl: 600,
          meta: { i },
        }),
      );
      if (i % 20 === 19) await new Promise((r) => setTimeout(r, 100));
    }
    // Bounded waits that never throw: count what arrived, then assert the counts.
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
    const tookMs = Date.now() - t0;

    const c = ns.counts();
    const reconnects = a.states.count((e) => e.state === "reconnecting") +
      b.states.count((e) => e.state === "reconnecting");
    const bodiesSent = Array.from({ length: N }, (_, i) => `loss-${i}`);
    const extra = (m: Map<string, number>) => [...m.values()].reduce((n, v) => n + v - 1, 0);
    const dupes = [...seen].filter(([, n]) => n !== 1);
    t.diagnostic(
      `${N} kept messages in ${tookMs} ms: ${seen.size} delivered, ${dupes.length} duplicated at ` +
        `the application, ${receipts.items.length} receipts; packets to the namespace ` +
        `${c.in.packets} (${c.in.dropped} dropped), from it ${c.out.packets} ` +
        `(${c.out.dropped} dropped); SDK reconnects ${reconnects}`,
    );
    const unanswered = answered === null
      ? N
      : answered.filter((r) => r.status === "rejected").length;
    const lostReceipts = receiptRuns.size < N ? N - receiptRuns.size : 0;
    reportFaults({
      key: `packet-loss${
        SCALE === 1 && PERCENT === 20 ? "" : `@scale=${SCALE},percent=${PERCENT}`
      }`,
      fault: `${PERCENT} % packet loss each way (nftables in a network namespace)`,
      ...countFaults(bodiesSent, [{
        has: (body) => seen.has(body),
        duplicates: extra(seen) + extra(receiptRuns),
        redelivered: null,
      }]),
      crashes: h.crashes(),
      ms: tookMs,
      figures: {
        packets: c.in.packets + c.out.packets,
        dropped: c.in.dropped + c.out.dropped,
        reconnects,
        unanswered_sends: unanswered,
        missing_receipts: lostReceipts,
        late_events: settled.late,
      },
    }, `waited ${settled.ms} ms (bound ${SETTLE_MS} ms), done ${settled.done}`);
    assert.equal(unanswered, 0, "every send answered");
    const sent = (answered ?? []).map((r) => (r as PromiseFulfilledResult<SendResult>).value);

    // The loss really happened, at about the configured rate, each way.
    for (const [dir, x] of Object.entries(c)) {
      assert.ok(x.packets >= 200, `${dir}: ${x.packets} packets`);
      const rate = (100 * x.dropped) / x.packets;
      assert.ok(
        Math.abs(rate - PERCENT) < 8,
        `${dir}: ${rate.toFixed(1)} % dropped`,
      );
    }
    // Every message once, with the id its send returned, and one accepted receipt each.
    assert.equal(new Set(sent.map((r) => r.id)).size, N, "distinct ids");
    sent.forEach((r, i) => assert.equal(idOfBody.get(`loss-${i}`), r.id, `id of loss-${i}`));
    assert.equal(seen.size, N, "every message delivered");
    assert.deepEqual(dupes, [], "no duplicates at the application");
    assert.equal(receipts.items.length, N, "one receipt callback per message");
    assert.equal(receiptRuns.size, N);
    for (const r of receipts.items) {
      assert.equal(r.state, "accepted");
      assert.equal(r.endpointId, eb.id);
    }
  } finally {
    await closeAll();
    await h?.stop();
    h = null;
    ns.destroy();
  }
});
