// Checklist item 17 (sdk/conformance/checklist.md): the client's lifecycle. Close right after a
// handler returns loses no ack; close drains what is in flight within its bound and fails the
// rest with `closed`; close is idempotent from any state; every call after close fails with
// `closed`; no timer or socket outlives close or a stop for good.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, test } from "node:test";
import { type Message, NixMsgClient } from "@nixevol/nixmsg";
import { closeAll, online, text, track } from "../helpers/clients.ts";
import { WAIT_MS, within } from "../helpers/events.ts";
import { type Endpoint, Harness } from "../helpers/harness.ts";
import { Proxy } from "../helpers/proxy.ts";
import { code, codeOf } from "../helpers/errors.ts";

/**
 * Rounds of 17a: 20, or NIXMSG_CLOSE_ROUNDS for the on-demand reproduction
 * (sdk/conformance/close_after_handler.sh).
 */
const ROUNDS = Number(process.env.NIXMSG_CLOSE_ROUNDS ?? 20);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) {
  throw new Error(`NIXMSG_CLOSE_ROUNDS must be a positive integer, not ${ROUNDS}`);
}
const KEPT = 5;
const BASELINE_WAIT_MS = 5000;

let h: Harness;
before(async () => {
  h = await Harness.start();
});
after(async () => {
  await closeAll();
  await h?.stop();
});

/** Timers, sockets and other handles this process holds (Node's own count). */
function resources(): string[] {
  return process.getActiveResourcesInfo();
}

/** Polls (bounded) until the process holds no more handles than `base`; fails with the excess. */
async function backToBaseline(base: string[], what: string): Promise<void> {
  const deadline = Date.now() + BASELINE_WAIT_MS;
  for (;;) {
    const now = resources();
    if (now.length <= base.length) return;
    if (Date.now() > deadline) {
      const extra = [...now];
      for (const r of base) extra.splice(extra.indexOf(r), 1);
      assert.fail(
        `${what}: ${extra.length} handles outlived the client: ${extra.join(", ")}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Delivery {
  state: string;
  attempts: number;
}

/** The deliveries of A's messages to B, from the admin API. */
async function deliveries(
  from: string,
  to: string,
): Promise<Map<string, Delivery>> {
  const list = await h.admin(
    "GET",
    `/api/admin/messages?sender=${from}&recipient=${to}`,
  );
  assert.equal(list.status, 200, JSON.stringify(list.body));
  const items = (list.body as { data: { items: { seq: number; id: string }[] } }).data
    .items;
  const out = new Map<string, Delivery>();
  for (const m of items) {
    const d = await h.admin("GET", `/api/admin/messages/${m.seq}`);
    assert.equal(d.status, 200, JSON.stringify(d.body));
    const [first] = (d.body as { data: { items: Delivery[] } }).data.items;
    out.set(m.id, first ?? { state: "none", attempts: 0 });
  }
  return out;
}

test("checklist 17a: close as the fifth handler returns loses no ack (20 rounds)", async (t) => {
  const base = resources();
  const ea = await h.endpoint();
  const a = await online(h.info.ws_url, ea);
  let redelivered = 0;
  let notAccepted = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    const eb: Endpoint = await h.endpoint();
    const ids: string[] = [];
    for (let i = 1; i <= KEPT; i++) {
      const r = await a.client.send(eb.id, `r${round}-${i}`, {
        keep: true,
        ttl: 600,
      });
      ids.push(r.id);
    }
    const b = NixMsgClient.connect(h.info.ws_url, eb.id, {
      password: eb.password,
    });
    let seen = 0;
    let closing: Promise<void> | undefined;
    const fifth = new Promise<void>((resolve) => {
      // Close as the fifth handler returns: a microtask queued by it runs right after it. Odd
      // rounds use a plain handler, even rounds an async one that does some work first.
      const closeNow = () =>
        queueMicrotask(() => {
          closing = b.close({ timeoutMs: 5000 });
          resolve();
        });
      if (round % 2 === 1) {
        b.onMessage(() => {
          if (++seen === KEPT) closeNow();
        });
      } else {
        b.onMessage(async () => {
          await new Promise((r) => setImmediate(r));
          if (++seen === KEPT) closeNow();
        });
      }
    });
    await within(fifth, WAIT_MS, `round ${round}: five messages`);
    await within(closing!, 7000, `round ${round}: close`);
    // Right after close, without a retry loop: close waited for the ack responses.
    const server = await deliveries(ea.id, eb.id);
    notAccepted += ids.filter((id) => server.get(id)?.state !== "accepted").length;

    const again = track(h.info.ws_url, eb.id, { password: eb.password });
    await within(
      again.client.ready(),
      WAIT_MS,
      `round ${round}: B again online`,
    );
    const marker = await a.client.send(eb.id, `marker-${round}`, {
      keep: true,
    });
    await again.messages.waitFor(
      (m) => m.id === marker.id,
      `round ${round}: marker`,
    );
    redelivered += again.messages.count((m) => ids.includes(m.id));
    await again.client.close();
  }
  // The reproduction's result line (sdk/conformance/close_after_handler.sh reads it).
  t.diagnostic(
    `rounds=${ROUNDS} redelivered=${redelivered} not_accepted=${notAccepted}`,
  );
  assert.equal(redelivered, 0, "messages delivered again at the next login");
  assert.equal(
    notAccepted,
    0,
    "deliveries not accepted on the server right after close",
  );
  await a.client.close();
  await backToBaseline(base, "17a");
});

test("checklist 17b: close drains in-flight requests, then fails the rest with closed", async () => {
  const base = resources();
  const ea = await h.endpoint();
  const b = await online(h.info.ws_url, await h.endpoint());
  const a = await online(h.info.ws_url, ea);
  // Drain: the send's response arrives during close.
  const sending = a.client.send(b.client.endpointId, "in flight");
  const closing = a.client.close({ timeoutMs: 5000 });
  const sent = await sending;
  await closing;
  assert.equal(sent.id.length, 36);
  await b.messages.waitFor((m) => m.id === sent.id, "the drained send");

  // Bound: responses never arrive; close gives up after its timeout and fails them with closed.
  const proxy = await Proxy.start(h.address);
  try {
    const a2 = await online(`ws://${proxy.address}/mqtt`, ea);
    proxy.holdDown = true;
    const calls = [
      a2.client.send(b.client.endpointId, "held"),
      a2.client.status(sent.id),
      a2.client.getSelf(),
    ].map((p) => p.then(() => "answered", codeOf));
    const t0 = Date.now();
    await a2.client.close({ timeoutMs: 1000 });
    const took = Date.now() - t0;
    assert.ok(took >= 900, `close waited for the responses (${took} ms)`);
    assert.ok(took < 4000, `close kept its bound (${took} ms)`);
    assert.deepEqual(await within(Promise.all(calls), 1000, "calls settled"), [
      "closed",
      "closed",
      "closed",
    ]);
  } finally {
    await proxy.close();
  }
  await b.client.close();
  await backToBaseline(base, "17b");
});

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

test("checklist 17c: close is idempotent from any state, inside callbacks too", async () => {
  const base = resources();
  // Before the first attempt started (connect starts it on the next microtask).
  const early = NixMsgClient.connect(h.info.ws_url, "never-started", {
    password: "x",
  });
  await within(
    Promise.all([early.close(), early.close()]),
    3000,
    "close before start",
  );
  assert.equal(early.state, "offline");

  // Connecting or reconnecting to a port nothing listens on.
  const nowhere = track(
    `ws://127.0.0.1:${await closedPort()}/mqtt`,
    "nowhere",
    { password: "x" },
  );
  await nowhere.states.waitFor(
    (s) => s.state === "reconnecting",
    "reconnecting",
  );
  await within(nowhere.client.close(), 3000, "close while reconnecting");
  await within(nowhere.client.close(), 3000, "close again");
  assert.equal(nowhere.client.state, "offline");

  // Online: twice in a row, then two at once.
  const ep = await h.endpoint();
  const one = await online(h.info.ws_url, ep);
  await within(one.client.close(), 3000, "first close");
  await within(one.client.close(), 3000, "second close");
  const two = await online(h.info.ws_url, ep);
  await within(
    Promise.all([two.client.close(), two.client.close()]),
    3000,
    "concurrent closes",
  );
  const last = two.states.items.at(-1);
  assert.deepEqual([last?.state, last?.reason], ["offline", "closed"]);

  // Inside the connection callback, when it sees `online`.
  const fromState = NixMsgClient.connect(h.info.ws_url, ep.id, {
    password: ep.password,
  });
  let stateClose: Promise<void> | undefined;
  fromState.onConnection((e) => {
    if (e.state === "online") stateClose = fromState.close();
  });
  await within(
    new Promise<void>((r) => fromState.onConnection((e) => e.state === "offline" && r())),
    WAIT_MS,
    "closed from the connection callback",
  );
  await within(stateClose!, 3000, "close from the connection callback");

  // Inside a message callback, awaited there: it does not wait for the callback it runs in.
  const sender = await online(h.info.ws_url, await h.endpoint());
  const inMsg = await online(h.info.ws_url, ep);
  const returned = new Promise<number>((resolve) => {
    inMsg.client.onMessage(async (_m: Message) => {
      const t0 = Date.now();
      await inMsg.client.close({ timeoutMs: 5000 });
      resolve(Date.now() - t0);
    });
  });
  await sender.client.send(ep.id, "close inside");
  const took = await within(
    returned,
    WAIT_MS,
    "close inside the message callback returned",
  );
  assert.ok(
    took < 3000,
    `close inside the callback did not wait for itself (${took} ms)`,
  );
  await sender.client.close();

  // After auth_failed and after kicked.
  const refused = track(h.info.ws_url, ep.id, { password: "wrong-password" });
  await refused.states.waitFor((s) => s.state === "auth_failed", "auth_failed");
  await within(refused.client.close(), 3000, "close after auth_failed");
  assert.equal(
    refused.client.state,
    "auth_failed",
    "the stop keeps its reason",
  );
  const first = await online(h.info.ws_url, ep);
  const second = await online(h.info.ws_url, ep);
  await first.states.waitFor((s) => s.state === "kicked", "kicked");
  await within(first.client.close(), 3000, "close after kicked");
  await second.client.close();
  await backToBaseline(base, "17c");
});

test("checklist 17d: every call after close fails with closed at once", async () => {
  const base = resources();
  const ep = await h.endpoint();
  const peer = await online(h.info.ws_url, await h.endpoint());
  const c = await online(h.info.ws_url, ep, { ackMode: "manual" });
  const sent = await peer.client.send(ep.id, "to ack later");
  const msg = await c.messages.waitFor((m) => m.id === sent.id, "a message");
  assert.equal(text(msg), "to ack later");
  await c.client.ack(msg);
  await c.client.close();
  const client = c.client;
  const calls: [string, () => Promise<unknown>][] = [
    ["send", () => client.send(peer.client.endpointId, "x")],
    ["recall", () => client.recall(sent.id)],
    ["status", () => client.status(sent.id)],
    ["ack", () => client.ack(msg)],
    ["unlock", () => client.unlock(peer.client.endpointId, "pw")],
    ["getSelf", () => client.getSelf()],
    ["updateSelf", () => client.updateSelf({ name: "x" })],
    ["setTalkPassword", () => client.setTalkPassword("x")],
    [
      "changeLoginPassword",
      () => client.changeLoginPassword(ep.password, "new-password-1"),
    ],
    ["presence", () => client.presence([peer.client.endpointId])],
    ["directory", () => client.directory()],
    ["watchPresence", () => client.watchPresence("all")],
    ["groups.list", () => client.groups.list()],
    ["logout", () => client.logout()],
    ["ready", () => client.ready()],
  ];
  const t0 = Date.now();
  for (const [name, call] of calls) {
    await assert.rejects(call(), code("closed"), name);
  }
  assert.ok(
    Date.now() - t0 < 1000,
    "no call waited for the server or a timeout",
  );
  await peer.client.close();
  await backToBaseline(base, "17d");
});

test("checklist 17f: a client that stopped for good holds nothing, without close", async () => {
  const ep = await h.endpoint();
  const base = resources();
  const refused = track(h.info.ws_url, ep.id, { password: "wrong-password" });
  const stop = await refused.states.waitFor(
    (s) => s.state === "auth_failed",
    "auth_failed",
  );
  assert.equal(stop.reason, "bad_credentials");
  await backToBaseline(base, "after auth_failed");
  await assert.rejects(refused.client.ready(), code("auth_failed"));
  await assert.rejects(refused.client.send(ep.id, "x"), code("auth_failed"));

  const first = await online(h.info.ws_url, ep);
  const second = await online(h.info.ws_url, ep);
  const kicked = await first.states.waitFor(
    (s) => s.state === "kicked",
    "kicked",
  );
  assert.equal(kicked.reason, "taken_over");
  await second.client.close();
  await backToBaseline(base, "after kicked");
  await assert.rejects(first.client.getSelf(), code("kicked"));
});
