// Crash tests (spec 13 崩溃, 7.8): a real `nixmsg serve` child is killed with SIGKILL and
// restarted on the same data directory; what was answered as committed must still arrive.
import assert from "node:assert/strict";
import { online, type TestClient } from "./helpers/client.ts";
import { type ServerProcess, startServerProcess } from "./helpers/server_process.ts";
import { prepareHome } from "./bench/_load_util.ts";

const PW = "device-password-1";

type Data = Record<string, unknown>;

function sendFrame(id: string, to: string, text: string, extra: Data = {}): Data {
  return {
    type: "send",
    id,
    to: { kind: "endpoint", id: to },
    body: { enc: "utf8", data: text },
    ...extra,
  };
}

const ws = (s: ServerProcess) => `ws://127.0.0.1:${s.port}/mqtt`;

Deno.test("messages answered just before a kill -9 reach the receiver after the restart", async () => {
  const home = await prepareHome({}, ["a", "b"], PW);
  const open: TestClient[] = [];
  let server: ServerProcess | null = null;
  try {
    server = await startServerProcess(home);
    const a1 = (await online(ws(server), "a", PW)).client;
    open.push(a1);
    const keep = { offline: { keep: true, ttl_seconds: 3600 } };
    const due = await a1.request(sendFrame("d1", "b", "scheduled", { delay_ms: 1000, ...keep }));
    assert.equal((due.data as Data).state, "scheduled");
    const resp = await a1.request(sendFrame("k1", "b", "committed", { delay_ms: 0, ...keep }));
    assert.equal((resp.data as Data).state, "dispatched");
    await server.kill();
    server = null;

    server = await startServerProcess(home);
    const b = (await online(ws(server), "b", PW)).client;
    open.push(b);
    const k1 = await b.waitFrame((f) => f.type === "msg" && f.id === "k1", "k1");
    assert.equal((k1.body as Data).data, "committed");
    // spec 7.8 step 3: a scheduled message (due meanwhile or soon) is dispatched after the restart.
    await b.waitFrame((f) => f.type === "msg" && f.id === "d1", "d1");
    await b.request({ type: "ack", from: "a", id: "k1" });
    await b.request({ type: "ack", from: "a", id: "d1" });

    const a2 = (await online(ws(server), "a", PW)).client;
    open.push(a2);
    await a2.until(() => a2.frames.filter((f) => f.type === "receipt").length === 2, "receipts");
    assert.ok(a2.frames.every((f) => f.type !== "receipt" || f.state === "accepted"));
    // A sender that lost the response retries with the same frame and gets the original answer.
    const retry = await a2.request(sendFrame("k1", "b", "committed", { delay_ms: 0, ...keep }));
    assert.deepEqual(retry.data, { ...(resp.data as Data), state: "completed" });
  } finally {
    for (const c of open) await c.close();
    if (server) assert.equal(await server.stop(), 0);
    await home.cleanup();
  }
});

Deno.test("a message not kept, pushed but unacked at a kill -9, arrives when the receiver reconnects within grace", async () => {
  const home = await prepareHome({}, ["a", "b"], PW);
  const open: TestClient[] = [];
  let server: ServerProcess | null = null;
  try {
    server = await startServerProcess(home);
    const a1 = (await online(ws(server), "a", PW)).client;
    const b1 = await online(ws(server), "b", PW);
    open.push(a1, b1.client);
    await a1.request(sendFrame("p1", "b", "in flight", { delay_ms: 0 }));
    const pushed = await b1.client.waitFrame((f) => f.type === "msg" && f.id === "p1", "p1");
    await server.kill();
    server = null;

    // spec 7.8: the restart counts as a disconnect of everyone; grace starts at the restart.
    server = await startServerProcess(home);
    const b2 = (await online(ws(server), "b", b1.token!)).client;
    open.push(b2);
    const again = await b2.waitFrame((f) => f.type === "msg" && f.id === "p1", "p1 again");
    assert.deepEqual(again, pushed);
    assert.deepEqual((await b2.request({ type: "ack", from: "a", id: "p1" })).data, {
      result: "accepted",
    });
    const a2 = (await online(ws(server), "a", PW)).client;
    open.push(a2);
    const receipt = await a2.waitFrame((f) => f.type === "receipt" && f.id === "p1", "receipt");
    assert.equal(receipt.state, "accepted");
  } finally {
    for (const c of open) await c.close();
    if (server) assert.equal(await server.stop(), 0);
    await home.cleanup();
  }
});
