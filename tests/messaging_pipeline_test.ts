// Pipelined requests on one connection (spec 5, 7.2, 7.3, 7.5): many sends in flight at once,
// still queued to the writer in arrival order, answered after their own COMMIT.
import assert from "node:assert/strict";
import { type Frame, type TestClient } from "./helpers/client.ts";
import { type Data, msgIds, sendFrame, sendNowFrame, withServer } from "./helpers/messaging.ts";
import { WriteFault } from "./helpers/db_fault.ts";
import type { CommitInfo } from "../server/store/writer.ts";

/** No rate limit and a wide delivery window: the tests flood one connection on purpose. */
const FLOOD = { limits: { requests_per_second: 1_000_000, delivery_window: 1024 } };

/**
 * Publishes every frame at once (MQTT.js writes them back to back, without waiting for any
 * PUBACK) and resolves with their `resp` frames in request order.
 */
async function flood(c: TestClient, frames: Data[]): Promise<Frame[]> {
  const rids = frames.map(() => c.nextRid());
  const published = frames.map((f, i) =>
    c.mqtt.publishAsync(`nix/c/${c.id}/up`, JSON.stringify({ v: 1, rid: rids[i], ...f }), {
      qos: 1,
    })
  );
  const wanted = new Set(rids);
  const byRid = new Map<string, Frame>();
  const take = () => {
    for (const f of c.frames) {
      if (f.type === "resp" && wanted.has(f.rid as string)) byRid.set(f.rid as string, f);
    }
    return byRid.size === rids.length;
  };
  // A publish the broker never acknowledged fails the test through the missing response.
  const acked = Promise.allSettled(published);
  await c.until(take, `${rids.length} responses (${byRid.size} so far)`, 30_000);
  await acked;
  return rids.map((rid) => byRid.get(rid)!);
}

/** Records the size and outcome of every writer batch while `fn` runs. */
async function batches<T>(
  h: { t: { server: { store: { onCommit(fn: (i: CommitInfo) => void): () => void } } } },
  fn: () => Promise<T>,
): Promise<{ result: T; seen: CommitInfo[] }> {
  const seen: CommitInfo[] = [];
  const off = h.t.server.store.onCommit((i) => seen.push(i));
  try {
    return { result: await fn(), seen };
  } finally {
    off();
  }
}

Deno.test("300 sends in flight on one connection are all answered and pushed in submission order", async () => {
  await withServer(FLOOD, async (h) => {
    await h.endpoints("a", "b", "c");
    const a = await h.online("a");
    const b = await h.online("b");
    const c = await h.online("c");
    const n = 300;
    const ids = Array.from({ length: n }, (_, i) => `o${String(i).padStart(3, "0")}`);
    // Two receivers interleaved: each must see its own messages in submission order.
    const frames = ids.map((id, i) => sendNowFrame(id, i % 2 ? "c" : "b", `text ${i}`));
    const { result: resps, seen } = await batches(h, () => flood(a, frames));
    assert.deepEqual(resps.map((r) => r.ok), ids.map(() => true), "every send succeeds");
    const sendAts = resps.map((r) => (r.data as Data).send_at_ms as number);
    for (let i = 1; i < n; i++) assert.ok(sendAts[i] >= sendAts[i - 1], "send_at never goes back");
    await b.until(() => msgIds(b).length === n / 2, "b's messages");
    await c.until(() => msgIds(c).length === n / 2, "c's messages");
    assert.deepEqual(msgIds(b), ids.filter((_, i) => i % 2 === 0));
    assert.deepEqual(msgIds(c), ids.filter((_, i) => i % 2 === 1));
    // The proof that they overlapped: one connection alone filled batches of many ops (a serial
    // connection has one send in each commit).
    const largest = Math.max(...seen.map((s) => s.ops));
    assert.ok(largest >= 10, `sends shared commits (largest batch ${largest} ops)`);
  });
});

Deno.test("the same id sent twice back to back gets one message and the same answer twice", async () => {
  await withServer(FLOOD, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    const frames: Data[] = [];
    for (let i = 0; i < 20; i++) {
      const f = sendNowFrame(`d${i}`, "b", `text ${i}`);
      frames.push(f, f); // each id twice, the repeat while the first is still in flight
    }
    frames.push(sendNowFrame("last", "b", "marker"));
    const resps = await flood(a, frames);
    for (let i = 0; i < 20; i++) {
      const [first, repeat] = [resps[2 * i], resps[2 * i + 1]];
      assert.equal(first.ok, true, `d${i} accepted`);
      assert.deepEqual(repeat.data, first.data, `d${i}: the repeat gets the first result`);
    }
    // Pushes are in submission order: a second message of any id would come before `last`.
    await b.until(() => msgIds(b).includes("last"), "the marker message");
    assert.deepEqual(msgIds(b), [...Array.from({ length: 20 }, (_, i) => `d${i}`), "last"]);
  });
});

Deno.test("a failed commit answers busy for exactly the sends of that batch; the others commit", async () => {
  // Batches of at most 4 ops, so one failed commit cannot take more than 4 sends with it.
  await withServer({ ...FLOOD, writer: { max_batch: 4, max_wait_ms: 2 } }, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    // The insert of message `f20` aborts the whole transaction, as a full disk does.
    await WriteFault.rules(h.t, [{ table: "messages", event: "INSERT", when: "NEW.id = 'f20'" }]);
    const ids = Array.from({ length: 40 }, (_, i) => `f${i}`);
    const { result: resps, seen } = await batches(
      h,
      () => flood(a, ids.map((id) => sendNowFrame(id, "b", id))),
    );
    const busy = ids.filter((_, i) => resps[i].ok === false);
    for (const r of resps.filter((r) => r.ok === false)) {
      assert.equal((r.error as Data).code, "busy");
    }
    assert.ok(busy.includes("f20"), "the failing send is busy");
    const failed = seen.filter((s) => !s.ok);
    assert.equal(failed.length, 1, "one batch failed");
    assert.ok(busy.length <= failed[0].ops, `busy sends (${busy}) fit in the failed batch`);
    assert.ok(busy.length <= 4);
    // The batch holds consecutive sends of this connection (the writer is FIFO).
    const first = ids.indexOf(busy[0]);
    assert.deepEqual(busy, ids.slice(first, first + busy.length), "busy sends are one run");
    // Everything else committed and arrives in order; nothing of the failed batch does.
    const ok = ids.filter((id) => !busy.includes(id));
    await b.until(() => msgIds(b).length === ok.length, "the committed messages");
    assert.deepEqual(msgIds(b), ok);
    for (const id of busy) {
      const s = await a.request({ type: "status", id });
      assert.equal((s.error as Data | undefined)?.code, "not_found", `${id} was not committed`);
    }
  });
});

Deno.test("a flood of 600 requests back-pressures the reader and every one is answered in order", async () => {
  await withServer(FLOOD, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    const conn = [...h.t.server.app.conns.all()].find((c) => c.endpointId === "a")!;
    // Sample the queue on every request the broker hands over (the MQTT read loop) and on
    // every answer.
    let queued = 0;
    let inFlight = 0;
    const sample = () => {
      queued = Math.max(queued, conn.queue!.length);
      inFlight = Math.max(inFlight, conn.queue!.inFlight);
    };
    const push = conn.queue!.push.bind(conn.queue!);
    conn.queue!.push = (item) => {
      const p = push(item);
      sample();
      return p;
    };
    const off = h.t.server.store.onCommit(sample);
    const n = 600;
    const ids = Array.from({ length: n }, (_, i) => `p${i}`);
    // Mixed request types, so the serial ones (status) interleave with pipelined sends.
    const frames = ids.map((id, i) =>
      i % 50 === 49 ? { type: "status", id: ids[i - 1] } : sendNowFrame(id, "b", id)
    );
    const resps = await flood(a, frames);
    off();
    assert.deepEqual(resps.map((r) => r.ok), frames.map(() => true), "none refused or dropped");
    // A status right after a send sees that send committed (it waits for earlier requests).
    for (let i = 49; i < n; i += 50) assert.equal((resps[i].data as Data).id, ids[i - 1]);
    assert.ok(inFlight <= 256, `at most 256 requests in flight (saw ${inFlight})`);
    assert.ok(inFlight >= 50, `many requests overlapped (saw ${inFlight})`);
    assert.ok(queued >= 256, `the queue filled up and held the reader (saw ${queued})`);
    const sent = ids.filter((_, i) => i % 50 !== 49);
    await b.until(() => msgIds(b).length === sent.length, "every message", 30_000);
    assert.deepEqual(msgIds(b), sent);
  });
});

Deno.test("requests that depend on earlier ones of the same burst see them committed", async () => {
  await withServer(FLOOD, async (h) => {
    await h.endpoints("a", "b");
    const a = await h.online("a");
    const b = await h.online("b");
    // b's talk password: a's first send carries it and earns a grant; the sends after it in the
    // same burst carry none and pass on that grant, still in flight when they are read.
    assert.equal(
      (await b.request({ type: "self.talk_password", talk_password: "open-b" })).ok,
      true,
    );
    const resps = await flood(a, [
      sendNowFrame("pw", "b", "with the password", { talk_password: "open-b" }),
      sendNowFrame("g1", "b", "on the grant"),
      { type: "self.update", default_delay_ms: 3_600_000 }, // serial: later sends see it
      sendFrame("late", "b", "scheduled by the new default delay"),
      { type: "recall", id: "late" }, // recalls the send queued just before it
      { type: "self.update", default_delay_ms: 0 },
      sendNowFrame("g2", "b", "on the grant"),
      { type: "status", id: "g2" }, // a read: waits for g2 to commit
    ]);
    assert.deepEqual(resps.map((r) => r.ok), resps.map(() => true), JSON.stringify(resps));
    assert.equal((resps[3].data as Data).state, "scheduled", "the new default delay applied");
    assert.equal((resps[4].data as Data).result, "recalled");
    assert.equal((resps[7].data as Data).id, "g2");
    await b.until(() => msgIds(b).length === 3, "three messages");
    assert.deepEqual(msgIds(b), ["pw", "g1", "g2"]);
  });
});
