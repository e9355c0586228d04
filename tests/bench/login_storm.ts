// The reconnect storm after a restart (spec 5 登录与会话令牌, spec 12, spec 13 压测): 1,000
// endpoints that hold session tokens all reconnect over WebSocket at once and handshake. Tokens
// cost one SHA-256 lookup, no argon2, so all of them should be online well within 10 s.
//
//   deno run -A tests/bench/login_storm.ts [endpoints, default 1000]
//
// 1. Creates the endpoints, then logs each in once with its password (batches of 100) to get its
//    token, and disconnects all of them.
// 2. All reconnect concurrently with their tokens over ws:// and send `hello`; reported: the time
//    until the last CONNACK and until the last `hello` answer, with per-client percentiles.
// The server runs in this process; the clients run in a Worker so they do not share its event
// loop. The password phase uses the cheap test argon2 cost, so its time is not representative of
// production passwords (spec 12 parameters); the token phase does no argon2 at all.
import type { MqttClient } from "mqtt";
import { helloLogin } from "./_mqtt_login.ts";

interface Job {
  kind: "password" | "token";
  url: string;
  ids: string[];
  secrets: string[];
}

interface JobResult {
  kind: Job["kind"];
  totalMs: number;
  tokens: string[];
  connackMs: number[];
  helloMs: number[];
  failures: string[];
}

const BATCH = 100;
const PASSWORD = "storm-password-1";
const TIMEOUT_MS = 60_000;

if (new URL(import.meta.url).search === "?worker") workerMain();
else await main();

// ---------------------------------------------------------------------------------------------
// Clients (Worker)

function workerMain(): void {
  const scope = globalThis as unknown as {
    onmessage: ((e: MessageEvent<Job | "close">) => void) | null;
    postMessage(m: JobResult | { error: string } | "closed"): void;
  };
  let open: MqttClient[] = [];
  scope.onmessage = (e) => {
    if (e.data === "close") {
      Promise.all(open.map((c) => c.endAsync(true))).then(() => {
        open = [];
        scope.postMessage("closed");
      });
      return;
    }
    runJob(e.data, open).then(
      (r) => scope.postMessage(r),
      (err) => scope.postMessage({ error: String(err?.stack ?? err) }),
    );
  };
}

async function runJob(job: Job, open: MqttClient[]): Promise<JobResult> {
  const result: JobResult = {
    kind: job.kind,
    totalMs: 0,
    tokens: new Array(job.ids.length).fill(""),
    connackMs: [],
    helloMs: [],
    failures: [],
  };
  const one = async (i: number, t0: number) => {
    try {
      const r = await helloLogin(job.url, job.ids[i], job.secrets[i], {
        timeoutMs: TIMEOUT_MS,
        t0,
      });
      result.connackMs.push(r.connackMs);
      result.helloMs.push(r.helloMs);
      result.tokens[i] = r.token;
      if (job.kind === "password") await r.c.endAsync();
      else open.push(r.c);
    } catch (err) {
      result.failures.push(String(err));
    }
  };
  const start = performance.now();
  if (job.kind === "password") {
    for (let b = 0; b < job.ids.length; b += BATCH) {
      const t0 = performance.now();
      await Promise.all(job.ids.slice(b, b + BATCH).map((_, k) => one(b + k, t0)));
    }
  } else {
    await Promise.all(job.ids.map((_, i) => one(i, start)));
  }
  result.totalMs = performance.now() - start;
  return result;
}

// ---------------------------------------------------------------------------------------------
// Server and report (main thread)

function pct(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
}

async function fdLimit(): Promise<number> {
  const out = await new Deno.Command("sh", { args: ["-c", "ulimit -n"] }).output();
  return Number(new TextDecoder().decode(out.stdout).trim()) || 0;
}

async function main(): Promise<void> {
  const { startTestServer } = await import("../helpers/test_server.ts");
  const n = Number(Deno.args[0] ?? 1000);
  // Two sockets per endpoint (client and server end) live in this one process, plus the
  // runtime's own descriptors.
  const limit = await fdLimit();
  if (limit < 2 * n + 200) {
    console.error(
      `ulimit -n is ${limit}; ${2 * n + 200} needed. Raise it or pass fewer endpoints.`,
    );
    Deno.exit(1);
  }
  const t = await startTestServer({
    limits: {
      max_clients: Math.max(2000, n + 100),
      requests_per_second: 50,
      // All from 127.0.0.1 (issue 28): the per-address shares and rates at the bench's size.
      max_unauthenticated_per_ip: n + 100,
      max_conn_rate_per_ip: 100_000,
      max_conn_rate: 100_000,
      max_http_connections_per_ip: 100_000,
    },
    timeouts: { hello_seconds: 30, first_byte_seconds: 10, auth_seconds: 30 },
  });
  const worker = new Worker(new URL("./login_storm.ts?worker", import.meta.url), {
    type: "module",
  });
  const ask = <T>(msg: Job | "close") =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("worker timed out")), 4 * TIMEOUT_MS);
      worker.onmessage = (e: MessageEvent) => {
        clearTimeout(timer);
        if (e.data && typeof e.data === "object" && "error" in e.data) {
          reject(new Error(e.data.error));
        } else resolve(e.data as T);
      };
      worker.postMessage(msg);
    });

  try {
    const ids = Array.from({ length: n }, (_, i) => `storm${String(i).padStart(4, "0")}`);
    let started = performance.now();
    for (let b = 0; b < n; b += BATCH) {
      await Promise.all(ids.slice(b, b + BATCH).map((id) => t.createEndpoint(id, PASSWORD)));
    }
    console.error(`created ${n} endpoints in ${(performance.now() - started).toFixed(0)} ms`);

    const pw = await ask<JobResult>({
      kind: "password",
      url: t.wsUrl,
      ids,
      secrets: ids.map(() => PASSWORD),
    });
    if (pw.failures.length) throw new Error(`password logins failed: ${pw.failures.slice(0, 3)}`);
    console.error(
      `password logins (batches of ${BATCH}, test argon2 cost): ${pw.totalMs.toFixed(0)} ms`,
    );
    // Wait until the server has seen every password-phase connection go.
    started = performance.now();
    while (t.server.app.conns.size > 0) {
      if (performance.now() - started > TIMEOUT_MS) throw new Error("connections did not close");
      await new Promise((r) => setTimeout(r, 20));
    }

    const commits0 = t.server.store.commits;
    const storm = await ask<JobResult>({ kind: "token", url: t.wsUrl, ids, secrets: pw.tokens });
    const commits = t.server.store.commits - commits0;
    let handshaken = 0;
    for (const c of t.server.app.conns.all()) if (c.handshaken) handshaken++;
    await ask<"closed">("close");

    const ok = storm.helloMs.length;
    console.log(`\nToken reconnect storm: ${n} endpoints over WebSocket, all at once\n`);
    console.log("| measure | value |");
    console.log("|---|--:|");
    console.log(`| online (hello answered) | ${ok} / ${n} |`);
    console.log(`| server: handshaken connections | ${handshaken} |`);
    console.log(`| failures | ${storm.failures.length} |`);
    console.log(`| writer commits during the storm | ${commits} |`);
    console.log(`| last CONNACK | ${Math.max(...storm.connackMs).toFixed(0)} ms |`);
    console.log(`| **all online (last hello answer)** | **${storm.totalMs.toFixed(0)} ms** |`);
    console.log(
      `| per client CONNACK p50 / p99 | ${pct(storm.connackMs, 0.5).toFixed(0)} / ${
        pct(storm.connackMs, 0.99).toFixed(0)
      } ms |`,
    );
    console.log(
      `| per client online p50 / p99 | ${pct(storm.helloMs, 0.5).toFixed(0)} / ${
        pct(storm.helloMs, 0.99).toFixed(0)
      } ms |`,
    );
    console.log(
      `| password phase (batches of ${BATCH}, test argon2) | ${pw.totalMs.toFixed(0)} ms |`,
    );
    if (storm.failures.length) console.log(storm.failures.slice(0, 5).join("\n"));
    const target = storm.totalMs < 10_000 && ok === n;
    console.log(`\ntarget (all ${n} online < 10 s): ${target ? "met" : "NOT met"}`);
  } finally {
    worker.terminate();
    await t.close();
  }
}
