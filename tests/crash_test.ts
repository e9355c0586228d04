// Crash tests (spec 13 崩溃, 7.8): a real `nixmsg serve` child is killed with SIGKILL and
// restarted on the same data directory; what was answered as committed must still arrive.
import assert from "node:assert/strict";
import { online, type TestClient } from "./helpers/client.ts";
import { type ServerProcess, startServerProcess } from "./helpers/server_process.ts";
import { prepareHome } from "./bench/_load_util.ts";
import {
  type Data,
  KEEP,
  msgs,
  PW,
  receipts,
  receiveAndAck,
  sendFrame,
  settlePushed,
  waitReceipt,
} from "./helpers/messaging.ts";

const ws = (s: ServerProcess) => `ws://127.0.0.1:${s.port}/mqtt`;

/** A `nixmsg serve` child on one data directory (endpoints a and b), killed and restarted at will. */
interface Restartable {
  /** Starts the server on the data directory. */
  start(): Promise<void>;
  /** Kills the running server with SIGKILL. */
  kill(): Promise<void>;
  /** Connects and handshakes `id` to the running server; the client is closed at the end. */
  session(id: string, password?: string): Promise<{ client: TestClient; token: string | null }>;
  /** Like {@linkcode Restartable.session}, without the session token. */
  online(id: string, password?: string): Promise<TestClient>;
  /** Server exits nobody asked for so far. */
  crashes(): number;
}

/**
 * Runs `fn` on a fresh data directory with endpoints a and b; afterwards closes the clients, stops
 * a running server (which must exit with 0) and removes the directory.
 */
async function withRestartableServer(fn: (s: Restartable) => Promise<void>): Promise<void> {
  const home = await prepareHome({}, ["a", "b"], PW);
  const open: TestClient[] = [];
  let server = null as ServerProcess | null;
  let crashes = 0;
  const planned = new WeakSet<ServerProcess>();
  const running = (): ServerProcess => {
    if (server === null) throw new Error("no server is running");
    return server;
  };
  const session = async (id: string, password = PW) => {
    const s = await online(ws(running()), id, password);
    open.push(s.client);
    return s;
  };
  try {
    await fn({
      async start() {
        const started = await startServerProcess(home);
        started.exited.then(() => {
          if (!planned.has(started)) crashes++;
        });
        server = started;
      },
      async kill() {
        planned.add(running());
        await running().kill();
        server = null;
      },
      crashes: () => crashes,
      session,
      online: async (id, password) => (await session(id, password)).client,
    });
  } finally {
    for (const c of open) await c.close();
    if (server) {
      planned.add(server);
      assert.equal(await server.stop(), 0);
    }
    await home.cleanup();
  }
}

Deno.test("messages answered just before a kill -9 reach the receiver after the restart", async () => {
  await withRestartableServer(async (s) => {
    await s.start();
    const a1 = await s.online("a");
    const due = await a1.request(sendFrame("d1", "b", "scheduled", { delay_ms: 1000, ...KEEP }));
    assert.equal((due.data as Data).state, "scheduled");
    const resp = await a1.request(sendFrame("k1", "b", "committed", { delay_ms: 0, ...KEEP }));
    assert.equal((resp.data as Data).state, "dispatched");
    await s.kill();

    await s.start();
    const b = await s.online("b");
    // spec 7.8 step 3: a scheduled message (due meanwhile or soon) is dispatched after the restart.
    const fault = "kill -9 right after send answers (one due, one scheduled)";
    await receiveAndAck(b, "a", ["k1", "d1"], {
      key: "crash/after-send-answers",
      fault,
      crashes: s.crashes,
      figures: { kills: 1 },
    });
    const k1 = b.frames.find((f) => f.type === "msg" && f.id === "k1")!;
    assert.equal((k1.body as Data).data, "committed");

    const a2 = await s.online("a");
    await a2.until(() => receipts(a2).length === 2, "receipts");
    assert.ok(receipts(a2).every((f) => f.state === "accepted"));
    // A sender that lost the response retries with the same frame and gets the original answer.
    const retry = await a2.request(sendFrame("k1", "b", "committed", { delay_ms: 0, ...KEEP }));
    assert.deepEqual(retry.data, { ...(resp.data as Data), state: "completed" });
  });
});

Deno.test("a message not kept, pushed but unacked at a kill -9, arrives when the receiver reconnects within grace", async () => {
  await withRestartableServer(async (s) => {
    await s.start();
    const a1 = await s.online("a");
    const b1 = await s.session("b");
    await a1.request(sendFrame("p1", "b", "in flight", { delay_ms: 0 }));
    // Not awaited with a timeout: a p1 never pushed is counted below as lost=1 with its id.
    await settlePushed(b1.client, "a", ["p1"]);
    const pushed = msgs(b1.client, "p1")[0];
    await s.kill();

    // spec 7.8: the restart counts as a disconnect of everyone; grace starts at the restart.
    await s.start();
    const b2 = await s.online("b", b1.token!);
    const fault = "kill -9 while a non-kept message is pushed, unacked";
    const [answer] = await receiveAndAck(b2, "a", ["p1"], {
      key: "crash/pushed-unacked-not-kept",
      fault,
      crashes: s.crashes,
      figures: { kills: 1 },
    });
    const again = b2.frames.find((f) => f.type === "msg" && f.id === "p1");
    assert.deepEqual(again, pushed);
    assert.deepEqual(answer!.data, { result: "accepted" });
    const a2 = await s.online("a");
    const receipt = await waitReceipt(a2, "p1");
    assert.equal(receipt.state, "accepted");
  });
});
