// issue 28 item 5: `/readyz` must tell the truth on a full disk. The data directory is a 4 MiB
// tmpfs (root only). Pattern 1: a few sends commit, then the disk is filled, then sends fail with
// `busy`; pattern 2: the disk is filled first. In both, `/readyz` is 503 within 2 s of the first
// failed commit (the one-row probe alone still fits) and 200 again within 2 s of space returning.
import assert from "node:assert/strict";
import { join } from "node:path";
import { stringify } from "yaml";
import { online, type TestClient } from "./helpers/client.ts";
import { KEEP, PW, sendFrame } from "./helpers/messaging.ts";
import { startServerProcess, type TestHome } from "./helpers/server_process.ts";
import { prepareHome } from "./bench/_load_util.ts";
import { fetchHttp } from "../server/net/_test_util.ts";

const IS_ROOT = Deno.uid() === 0;
const TURN_MS = 2000;
const TOKEN = "metrics-token";

/** The value of a `/metrics` sample line, e.g. `nixmsg_store_ready`; NaN when missing. */
async function metric(port: number, sample: string): Promise<number> {
  const r = await fetchHttp(port, "/metrics", { headers: { Authorization: `Bearer ${TOKEN}` } });
  const line = r.text.split("\n").find((l) => l.startsWith(`${sample} `));
  return line === undefined ? NaN : Number(line.slice(sample.length + 1));
}

async function sh(cmd: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

/**
 * Appends zeros to `path` until the file system is full. Called again while the test expects a
 * full disk, since the server's WAL checkpoint may free some space meanwhile.
 */
async function fill(path: string): Promise<void> {
  const f = await Deno.open(path, { create: true, append: true });
  const chunk = new Uint8Array(64 * 1024);
  try {
    for (;;) await f.write(chunk);
  } catch (err) {
    if (!String(err).includes("No space left")) throw err;
  } finally {
    f.close();
  }
}

async function readyz(port: number): Promise<number> {
  return (await fetchHttp(port, "/readyz").catch(() => ({ status: 0 }))).status;
}

/**
 * Polls `/readyz` until it answers `status`; returns the ms it took, or fails after `ms`. With
 * `filler`, the disk is kept full between polls.
 */
async function until(port: number, status: number, ms: number, filler?: string): Promise<number> {
  const t0 = performance.now();
  let last = 0;
  while (performance.now() - t0 < ms) {
    if (filler !== undefined) await fill(filler);
    last = await readyz(port);
    if (last === status) return performance.now() - t0;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`/readyz stayed ${last} for ${ms} ms, expected ${status}`);
}

/** Sends until one answer is `busy`; returns when that answer came. */
async function sendUntilBusy(a: TestClient, tag: string): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const r = await a.request(sendFrame(`${tag}-${i}`, "b", "x".repeat(2000), KEEP));
    if (r.ok === false) {
      assert.equal((r.error as { code: string }).code, "busy");
      return performance.now();
    }
  }
  throw new Error("200 sends committed on a full disk");
}

/**
 * While the disk is kept full, every send answered `busy` is followed by `/readyz` 503 within
 * 2 s, although the one-row probe alone would fit (the log: 33 of 40 sends busy while
 * `/readyz` answered 200 in 55 of 55 samples). A checkpoint may make room in the WAL for a moment
 * (SQLite rewrites it from its start); a send then commits, and `/readyz` may say 200 meanwhile.
 */
async function failedSendsFailReadyz(port: number, filler: string, a: TestClient, tag: string) {
  let busy = 0;
  for (let i = 0; i < 8; i++) {
    await fill(filler);
    const r = await a.request(sendFrame(`${tag}-${i}`, "b", "x".repeat(2000), KEEP));
    if (r.ok === true) continue;
    busy++;
    await until(port, 503, TURN_MS, filler);
  }
  console.log(`${tag}: ${busy} of 8 sends busy on the full disk, each followed by 503`);
}

async function withTmpfsServer(
  fn: (port: number, dir: string, a: TestClient) => Promise<void>,
): Promise<void> {
  const base = await prepareHome({}, ["a", "b"], PW);
  const mnt = join(base.dir, "tmpfs");
  await Deno.mkdir(mnt);
  await sh("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt]);
  try {
    await sh("cp", ["-a", `${base.dataDir}/.`, mnt]);
    await Deno.writeTextFile(
      base.configPath,
      stringify({
        listen: "127.0.0.1:0",
        data_dir: mnt,
        log: { level: "info" },
        metrics: { token: TOKEN },
      }),
    );
    const home: TestHome = { ...base, dataDir: mnt };
    const server = await startServerProcess(home, 60_000, { launcher: true });
    const { client: a } = await online(`mqtt://127.0.0.1:${server.port}`, "a", PW);
    try {
      await fn(server.port, mnt, a);
      // The log says why, both ways.
      const down = server.logs.find((l) => l.msg === "Not ready: a database commit failed");
      assert.equal(down?.reason, "commit_failed");
      const up = server.logs.find((l) => l.msg === "Ready again: a database commit succeeds");
      assert.equal(up?.reason, "padded_probe_committed");
      // And the metrics count it: the failed commits made it not ready, and it is ready again.
      const port = server.port;
      assert.ok(await metric(port, 'nixmsg_store_not_ready_total{reason="commit_failed"}') >= 1);
      assert.equal(await metric(port, "nixmsg_store_ready"), 1);
    } finally {
      await a.close();
      await server.stop();
    }
  } finally {
    await sh("umount", ["-l", mnt]);
    await base.cleanup();
  }
}

Deno.test({
  name:
    "small sends first, then a full disk: /readyz is 503 within 2 s of a failed commit and 200 within 2 s of space returning",
  ignore: !IS_ROOT,
  fn: () =>
    withTmpfsServer(async (port, dir, a) => {
      for (let i = 0; i < 8; i++) {
        const r = await a.request(sendFrame(`small-${i}`, "b", "hello", KEEP));
        assert.equal(r.ok, true, JSON.stringify(r));
      }
      assert.equal(await readyz(port), 200);
      const filler = join(dir, "filler");
      await fill(filler);
      await sendUntilBusy(a, "full");
      const down = await until(port, 503, TURN_MS, filler);
      console.log(`pattern 1: 503 ${Math.round(down)} ms after the busy answer`);
      await failedSendsFailReadyz(port, filler, a, "p1");
      await Deno.remove(filler);
      const up = await until(port, 200, TURN_MS);
      console.log(`pattern 1: 200 ${Math.round(up)} ms after space returned`);
      const r = await a.request(sendFrame("after", "b", "hello", KEEP));
      assert.equal(r.ok, true, JSON.stringify(r));
    }),
});

Deno.test({
  name:
    "a full disk first, then sends: /readyz is 503 within 2 s of a failed commit and 200 within 2 s of space returning",
  ignore: !IS_ROOT,
  fn: () =>
    withTmpfsServer(async (port, dir, a) => {
      const filler = join(dir, "filler");
      await fill(filler);
      await sendUntilBusy(a, "full");
      const down = await until(port, 503, TURN_MS, filler);
      console.log(`pattern 2: 503 ${Math.round(down)} ms after the busy answer`);
      await failedSendsFailReadyz(port, filler, a, "p2");
      await Deno.remove(filler);
      const up = await until(port, 200, TURN_MS);
      console.log(`pattern 2: 200 ${Math.round(up)} ms after space returned`);
    }),
});
