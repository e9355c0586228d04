// The fuzz test of issue 10: a few thousand malformed inputs (raw TCP bytes, MQTT packets,
// WebSocket frames, JSON frames after a valid hello, HTTP requests) at ONE `nixmsg serve` child,
// then proof that it is still healthy and still delivers. A crash is the child's exit: the input
// is pinned by replay, the server restarted, and the test fails at the end listing every crash.
//
// Every input comes from one seeded PRNG; the seed is printed. Reproduce a run with
//   NIXMSG_FUZZ_SEED=<seed> deno test --allow-all --frozen tests/fuzz_test.ts
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { online, TestClient } from "./helpers/client.ts";
import { fuzzSeed, hexPreview, Rng } from "./helpers/fuzz_rng.ts";
import { type MqttLogin, postAuthInput, preAuthInput } from "./helpers/fuzz_mqtt.ts";
import { wsInput } from "./helpers/fuzz_ws.ts";
import { HTTP_CONTROL_EVERY, type HttpAuth, httpControl, httpInput } from "./helpers/fuzz_http.ts";
import { jsonFrameInput } from "./helpers/fuzz_json.ts";
import { SessionPool } from "./helpers/fuzz_sessions.ts";
import {
  ADMIN_PASSWORD,
  FUZZ_PASSWORD,
  type FuzzInput,
  FuzzTarget,
  type Outcome,
} from "./helpers/fuzz_target.ts";
import { rawExchange, type RawExchangeOptions, type RawReply } from "./helpers/raw_peer.ts";
import { HAS_OPENSSL } from "../server/net/_test_util.ts";
import { sendFrame, waitMsg, waitReceipt } from "./helpers/messaging.ts";

/**
 * Inputs per phase, a few thousand in all, and the time each phase may take: on a quiet machine
 * every input runs in about 20 s; on a loaded one a phase starts no input after its budget, so the
 * test stays under a minute (the count that ran is printed).
 */
const PHASES = {
  tcp: { count: 400, budgetMs: 4000 },
  mqtt: { count: 1000, budgetMs: 16_000 },
  ws: { count: 600, budgetMs: 12_000 },
  http: { count: 700, budgetMs: 8000 },
  json: { count: 500, budgetMs: 8000 },
};
const CONCURRENCY = 16;
/**
 * Half-close 100 ms after the server's first reply, or after 200 ms without one. A valid login
 * waits up to 2 s for its CONNACK before the packets that follow it; anything else 300 ms.
 */
const SETTLE = { silentMs: 200, lingerMs: 100, stageMs: 300 };
const SETTLE_LOGIN = { ...SETTLE, stageMs: 2000 };

const ALICE = "fz_alice";
const BOB = "fz_bob";
const PRE: MqttLogin = { id: "fz_pre", password: FUZZ_PASSWORD };
// One endpoint per concurrent input, so that logins rarely take each other over.
const MQTT_IDS = Array.from({ length: CONCURRENCY }, (_, i) => `fz_m${i}`);
const WS_IDS = Array.from({ length: CONCURRENCY }, (_, i) => `fz_w${i}`);
const JSON_IDS = ["fz_j0", "fz_j1", "fz_j2", "fz_j3", "fz_j4", "fz_j5", "fz_j6", "fz_j7"];

const latin1 = (b: Uint8Array) => Buffer.from(b).toString("latin1");

/**
 * Session tokens of `ids` (one password login and hello each). The fuzzed connections log in with
 * them: a token login costs the server no hashing and no commit, so thousands fit in a minute, and
 * none of them can lock the endpoint.
 */
async function sessionTokens(port: number, ids: readonly string[]): Promise<Map<string, string>> {
  const tokens = new Map<string, string>();
  for (let at = 0; at < ids.length; at += 8) {
    await Promise.all(
      ids.slice(at, at + 8).map(async (id) => {
        const { client, token } = await online(`mqtt://127.0.0.1:${port}`, id, FUZZ_PASSWORD);
        await client.close();
        if (token === null) throw new Error(`No session token for ${id}`);
        tokens.set(id, token);
      }),
    );
  }
  return tokens;
}

/** A phase's own PRNG, so one phase's inputs do not depend on how many the others drew. */
function phaseRng(seed: number, phase: number): Rng {
  return new Rng((seed + Math.imul(phase + 1, 0x9e3779b1)) | 0);
}

/** How the server answered raw bytes: its CONNACK, its HTTP status, or nothing. */
function replyTag(r: RawReply): string {
  const b = r.bytes;
  if (b.length === 0) return "no reply";
  // The return code (3.1.1) or reason code (5) is the 4th byte of a CONNACK in both versions.
  if (b[0] === 0x20 && b.length >= 4) return b[3] === 0 ? "connack ok" : "connack refused";
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(latin1(b.subarray(0, 16)));
  if (status?.[1] === "101") {
    // The first server frame after the upgrade: a binary CONNACK, or a close with its code.
    const f = b.subarray(latin1(b).indexOf("\r\n\r\n") + 4);
    if (f[0] === 0x82 && f[2] === 0x20 && f.length >= 6) {
      return f[5] === 0 ? "http 101, connack ok" : "http 101, connack refused";
    }
    if (f[0] === 0x88 && f.length >= 4) return `http 101, close ${f[2] << 8 | f[3]}`;
    return "http 101";
  }
  // An answer of the app carries a JSON error code; the HTTP parser's own 400 does not.
  if (status) return `http ${status[1]}${latin1(b).includes('"error":{"code"') ? " app" : ""}`;
  return `other 0x${b[0].toString(16)}`;
}

function rawInput(
  name: string,
  stages: Uint8Array[][],
  opts: Pick<RawExchangeOptions, "tls" | "settle"> = {},
  check?: (r: RawReply) => string | undefined,
): FuzzInput {
  const preview = stages.map((s) => s.map((b) => hexPreview(b, 24)).join(" ")).join(" | ");
  return {
    name: `${name}${opts.tls ? " (in TLS)" : ""} [${preview}]`,
    async run(port): Promise<Outcome> {
      const r = await rawExchange(port, stages, opts);
      const tag = replyTag(r) + (r.closed ? "" : ", open at the deadline");
      return { reply: latin1(r.bytes), problem: check?.(r), tag, refused: r.refused };
    },
  };
}

/** HTTP 500 answers: an unhandled error behind a bad input (spec: a clear HTTP error instead). */
function http500(r: RawReply): string | undefined {
  const statuses = [...latin1(r.bytes).matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => m[1]);
  return statuses.includes("500")
    ? `answered HTTP 500: ${latin1(r.bytes).slice(0, 300)}`
    : undefined;
}

async function adminCookie(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/api/admin/login`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Nixmsg-Request": "1" },
    body: JSON.stringify({ username: "admin", password: ADMIN_PASSWORD }),
  });
  await res.body?.cancel();
  const cookie = res.headers.get("set-cookie")?.split(";")[0];
  if (res.status !== 200 || !cookie) throw new Error(`Admin login failed: ${res.status}`);
  return cookie;
}

/** Two real clients exchange one message: sent, pushed, acked, and the receipt confirmed. */
async function assertDelivers(port: number): Promise<void> {
  const alice = await TestClient.connect(`ws://127.0.0.1:${port}/mqtt`, ALICE, FUZZ_PASSWORD);
  const bob = await TestClient.connect(`mqtt://127.0.0.1:${port}`, BOB, FUZZ_PASSWORD);
  try {
    assert.ok(alice.connected && bob.connected, "both clients log in after the fuzzing");
    await alice.handshake();
    await bob.handshake();
    const sent = await alice.request(sendFrame("fz-final", BOB, "still delivers", { delay_ms: 0 }));
    assert.equal(sent.ok, true, JSON.stringify(sent));
    const msg = await waitMsg(bob, "fz-final");
    assert.equal((msg.body as { data: string }).data, "still delivers");
    const ack = await bob.request({ type: "ack", from: ALICE, id: "fz-final" });
    assert.deepEqual(ack.data, { result: "accepted" });
    assert.equal((await waitReceipt(alice, "fz-final")).state, "accepted");
  } finally {
    await alice.close();
    await bob.close();
  }
}

Deno.test({
  name: "a few thousand malformed inputs neither crash nor hang the server, and it still delivers",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const seed = fuzzSeed();
    console.log(`fuzz seed ${seed} (rerun with NIXMSG_FUZZ_SEED=${seed})`);
    const target = await FuzzTarget.start(
      [ALICE, BOB, PRE.id, ...MQTT_IDS, ...WS_IDS, ...JSON_IDS],
      HAS_OPENSSL,
    );
    const sessions = new SessionPool(JSON_IDS, FUZZ_PASSWORD, () => target.port);
    const started = Date.now();
    const ran: Record<string, number> = {};
    try {
      // Raw TCP: random bytes after each first byte the sniffer knows, plain or inside TLS.
      let rng = phaseRng(seed, 0);
      ran.tcp = await target.runPhase("tcp", { ...PHASES.tcp, concurrency: CONCURRENCY }, (i) => {
        const first = rng.pick([0x10, 0x16, 0x47, 0x50, 0x00, 0xff, 0x30, rng.int(256)]);
        const tls = target.tls && rng.chance(0.2);
        const bytes = new Uint8Array([first, ...rng.bytes(rng.size(400))]);
        return rawInput(`#${i} tcp`, [[bytes]], { tls });
      });

      // MQTT: fuzzed CONNECTs, and valid logins followed by fuzzed packets.
      const tokens = await sessionTokens(target.port, [...MQTT_IDS, ...WS_IDS]);
      const login = (id: string): MqttLogin => ({ id, password: tokens.get(id)! });
      rng = phaseRng(seed, 1);
      ran.mqtt = await target.runPhase(
        "mqtt",
        { ...PHASES.mqtt, concurrency: CONCURRENCY },
        (i) => {
          const input = rng.chance(0.4)
            ? preAuthInput(rng, PRE)
            : postAuthInput(rng, login(MQTT_IDS[i % MQTT_IDS.length]));
          const tls = target.tls && rng.chance(0.15);
          return rawInput(`#${i} ${input.name}`, input.stages.map((b) => [b]), {
            tls,
            settle: input.login ? SETTLE_LOGIN : SETTLE,
          });
        },
      );

      // WebSocket: upgrades with and without `mqtt`, then MQTT and broken frames.
      rng = phaseRng(seed, 2);
      ran.ws = await target.runPhase("ws", { ...PHASES.ws, concurrency: CONCURRENCY }, (i) => {
        const input = wsInput(rng, login(WS_IDS[i % WS_IDS.length]), PRE);
        const settle = input.login ? SETTLE_LOGIN : SETTLE;
        return rawInput(`#${i} ${input.name}`, input.stages, { settle });
      });

      // HTTP: requests written by hand, most with a valid admin session cookie.
      rng = phaseRng(seed, 3);
      const auth: HttpAuth = { cookie: await adminCookie(target.port) };
      ran.http = await target.runPhase(
        "http",
        { ...PHASES.http, concurrency: CONCURRENCY },
        (i) => {
          const control = i % HTTP_CONTROL_EVERY === HTTP_CONTROL_EVERY / 2;
          const input = control ? httpControl() : httpInput(rng, auth);
          const tls = !control && target.tls && rng.chance(0.15);
          const raw = rawInput(`#${i} ${input.name}`, [[input.bytes]], { tls }, http500);
          if (i % 100 !== 99) return raw;
          // A fuzzed logout ends the session: log in again now and then.
          return {
            name: raw.name,
            async run(port) {
              const out = await raw.run(port);
              auth.cookie = await adminCookie(port).catch(() => auth.cookie);
              return out;
            },
          };
        },
      );

      // JSON frames on the up topic of sessions past a valid login and hello.
      rng = phaseRng(seed, 4);
      ran.json = await target.runPhase("json", { ...PHASES.json, concurrency: 4 }, (i) => {
        const input = jsonFrameInput(rng);
        return {
          name: `#${i} ${input.name} [${hexPreview(input.payload, 32)}]`,
          run: () => sessions.run(input),
        };
      });
      await sessions.close();
      await target.expectNoConnections();

      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      console.log(
        `fuzz: ${JSON.stringify(ran)} inputs ran in ${seconds} s ` +
          `(of ${
            JSON.stringify(Object.fromEntries(Object.entries(PHASES).map(([k, v]) => [k, v.count])))
          }); ` +
          `${target.crashes.length} crashes, ${target.findings.length} findings, ` +
          `${sessions.closedByServer} JSON sessions closed by the server`,
      );

      // The inputs reached past the parsers: logins worked, upgrades and requests were answered.
      const tags = (phase: string, prefix: string) =>
        Object.entries(target.tags[phase] ?? {}).filter(([t]) => t.startsWith(prefix))
          .reduce((n, [, c]) => n + c, 0);
      console.log(`fuzz replies: ${JSON.stringify(target.tags)}`);
      console.log(`fuzz seconds per phase: ${JSON.stringify(target.seconds)}`);
      const appErrors = Object.entries(target.tags.http ?? {})
        .filter(([t]) => /^http [45]\d\d app$/.test(t)).reduce((n, [, c]) => n + c, 0);
      const coverage = [
        ["mqtt", "MQTT logins accepted", tags("mqtt", "connack ok"), ran.mqtt * 0.2],
        ["ws", "WebSocket upgrades", tags("ws", "http 101"), ran.ws * 0.3],
        ["ws", "MQTT logins over WebSocket", tags("ws", "http 101, connack ok"), ran.ws * 0.01],
        // At least one per control request that ran (the random requests add a few more).
        [
          "http",
          "HTTP 2xx answers",
          tags("http", "http 2"),
          Math.floor((ran.http + HTTP_CONTROL_EVERY / 2) / HTTP_CONTROL_EVERY),
        ],
        ["http", "HTTP errors answered by the app", appErrors, ran.http * 0.2],
        ["json", "JSON frames answered", tags("json", "resp"), ran.json * 0.9],
      ] as const;
      // A phase cut short by crashes is reported by them.
      const crashed = new Set(target.crashes.map((c) => c.phase));
      const report = [
        ...coverage.filter(([phase, , got, want]) => !crashed.has(phase) && got < want).map((
          [, what, got, want],
        ) =>
          `too few ${what}: ${got} < ${Math.ceil(want)} (the inputs no longer reach the handlers)`
        ),
        ...target.crashes.map((c) =>
          `CRASH in ${c.phase}: ${c.culprit ?? "(no single input reproduced it)"}\n` +
          `  (found by replaying the last ${c.suspects} inputs one by one)\n` +
          `  ${c.stderr.split("\n").join("\n  ")}`
        ),
        ...target.findings.map((f) => `${f.phase}: ${f.what}\n  input: ${f.input}`),
      ];
      // A server that takes a whole budget for a tenth of the inputs has stalled.
      for (const [phase, { count }] of Object.entries(PHASES)) {
        if (!crashed.has(phase) && ran[phase] < count / 10) {
          report.push(`${phase}: only ${ran[phase]} of ${count} inputs ran within the budget`);
        }
      }
      if (report.length > 0) console.log(`fuzz report (seed ${seed}):\n${report.join("\n")}`);

      // Healthy and still delivering, in the process that took the last inputs.
      assert.equal(await target.probe("/healthz"), 200, "/healthz after the fuzzing");
      assert.equal(await target.probe("/readyz"), 200, "/readyz after the fuzzing");
      await assertDelivers(target.port);
      assert.ok(target.alive, "the server process is still running");

      assert.equal(
        report.length,
        0,
        `seed ${seed}: ${target.crashes.length} crashes, ${target.findings.length} findings\n` +
          report.join("\n"),
      );
    } finally {
      await sessions.close();
      await target.close();
    }
  },
});
