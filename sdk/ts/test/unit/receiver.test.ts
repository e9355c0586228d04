import assert from "node:assert/strict";
import { test } from "node:test";
import { DedupCache } from "../../src/dedup.ts";
import { Receiver, type ReceiverHost } from "../../src/receiver.ts";
import type { Message, Receipt, Revoked } from "../../src/types.ts";

function msg(id: string, from = "a"): Message {
  return {
    id,
    from,
    to: { kind: "endpoint", id: "b" },
    body: `body ${id}`,
    contentType: "text/plain",
    meta: {},
    sendAtMs: 0,
  };
}

function host(mode: "auto" | "manual" = "auto", ackResult: string | null = "accepted") {
  const acks: string[] = [];
  const receiptAcks: string[] = [];
  const errors: unknown[] = [];
  const h: ReceiverHost = {
    ackMode: mode,
    dedupCapacity: 10_000,
    sendAck: (from, id) => {
      acks.push(`${from}/${id}`);
      return Promise.resolve(ackResult);
    },
    sendReceiptAck: (id) => receiptAcks.push(id),
    onCallbackError: (e) => errors.push(e),
  };
  return { h, acks, receiptAcks, errors };
}

test("the dedup cache drops the oldest record beyond its capacity", () => {
  const c = new DedupCache<string>(3);
  for (const k of ["a", "b", "c", "d"]) c.set(k, "x");
  assert.equal(c.size, 3);
  assert.equal(c.get("a"), undefined);
  assert.equal(c.get("d"), "x");
  c.set("b", "y"); // an update does not grow it
  assert.equal(c.size, 3);
  c.delete("b");
  assert.equal(c.get("b"), undefined);
});

test("a message is delivered once and acked after the callback; a repeat is re-acked only", async () => {
  const { h, acks } = host();
  const r = new Receiver(h);
  const got: string[] = [];
  r.messages.add((m) => void got.push(m.id));
  r.message(msg("1"));
  r.message(msg("1")); // delivered, not acked yet: ignored
  await r.idle();
  assert.deepEqual(got, ["1"]);
  assert.deepEqual(acks, ["a/1"]);
  r.message(msg("1")); // the server did not get the ack: ack again, do not deliver
  await r.idle();
  assert.deepEqual(got, ["1"]);
  assert.deepEqual(acks, ["a/1", "a/1"]);
});

test("the same id from another sender is another message", async () => {
  const { h } = host();
  const r = new Receiver(h);
  const got: string[] = [];
  r.messages.add((m) => void got.push(`${m.from}/${m.id}`));
  r.message(msg("1", "a"));
  r.message(msg("1", "c"));
  await r.idle();
  assert.deepEqual(got, ["a/1", "c/1"]);
});

test("a throwing callback is not acked and the re-push is processed again (auto mode)", async () => {
  const { h, acks, errors } = host();
  const r = new Receiver(h);
  let calls = 0;
  r.messages.add(() => {
    if (++calls === 1) throw new Error("app failed");
  });
  r.message(msg("1"));
  await r.idle();
  assert.equal(errors.length, 1);
  assert.deepEqual(acks, []);
  r.message(msg("1"));
  await r.idle();
  assert.equal(calls, 2);
  assert.deepEqual(acks, ["a/1"]);
});

test("callbacks run serially, one message at a time", async () => {
  const { h } = host();
  const r = new Receiver(h);
  let running = 0;
  let most = 0;
  r.messages.add(async () => {
    most = Math.max(most, ++running);
    await new Promise((res) => setImmediate(res));
    running--;
  });
  for (let i = 0; i < 5; i++) r.message(msg(String(i)));
  await r.idle();
  assert.equal(most, 1);
});

test("manual mode acks only on ack(); an unacked repeat is ignored", async () => {
  const { h, acks } = host("manual");
  const r = new Receiver(h);
  const got: Message[] = [];
  r.messages.add((m) => void got.push(m));
  r.message(msg("1"));
  await r.idle();
  assert.deepEqual(acks, []);
  r.message(msg("1"));
  await r.idle();
  assert.equal(got.length, 1);
  await r.ack(got[0]!);
  assert.deepEqual(acks, ["a/1"]);
  r.message(msg("1"));
  await r.idle();
  assert.deepEqual(acks, ["a/1", "a/1"], "acked before: re-acked");
  assert.equal(got.length, 1);
});

test("messages wait unacked until an onMessage callback exists", async () => {
  const { h, acks } = host();
  const r = new Receiver(h);
  const receipts: string[] = [];
  r.receipts.add((x) => void receipts.push(x.receiptId));
  r.message(msg("1"));
  r.receipt({ receiptId: "9", id: "m", endpointId: "b", state: "accepted", reason: "", atMs: 0 });
  await r.idle();
  assert.deepEqual(acks, []);
  assert.deepEqual(receipts, ["9"], "other events are not blocked");
  const got: string[] = [];
  r.messages.add((m) => void got.push(m.id));
  await new Promise((res) => setImmediate(res));
  await r.idle();
  assert.deepEqual(got, ["1"]);
  assert.deepEqual(acks, ["a/1"]);
});

test("revoked: dropped before delivery, reported and not acked when delivered, ignored when acked", async () => {
  const { h, acks } = host("manual");
  const r = new Receiver(h);
  const got: string[] = [];
  const revoked: Revoked[] = [];
  r.revoked.add((x) => void revoked.push(x));
  let release: () => void = () => {};
  const gate = new Promise<void>((res) => (release = res));
  r.messages.add(async (m) => {
    got.push(m.id);
    if (m.id === "1") await gate;
  });
  r.message(msg("1")); // handed to the app, callback still running
  r.message(msg("2")); // queued behind it
  await new Promise((res) => setImmediate(res));
  r.revoke({ id: "2", from: "a", reason: "recalled" });
  r.revoke({ id: "1", from: "a", reason: "expired" });
  release();
  await r.idle();
  assert.deepEqual(got, ["1"], "2 never reaches the app");
  assert.deepEqual(revoked, [{ id: "1", from: "a", reason: "expired" }]);
  await r.ack(msg("1"));
  assert.deepEqual(acks, [], "a revoked message is not acked");
  r.message(msg("3"));
  await r.idle();
  await r.ack(msg("3"));
  r.revoke({ id: "3", from: "a", reason: "recalled" });
  await r.idle();
  assert.equal(revoked.length, 1, "revoked after the ack is ignored");
});

test("an ack answered with a final state other than accepted counts as revoked (spec 9)", async () => {
  const { h } = host("auto", "expired");
  const r = new Receiver(h);
  const revoked: Revoked[] = [];
  r.messages.add(() => {});
  r.revoked.add((x) => void revoked.push(x));
  r.message(msg("1"));
  await r.idle();
  await new Promise((res) => setImmediate(res));
  await r.idle();
  assert.deepEqual(revoked, [{ id: "1", from: "a", reason: "expired" }]);
});

test("receipts are delivered once per receipt_id and always acked", async () => {
  const { h, receiptAcks } = host();
  const r = new Receiver(h);
  const got: Receipt[] = [];
  r.receipts.add((x) => void got.push(x));
  const receipt: Receipt = {
    receiptId: "9001",
    id: "m",
    endpointId: "b",
    state: "accepted",
    reason: "",
    atMs: 1,
  };
  r.receipt(receipt);
  r.receipt(receipt);
  await r.idle();
  r.receipt(receipt);
  await r.idle();
  assert.equal(got.length, 1);
  assert.deepEqual(receiptAcks, ["9001", "9001"]);
});
