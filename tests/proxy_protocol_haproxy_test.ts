// issue 30 item 5: one address in front. A real HAProxy (Debian's package, tests/run.sh installs it)
// in TCP mode with `send-proxy-v2` on loopback relays raw MQTT, WebSocket and HTTP to a real
// `nixmsg serve` that trusts only 127.0.0.1 (HAProxy's source address). Clients connect to HAProxy
// from 127.0.0.2 and 127.0.0.3; the server's lockouts, per-address caps and security log see
// those addresses, not HAProxy's. A PROXY header sent straight from an untrusted address is closed.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { Socket } from "node:net";
import { online } from "./helpers/client.ts";
import { connectBytes } from "./helpers/fuzz_mqtt.ts";
import { PW } from "./helpers/messaging.ts";
import { type ServerProcess, startServerProcess } from "./helpers/server_process.ts";
import { prepareHome } from "./bench/_load_util.ts";
import { closeOf, connectTcp, fetchHttp, waitFor } from "../server/net/_test_util.ts";
import { HAPROXY, type Haproxy, HAS_HAPROXY, startHaproxy } from "./helpers/haproxy.ts";

if (!HAS_HAPROXY) console.error(`${HAPROXY} missing (apt-get install haproxy): tests skipped`);

const ALICE = "127.0.0.2";
const BOB = "127.0.0.3";
const WRONG = "wrong-password-9";
const CONNACK_OK = 0x00;
const NOT_AUTHORIZED = 0x86;
/** Failed logins from one address that lock the endpoint for it (spec 5). */
const GUESSES = 10;
const PER_IP = 3;
/** One endpoint per held connection: a second login of the same one would take the first over. */
const IDS = ["a", "b", "c", "d", "e"];

/** A raw MQTT 5 CONNECT of `id` from `from`; the CONNACK reason code, or null when the server closed. */
async function rawLogin(
  port: number,
  from: string,
  password: string,
  id = "a",
): Promise<{ socket: Socket; code: number | null }> {
  const socket = await connectTcp(port, "127.0.0.1", from);
  socket.on("error", () => {});
  const code = new Promise<number | null>((resolve) => {
    let got = Buffer.alloc(0);
    const timer = setTimeout(() => resolve(null), 20_000);
    const done = (c: number | null) => {
      clearTimeout(timer);
      resolve(c);
    };
    socket.on("data", (c: Buffer) => {
      got = Buffer.concat([got, c]);
      // CONNACK: 0x20, remaining length, acknowledge flags, reason code.
      if (got.length >= 4) done(got[0] === 0x20 ? got[3] : -1);
    });
    socket.once("close", () => done(null));
  });
  socket.write(connectBytes({ id, password }));
  return { socket, code: await code };
}

async function rawCode(port: number, from: string, password: string): Promise<number | null> {
  const { socket, code } = await rawLogin(port, from, password);
  socket.destroy();
  return code;
}

function failures(server: ServerProcess, kind: string): string[] {
  return server.logs
    .filter((l) => l.msg === "auth failure" && l.kind === kind)
    .map((l) => String(l.ip));
}

async function withHaproxy(
  fn: (server: ServerProcess, haproxy: Haproxy) => Promise<void>,
): Promise<void> {
  const home = await prepareHome(
    { trusted_proxies: ["127.0.0.1/32"], limits: { max_connections_per_ip: PER_IP } },
    IDS,
    PW,
  );
  const server = await startServerProcess(home);
  let haproxy: Haproxy | null = null;
  try {
    haproxy = await startHaproxy(home.dir, server.port);
    await fn(server, haproxy);
  } finally {
    await haproxy?.stop();
    assert.equal(await server.stop(), 0);
    await home.cleanup();
  }
}

Deno.test({
  name: "through HAProxy send-proxy-v2, lockouts and the security log key on the client address",
  ignore: !HAS_HAPROXY,
  fn: () =>
    withHaproxy(async (server, { port }) => {
      // Raw MQTT: ten wrong passwords from ALICE lock the endpoint for ALICE only.
      for (let i = 1; i <= GUESSES; i++) {
        assert.equal(await rawCode(port, ALICE, WRONG), NOT_AUTHORIZED, `guess ${i}`);
      }
      assert.equal(await rawCode(port, ALICE, PW), NOT_AUTHORIZED, "ALICE is locked");
      assert.equal(await rawCode(port, BOB, PW), CONNACK_OK, "BOB still logs in over raw MQTT");
      const mqttFails = failures(server, "login");
      assert.ok(mqttFails.length >= GUESSES, `${mqttFails.length} login failures logged`);
      assert.deepEqual(new Set(mqttFails), new Set([ALICE]));

      // WebSocket: the same lock holds for ALICE, BOB logs in.
      const url = `ws://127.0.0.1:${port}/mqtt`;
      await assert.rejects(
        online(url, "a", PW, { wsOptions: { localAddress: ALICE }, reconnectPeriod: 0 }),
        /could not connect/,
      );
      const bob = await online(url, "a", PW, { wsOptions: { localAddress: BOB } });
      assert.ok(bob.token, "BOB logs in over WebSocket");
      await bob.client.close();

      // HTTP: a wrong admin password is logged with the client's address.
      for (const from of [ALICE, BOB]) {
        const r = await fetchHttp(port, "/api/admin/login", {
          method: "POST",
          localAddress: from,
          headers: { "Content-Type": "application/json", "X-Nixmsg-Request": "1" },
          body: JSON.stringify({ username: "admin", password: WRONG }),
        });
        assert.equal(r.status, 401, r.text);
      }
      await waitFor(() => failures(server, "admin").length >= 2, "two admin failures logged");
      assert.deepEqual(failures(server, "admin"), [ALICE, BOB]);
      assert.ok(
        !server.logs.some((l) => l.msg === "auth failure" && l.ip === "127.0.0.1"),
        "no failure is charged to HAProxy's address",
      );
    }),
});

Deno.test({
  name: "through HAProxy send-proxy-v2, the per-address cap counts each client, not HAProxy",
  ignore: !HAS_HAPROXY,
  fn: () =>
    withHaproxy(async (server, { port }) => {
      const held: Socket[] = [];
      try {
        for (let i = 0; i < PER_IP; i++) {
          const { socket, code } = await rawLogin(port, ALICE, PW, IDS[i + 1]);
          held.push(socket);
          assert.equal(code, CONNACK_OK, `ALICE connection ${i + 1}`);
        }
        // ALICE is at the cap over every transport; BOB is not affected.
        assert.equal(await rawCode(port, ALICE, PW), null, "a raw MQTT connection over the cap");
        await assert.rejects(fetchHttp(port, "/healthz", { localAddress: ALICE }));
        await assert.rejects(
          online(`ws://127.0.0.1:${port}/mqtt`, "a", PW, {
            wsOptions: { localAddress: ALICE },
            reconnectPeriod: 0,
            connectTimeout: 5000,
          }),
        );
        assert.equal((await fetchHttp(port, "/healthz", { localAddress: BOB })).status, 200);
        assert.equal(await rawCode(port, BOB, PW), CONNACK_OK);
        const refused = server.logs.filter((l) =>
          l.msg === "Connection refused: too many connections from one address"
        );
        assert.ok(refused.length >= 1, "the refusal is logged");
        assert.ok(refused.every((l) => l.remote === ALICE), JSON.stringify(refused));
      } finally {
        for (const s of held) s.destroy();
      }
    }),
});

Deno.test({
  name: "a PROXY header sent straight from an untrusted address is closed unanswered",
  ignore: !HAS_HAPROXY,
  fn: () =>
    withHaproxy(async (server) => {
      const forged = Buffer.from(
        "PROXY TCP4 203.0.113.50 127.0.0.1 4000 1883\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
      );
      // v2 PROXY TCP4 203.0.113.50:4000 -> 127.0.0.1:1883.
      const v2 = Buffer.concat([
        Buffer.from("\r\n\r\n\0\r\nQUIT\n"),
        Buffer.from("2111000c" + "cb007132" + "7f000001" + "0fa0075b", "hex"),
      ]);
      for (const header of [forged, Buffer.concat([v2, connectBytes({ id: "a", password: PW })])]) {
        const s = await connectTcp(server.port, "127.0.0.1", ALICE);
        const gone = closeOf(s);
        s.write(header);
        assert.equal((await gone).length, 0, "no answer to a forged PROXY header");
      }
      // The trusted address may still connect without a header (HAProxy's own health checks).
      assert.equal((await fetchHttp(server.port, "/healthz")).status, 200);
    }),
});
