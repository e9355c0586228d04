import assert from "node:assert/strict";
import { join } from "node:path";
import { Logger } from "../../log/log.ts";
import { openDb } from "../../store/db.ts";
import { migrate } from "../../store/migrations.ts";
import { addEndpoint, send } from "../../store/ops/_testing.ts";
import type { ClaimedDelivery } from "../../store/ops/deliveries.ts";
import { Writer } from "../../store/writer.ts";
import type { App } from "../app_context.ts";
import type { Conn } from "../connections.ts";
import type { MqttApp } from "../mqtt_app.ts";
import type { Bookkeeping } from "./bookkeeping.ts";
import type { MsgFrameCache } from "./frames.ts";
import { type ClaimTicket, PushLoop } from "./push_loop.ts";
import { Semaphore } from "./semaphore.ts";

const WINDOW = 8;
const MESSAGES = 120;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Pushed {
  seq: number;
  from: string;
  id: string;
}

/**
 * A push loop on a real writer and database, with a client that acks every push at once and a
 * handler side that finishes each ack (`acked`, then the ticket's `done`) after a random delay,
 * as the handlers' awaits can. Most pushes come from claims lent to acks.
 */
Deno.test("lent claims push every message once, in order, within the window", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-push-loop-" });
  const path = join(dir, "nixmsg.db");
  await migrate(path, { backupDir: join(dir, "backup") });
  const seed = openDb(path);
  addEndpoint(seed, "s");
  addEndpoint(seed, "r");
  for (let i = 0; i < MESSAGES; i++) {
    send(seed, "s", { toId: "r", id: `m${i}`, receipt: false }, Date.now());
  }
  seed.close();

  const writer = await Writer.start({ path });
  const logs: string[] = [];
  const app = {
    store: writer,
    config: { limits: { delivery_window: WINDOW, ack_timeout_seconds: 300 } },
    clock: () => Date.now(),
    log: new Logger("debug", {}, (line) => logs.push(line)),
  } as unknown as App;
  const conn = { code: "c1", endpointId: "r", closed: false } as unknown as Conn;
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const frameOf = (c: ClaimedDelivery) =>
    enc.encode(JSON.stringify({ seq: c.seq, from: c.senderId, id: c.msgId }));

  const pushed: Pushed[] = [];
  let inClient = 0;
  let maxInClient = 0;
  let lent = 0;
  const acks: Promise<void>[] = [];
  let allAcked: () => void = () => {};
  const done = new Promise<void>((resolve) => allAcked = resolve);
  let acked = 0;

  const ack = async (p: Pushed) => {
    const ticket: ClaimTicket | null = loop.lendClaim(p.from, p.id);
    if (ticket) lent++;
    let claimed: readonly ClaimedDelivery[] | null = null;
    try {
      // Queued in the same turn as the ticket, as the ack handler does.
      const r = await writer.run("delivery.ack", {
        endpointId: "r",
        from: p.from,
        id: p.id,
        ...(ticket ? { claim: { connCode: ticket.connCode, limit: ticket.limit } } : {}),
      });
      claimed = r.claimed;
      await pause(Math.floor(Math.random() * 4));
      inClient--;
      loop.acked(p.from, p.id, ticket === null);
    } finally {
      ticket?.done(claimed);
    }
    if (++acked === MESSAGES) allAcked();
  };

  const mqtt = {
    frameLimit: () => null,
    publish: (_conn: Conn, bytes: Uint8Array) => {
      const p = JSON.parse(dec.decode(bytes)) as Pushed;
      pushed.push(p);
      maxInClient = Math.max(maxInClient, ++inClient);
      // The client acks a moment later, as a real one does (its ack is a frame of its own).
      acks.push(pause(2).then(() => ack(p)));
      return Promise.resolve("acked" as const);
    },
  } as unknown as MqttApp;
  const frames = {
    cached: frameOf,
    get: (c: ClaimedDelivery) => Promise.resolve(frameOf(c)),
  } as unknown as MsgFrameCache;
  const loop: PushLoop = new PushLoop(conn, {
    app,
    mqtt,
    frames,
    bookkeeping: {} as Bookkeeping,
    bigFrames: new Semaphore(64),
    apply: () => {},
  });

  const timeout = setTimeout(() => allAcked(), 20_000);
  try {
    loop.wake();
    await done;
    await Promise.all(acks);
    assert.equal(acked, MESSAGES, `acked ${acked} of ${MESSAGES}, pushed ${pushed.length}`);
    assert.equal(pushed.length, MESSAGES, "every message pushed exactly once");
    assert.equal(new Set(pushed.map((p) => p.id)).size, MESSAGES, "no duplicates");
    for (let i = 1; i < pushed.length; i++) {
      assert.ok(pushed[i].seq > pushed[i - 1].seq, `push ${i} out of order`);
    }
    assert.ok(maxInClient <= WINDOW, `window exceeded: ${maxInClient} in flight`);
    assert.equal(maxInClient, WINDOW, "the window fills");
    assert.ok(lent > 0, "acks lent claims");
    assert.equal(loop.inflight, 0);
    assert.deepEqual(logs.filter((l) => l.includes("push failed")), []);
  } finally {
    clearTimeout(timeout);
    loop.stop();
    await writer.close();
    await Deno.remove(dir, { recursive: true });
  }
});
