// Shutdown (spec 7.8): SIGTERM to a real `nixmsg serve` while sends are in flight. Every send
// that committed must get its `resp` before the connection closes, and MQTT 5 clients are told
// DISCONNECT 0x8B; nothing uncommitted is answered as a success.
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { online, type TestClient } from "./helpers/client.ts";
import { startServerProcess } from "./helpers/server_process.ts";
import { prepareHome } from "./bench/_load_util.ts";
import { PW, sendNowFrame } from "./helpers/messaging.ts";
import { dbPath } from "../server/app/paths.ts";

// Large enough that a pipelined connection is still mid-burst when the stop arrives.
const SENDS = 3000;

/**
 * At most this many sends of one client unanswered at a time. The server holds at most 1,024 QoS 1
 * downlinks unacknowledged per connection and drops the rest (spec 5; the client retries): a
 * loaded test client that PUBACKs late must not fill that window with `resp`s (plus up to 64
 * receipts), or the drops would look like committed sends left unanswered at the stop.
 */
const WINDOW = 900;

/**
 * Publishes `send` requests from `c` to `to`, keeping WINDOW of them unanswered (every answer
 * lets the next one go), up to SENDS. Returns `halt`: no new sends after it, the WINDOW already
 * published stay in flight (the stop must find them there, not a client still sending).
 */
function burst(c: TestClient, to: string): () => void {
  let next = 0;
  let halted = false;
  const answered = () => c.frames.filter((f) => f.type === "resp").length;
  const pump = () => {
    const limit = halted ? next : Math.min(SENDS, answered() + WINDOW);
    while (!c.closed && next < limit) {
      const i = next++;
      const frame = { v: 1, rid: `${c.id}-r${i}`, ...sendNowFrame(`${c.id}-m${i}`, to, `n${i}`) };
      c.mqtt.publish(`nix/c/${c.id}/up`, JSON.stringify(frame), { qos: 1 });
    }
  };
  const unwatch = c.watch(pump);
  pump();
  return () => {
    halted = true;
    unwatch();
  };
}

Deno.test("SIGTERM answers every committed send, then sends DISCONNECT 0x8B", async () => {
  const home = await prepareHome(
    { limits: { requests_per_second: 100000 } },
    ["a", "b", "c"],
    PW,
  );
  const clients: TestClient[] = [];
  try {
    const server = await startServerProcess(home);
    const tcp = (await online(`mqtt://127.0.0.1:${server.port}`, "a", PW)).client;
    const ws = (await online(`ws://127.0.0.1:${server.port}/mqtt`, "b", PW)).client;
    clients.push(tcp, ws);
    const answered = (c: TestClient) =>
      c.frames.filter((f) => f.type === "resp" && String(f.rid).startsWith(`${c.id}-r`));
    const halts = [burst(tcp, "c"), burst(ws, "c")];
    // Stop while both are mid-burst: each has had an answer, and more are on their way.
    await tcp.until(() => answered(tcp).length > 0, "a first answer over TCP");
    await ws.until(() => answered(ws).length > 0, "a first answer over WebSocket");
    for (const halt of halts) halt();
    assert.equal(await server.stop(), 0);
    // Each client closed after its DISCONNECT: none was cut off when the farewell wait ran out
    // (input the server had not read yet used to hold every connection open until then).
    const cutOff = server.logs.filter((l) =>
      String(l.msg).startsWith("MQTT connections still open")
    );
    assert.deepEqual(cutOff, [], "no connection outlived the shutdown farewell");

    const db = new DatabaseSync(dbPath(home.dataDir), { readOnly: true });
    try {
      for (const c of clients) {
        // The DISCONNECT is written last: once it is handled, so is every answer before it.
        assert.equal(await c.closedWith(`${c.id} closed`), 0x8b, `${c.id}: DISCONNECT 0x8B`);
        const stored = new Set(
          db.prepare("SELECT id FROM messages WHERE sender_id = ?").all(c.id).map((r) =>
            String(r.id)
          ),
        );
        const ok = new Set(
          answered(c).filter((f) => f.ok === true).map((f) => String(f.rid).replace("-r", "-m")),
        );
        assert.ok(stored.size > 0, `${c.id}: some sends committed`);
        assert.ok(stored.size < SENDS, `${c.id}: the stop came mid-burst (${stored.size} stored)`);
        const unanswered = [...stored].filter((id) => !ok.has(id));
        assert.deepEqual(unanswered, [], `${c.id}: every committed send got its resp`);
        const uncommitted = [...ok].filter((id) => !stored.has(id));
        assert.deepEqual(uncommitted, [], `${c.id}: no success without a commit`);
      }
    } finally {
      db.close();
    }
  } finally {
    for (const c of clients) await c.close();
    await home.cleanup();
  }
});
