// issue 28 items 1 and 4: one address attacks a `nixmsg serve` child with its defaults, and a
// client from another loopback address must still get /healthz, a WebSocket login and a raw
// MQTT login answered within 2 s in at least 95 % of tries. The attacks: partial HTTP requests
// reopened as soon as the server cuts them (HTTP and WebSocket upgrades share the per-address
// HTTP share); MQTT connections that never log in; and password CONNECTs for random unknown ids,
// each of which costs a dummy argon2 check (the bounded hash queue answers the excess busy); and
// 2,600 or more failed CONNECTs with 60,000-character ids. The server is started with the
// launcher (`./nixmsg serve`), as an operator starts it.
// The full-scale runs are in tests/bench/edge_attacks.ts, figures in docs/RELIABILITY.md.
import assert from "node:assert/strict";
import { PW } from "./helpers/messaging.ts";
import { fetchHttp, waitFor } from "../server/net/_test_util.ts";
import { type ServerProcess, startServerProcess } from "./helpers/server_process.ts";
import { prepareHome } from "./bench/_load_util.ts";
import {
  bystander,
  type BystanderReport,
  servedEnough,
  startAttacker,
} from "./helpers/edge_probe.ts";

const ATTACKER = "127.0.0.2";
const BYSTANDER = "127.0.0.3";
const TRIES = Number(Deno.env.get("NIXMSG_EDGE_TRIES") ?? 20);

async function withServer(
  fn: (s: ServerProcess) => Promise<void>,
  overrides: Record<string, unknown> = {},
): Promise<void> {
  const home = await prepareHome(overrides, ["a"], PW);
  const server = await startServerProcess(home, 60_000, { launcher: true });
  try {
    await fn(server);
  } finally {
    assert.equal(await server.stop(), 0);
    await home.cleanup();
  }
}

function report(name: string, r: BystanderReport, extra: unknown): string {
  return `${name}: ${JSON.stringify(r)} attack ${JSON.stringify(extra)}`;
}

Deno.test("1,050 partial HTTP requests from one address, reopened when cut, leave another address served", async () => {
  await withServer(async (server) => {
    const flood = startAttacker("http", server.port, ATTACKER, 1050);
    try {
      const r = await bystander(server.port, BYSTANDER, "a", PW, TRIES);
      const msg = report("partial HTTP", r, flood.last());
      console.log(msg);
      assert.ok(servedEnough(r), msg);
      assert.ok((flood.last().cut ?? 0) > 0, "the server cut the flood's connections");
    } finally {
      await flood.stop();
    }
    const refused = server.logs.find((l) =>
      l.msg === "HTTP connection refused: too many from one address"
    );
    assert.equal(refused?.remote, ATTACKER);
    // Repeated lines are throttled with a count (before: 75,894 lines in 10 s of this attack).
    const lines = server.logs.filter((l) => String(l.msg).startsWith("HTTP connection refused"));
    const counted = lines.reduce((n, l) => n + Number(l.suppressed ?? 1), 0);
    console.log(`${server.logs.length} log lines, ${lines.length} of them for ${counted} refusals`);
    assert.ok(lines.length <= 10, `${lines.length} refusal lines`);
    assert.ok(server.logs.length < 500, `${server.logs.length} log lines`);
  });
});

Deno.test("1,000 MQTT connections from one address that never log in leave another address served", async () => {
  await withServer(async (server) => {
    // 0x10 is the first byte of a CONNECT: each is an MQTT connection that never finishes it.
    const flood = startAttacker("mqtt_idle", server.port, ATTACKER, 1000);
    try {
      const r = await bystander(server.port, BYSTANDER, "a", PW, TRIES);
      const msg = report("unauthenticated MQTT", r, flood.last());
      console.log(msg);
      assert.ok(servedEnough(r), msg);
      // The login deadline (timeouts.auth_seconds, 3 s) cuts the held connections.
      await waitFor(() => (flood.last().cut ?? 0) >= 1000, "the deadline to cut 1,000", 20_000);
    } finally {
      await flood.stop();
    }
    assert.ok(
      server.logs.some((l) => l.msg === "MQTT connection closed: no login within the deadline"),
    );
  });
});

Deno.test("password CONNECTs for random unknown ids from one address leave another address served; the excess answers busy", async () => {
  await withServer(async (server) => {
    const guesses = startAttacker("guess", server.port, ATTACKER, 48);
    let answers: Record<string, number> = {};
    try {
      const r = await bystander(server.port, BYSTANDER, "a", PW, TRIES);
      const msg = report("argon2 amplification", r, guesses.last());
      console.log(msg);
      assert.ok(servedEnough(r), msg);
    } finally {
      answers = await guesses.stop();
    }
    // 0x86: checked and wrong; 0x89: refused at once, the queue (or its share of it) was full.
    assert.ok((answers["0x86"] ?? 0) > 0, `some guesses were checked: ${JSON.stringify(answers)}`);
    assert.ok(
      (answers["0x89"] ?? 0) > 0,
      `the excess was answered busy: ${JSON.stringify(answers)}`,
    );
  });
});

Deno.test("2,600 failed CONNECTs with 60,000-character ids from one address leave another address served", async () => {
  const token = "metrics-token";
  // The per-address connection rate is lifted, so every attempt reaches the CONNECT check.
  const limits = { max_conn_rate_per_ip: 100_000 };
  await withServer(async (server) => {
    const flood = startAttacker("long_ids_loop", server.port, ATTACKER, 20);
    const seen: BystanderReport[] = [];
    try {
      // At least TRIES rounds, and more until the attack has made 2,600 attempts (within 3 min).
      const deadline = Date.now() + 180_000;
      while (seen.length < TRIES || (flood.last().none ?? 0) < 2600) {
        assert.ok(Date.now() < deadline, `the attack stalled: ${JSON.stringify(flood.last())}`);
        seen.push(await bystander(server.port, BYSTANDER, "a", PW, 1));
      }
    } finally {
      await flood.stop();
    }
    const sum = (k: "healthz" | "ws" | "mqtt") => seen.reduce((n, r) => n + r[k], 0);
    const most = (k: "healthz" | "ws" | "mqtt") => Math.max(...seen.map((r) => r.slowest[k]));
    const r: BystanderReport = {
      tries: seen.length,
      healthz: sum("healthz"),
      ws: sum("ws"),
      mqtt: sum("mqtt"),
      slowest: { healthz: most("healthz"), ws: most("ws"), mqtt: most("mqtt") },
    };
    const msg = report("long ids", r, flood.last());
    console.log(msg);
    assert.ok(servedEnough(r), msg);
    // Each attempt was closed for its size before it was parsed (no CONNACK, no map, no log).
    const metrics = await fetchHttp(server.port, "/metrics", {
      headers: { Authorization: `Bearer ${token}` },
    });
    const closed = Number(
      /nixmsg_connections_closed_total\{reason="connect_size"\} (\d+)/.exec(metrics.text)?.[1] ?? 0,
    );
    assert.ok(closed >= 2600, `${closed} closed for their size`);
  }, { metrics: { token }, limits });
});
