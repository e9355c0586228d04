// Docs that run (issue 27): every shell block of the README and the operator guides is run as
// written against a real server started with the launcher, or carries a `not run` marker with
// its reason (tests/helpers/doc_blocks.ts). A block runs in a temp directory laid out like a
// checkout (`./nixmsg` calls this repository's launcher, `deploy/` is this repository's), its
// commands one by one, each with a time limit. The documented address 127.0.0.1:7443 becomes the
// test server's free port, and the names the docs use exist there: endpoints e_1 and e_2, door-1
// with the password 'login password', the registration code "the code", an API token in
// $NIXMSG_TOKEN and the metrics token in $TOKEN. A block that starts a server (`serve`,
// `quickstart`, `admin init`) or writes config.yaml gets a directory of its own instead, whose
// config.yaml listens on 127.0.0.1:0; `serve` and `quickstart` are run until they serve, checked
// at /healthz and stopped with SIGTERM.
import assert from "node:assert/strict";
import { join } from "node:path";
import { AdminClient } from "./helpers/admin.ts";
import { online } from "./helpers/client.ts";
import { type DocBlock, type DocCommand, matchesShown, parseDoc } from "./helpers/doc_blocks.ts";
import { PW, waitMsg } from "./helpers/messaging.ts";
import {
  makeTestHome,
  runCli,
  type ServerProcess,
  startServerProcess,
  type TestHome,
} from "./helpers/server_process.ts";

const ROOT = new URL("../", import.meta.url).pathname;
/** The pages whose shell blocks are run. */
const RUN_DOCS = ["README.md", "docs/operations.md", "docs/devices.md", "docs/scaling.md"];
/**
 * Pages whose shell blocks this test does not run: the SDK READMEs, whose install commands and
 * first example the SDKs' own install tests run in a scratch project (issue 27 item 5), and the
 * store pages. Every shell block there must carry a `not run` marker that names the test running it
 * or says why none does, so a block added later is not silently left untested.
 */
const MARKED_DOCS = [
  "sdk/ts/README.md",
  "sdk/go/README.md",
  "sdk/python/README.md",
  "sdk/java/README.md",
  "sdk/conformance/README.md",
  "docs/store.md",
  "docs/store_postgres.md",
];
/** The pages that must not name a machine's paths. */
const PATH_DOCS = [...RUN_DOCS, ...MARKED_DOCS, "docs/BENCHMARKS.md"];
const COMMAND_MS = 60_000;
/** `serve` may first build the admin console (the launcher does when web/dist is stale). */
const SERVE_MS = 240_000;
const METRICS_TOKEN = "metrics-token-for-docs";
const REGISTRATION_CODE = "the code";
const DOOR_PASSWORD = "login password";

async function docs(): Promise<{ blocks: DocBlock[]; problems: string[] }> {
  const blocks: DocBlock[] = [];
  const problems: string[] = [];
  for (const file of RUN_DOCS) {
    const parsed = parseDoc(file, await Deno.readTextFile(join(ROOT, file)));
    blocks.push(...parsed.blocks);
    problems.push(...parsed.problems);
  }
  return { blocks, problems };
}

Deno.test("the docs give paths relative to the repository, never a machine's", async () => {
  const found: string[] = [];
  for (const file of PATH_DOCS) {
    const lines = (await Deno.readTextFile(join(ROOT, file))).split("\n");
    lines.forEach((line, i) => {
      if (/(^|[^\w.])\/(work|root|home)\//.test(line)) {
        found.push(`${file}:${i + 1}: ${line.trim()}`);
      }
    });
  }
  assert.deepEqual(found, []);
});

Deno.test("every shell block of the docs is run or marked as not runnable with a reason", async () => {
  const { blocks, problems } = await docs();
  assert.deepEqual(problems, []);
  assert.ok(blocks.length >= 15, `only ${blocks.length} shell blocks found`);
  const unrun = blocks.filter((b) =>
    b.notRun === null && b.commands.every((c) => c.notRun !== null)
  );
  assert.deepEqual(
    unrun.map((b) => `${b.file}:${b.line}`),
    [],
    "blocks whose every command is marked one by one: mark the block",
  );
});

Deno.test("every shell block of the SDK READMEs and the store pages names the test that runs it or why none does", async () => {
  const unmarked: string[] = [];
  const problems: string[] = [];
  for (const file of MARKED_DOCS) {
    const parsed = parseDoc(file, await Deno.readTextFile(join(ROOT, file)));
    problems.push(...parsed.problems);
    for (const b of parsed.blocks) {
      if (b.notRun === null) unmarked.push(`${b.file}:${b.line}`);
    }
  }
  assert.deepEqual(problems, []);
  assert.deepEqual(
    unmarked,
    [],
    "mark each block `<!-- not run: <the test that runs it, or why none does> -->`, or add its " +
      "page to RUN_DOCS",
  );
});

/** A directory laid out like a checkout, where a block's commands run. */
interface Place {
  dir: string;
  env: Record<string, string>;
  /** Points the documented addresses and paths at this test's. */
  localize(command: string): string;
}

/** The outcome of one command. */
interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function layOut(dir: string): Promise<void> {
  await Deno.writeTextFile(join(dir, "nixmsg"), `#!/bin/sh\nexec "${ROOT}nixmsg" "$@"\n`);
  await Deno.chmod(join(dir, "nixmsg"), 0o755);
  await Deno.symlink(join(ROOT, "deploy"), join(dir, "deploy"));
}

/** The environment of the commands: this process's, without NIXMSG_* settings, plus `extra`. */
function commandEnv(extra: Record<string, string>): Record<string, string> {
  const env = Object.fromEntries(
    Object.entries(Deno.env.toObject()).filter(([k]) => !k.startsWith("NIXMSG_")),
  );
  return { ...env, NO_COLOR: "1", ...extra };
}

async function run(place: Place, command: string): Promise<Outcome> {
  const started = Date.now();
  const out = await new Deno.Command("bash", {
    args: ["-o", "pipefail", "-c", command],
    cwd: place.dir,
    env: place.env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(COMMAND_MS),
  }).output();
  const dec = new TextDecoder();
  const late = Date.now() - started >= COMMAND_MS ? `\n(stopped after ${COMMAND_MS} ms)` : "";
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) + late };
}

/**
 * Runs a command that serves until stopped: waits for "nixmsg serving", checks /healthz at the
 * address in data/listen.addr, then stops it with SIGTERM. Returns what it printed before serving.
 */
async function runServing(place: Place, command: string): Promise<Outcome> {
  const child = new Deno.Command("bash", {
    args: ["-c", `exec ${command}`],
    cwd: place.dir,
    env: place.env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const timer = setTimeout(() => child.kill("SIGKILL"), SERVE_MS);
  let before = "";
  let buf = "";
  let serving = false;
  while (!serving) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    for (let nl = buf.indexOf("\n"); nl >= 0 && !serving; nl = buf.indexOf("\n")) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.includes('"nixmsg serving"')) serving = true;
      else before += line + "\n";
    }
  }
  clearTimeout(timer);
  const drained = (async () => {
    while (!(await reader.read()).done) { /* keep the pipe flowing */ }
  })();
  if (!serving) {
    const status = await child.status;
    await drained;
    const note = `\n(exited with ${status.code} or did not serve within ${SERVE_MS} ms)`;
    return {
      code: status.code === 0 ? -1 : status.code,
      stdout: before,
      stderr: await stderr + note,
    };
  }
  try {
    const addr = (await Deno.readTextFile(join(place.dir, "data/listen.addr"))).trim();
    // The test's own address, never the documented one on every interface.
    assert.match(addr, /^127\.0\.0\.1:\d+$/, `serves on ${addr}`);
    assert.notEqual(addr, "127.0.0.1:7443", "serves on a free port");
    const health = await fetch(`http://${addr}/healthz`, {
      signal: AbortSignal.timeout(COMMAND_MS),
    });
    assert.equal(health.status, 200, await health.text());
  } finally {
    child.kill("SIGTERM");
  }
  const kill = setTimeout(() => child.kill("SIGKILL"), COMMAND_MS);
  const status = await child.status;
  clearTimeout(kill);
  await drained;
  return { code: status.code, stdout: before, stderr: await stderr };
}

/** The admin password `nixmsg admin init` printed. */
function shownPassword(stdout: string): string {
  const shown = [...stdout.matchAll(/^\s*password: (\S+)$/gm)].map((m) => m[1]);
  assert.equal(shown.length, 1, `one admin password printed:\n${stdout}`);
  return shown[0];
}

/** The test server every block that needs a running one shares, with the docs' names in it. */
interface Shared {
  home: TestHome;
  server: ServerProcess;
  token: string;
  place: Place;
}

async function startShared(): Promise<Shared> {
  const home = await makeTestHome({ metrics: { token: METRICS_TOKEN } });
  try {
    await layOut(home.dir);
    const init = await runCli(home, ["admin", "init"]);
    assert.equal(init.code, 0, init.stderr);
    const server = await startServerProcess(home, SERVE_MS);
    try {
      const admin = new AdminClient(`http://${server.addr}`);
      await admin.login(shownPassword(init.stdout));
      for (const [id, password] of [["e_1", PW], ["e_2", PW], ["door-1", DOOR_PASSWORD]]) {
        const r = await admin.post("/api/admin/endpoints", { id, login_password: password });
        assert.equal(r.status, 200, r.text);
      }
      const reg = await admin.put("/api/admin/registration", {
        enabled: true,
        code: REGISTRATION_CODE,
      });
      assert.equal(reg.status, 200, reg.text);
      const created = await admin.post("/api/admin/tokens", { name: "docs" });
      assert.equal(created.status, 200, created.text);
      const token = created.data.token as string;
      const place: Place = {
        dir: home.dir,
        env: commandEnv({ NIXMSG_TOKEN: token, TOKEN: METRICS_TOKEN }),
        localize: (c) =>
          c.replaceAll("127.0.0.1:7443", server.addr).replaceAll("-p 7443", `-p ${server.port}`)
            .replaceAll(":7443", `:${server.port}`).replaceAll("/srv/backups/", "backups/"),
      };
      await Deno.mkdir(join(home.dir, "backups"));
      return { home, server, token, place };
    } catch (err) {
      await server.stop();
      throw err;
    }
  } catch (err) {
    await home.cleanup();
    throw err;
  }
}

/** A directory of its own for a block that sets up or starts a server. */
async function freshPlace(block: DocBlock): Promise<{ place: Place; home: TestHome }> {
  const home = await makeTestHome({ data_dir: "./data" });
  await layOut(home.dir);
  // A block that names the address itself writes its own config.yaml (quickstart --listen).
  if (block.commands.some((c) => c.text.includes("--listen"))) await Deno.remove(home.configPath);
  const place: Place = {
    dir: home.dir,
    env: commandEnv({}),
    localize: (c) =>
      c.replaceAll("127.0.0.1:8080", "127.0.0.1:0").replaceAll("127.0.0.1:7443", "127.0.0.1:0"),
  };
  return { place, home };
}

const SERVING = /^\.\/nixmsg (serve|quickstart)\b/;
const SETS_UP = /^\.\/nixmsg (serve|quickstart|admin init)\b|config\.yaml/;

function runnable(block: DocBlock): DocCommand[] {
  return block.notRun === null ? block.commands.filter((c) => c.notRun === null) : [];
}

/** Checks beyond the exit code and the shown output, for commands whose effect is the point. */
const EFFECTS: { applies: RegExp; check(shared: Shared, out: Outcome): Promise<void> }[] = [
  {
    // README "First steps": the message sent to a receiver that never connected is kept for it.
    applies: /\/api\/admin\/endpoints\/e_1\/messages/,
    async check(shared, out) {
      const id = JSON.parse(out.stdout).data.id as string;
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/, "a generated UUIDv7");
      const { client } = await online(`ws://${shared.server.addr}/mqtt`, "e_2", PW);
      try {
        const msg = await waitMsg(client, id);
        assert.equal(msg.from, "e_1");
        assert.equal((msg.body as Record<string, unknown>).data, "hello");
        assert.equal((await client.request({ type: "ack", from: "e_1", id })).ok, true);
        const program = new AdminClient(`http://${shared.server.addr}`, shared.token);
        const status = await program.get(`/api/admin/endpoints/e_1/messages/${id}`);
        assert.equal(status.status, 200, status.text);
        assert.deepEqual(status.data.items, [{
          endpoint_id: "e_2",
          state: "accepted",
          reason: "",
        }]);
      } finally {
        await client.close();
      }
    },
  },
  {
    applies: /^\.\/nixmsg backup --out/,
    async check(shared) {
      const dir = join(shared.home.dir, "backups");
      const files = [...Deno.readDirSync(dir)].map((e) => e.name);
      assert.equal(files.length, 1, files.join(", "));
      const head = (await Deno.readFile(join(dir, files[0]))).subarray(0, 16);
      assert.equal(new TextDecoder().decode(head), "SQLite format 3\0");
    },
  },
];

Deno.test("every runnable shell command of the docs works against a server started with the launcher", async (t) => {
  const { blocks } = await docs();
  const shared = await startShared();
  try {
    for (const block of blocks) {
      const commands = runnable(block);
      if (commands.length === 0) continue;
      await t.step(`${block.file}:${block.line}`, async () => {
        const fresh = commands.some((c) => SETS_UP.test(c.text)) ? await freshPlace(block) : null;
        const place = fresh?.place ?? shared.place;
        try {
          for (const command of commands) {
            const text = place.localize(command.text);
            assert.ok(
              !text.includes("7443"),
              `${block.file}:${command.line}: no test address for ${text}`,
            );
            const out = SERVING.test(text) ? await runServing(place, text) : await run(place, text);
            const where = `${block.file}:${command.line}: ${text}\n${out.stdout}\n${out.stderr}`;
            assert.equal(out.code, 0, where);
            if (command.expected.length > 0 && !SERVING.test(text)) {
              const lines = out.stdout.trimEnd().split("\n");
              assert.equal(lines.length, command.expected.length, where);
              command.expected.forEach((shown, i) => {
                assert.ok(matchesShown(shown, lines[i]), `${where}\nshown: ${shown}`);
              });
            }
            if (/quickstart|admin init/.test(text)) shownPassword(out.stdout);
            for (const effect of EFFECTS) {
              if (effect.applies.test(text)) await effect.check(shared, out);
            }
          }
        } finally {
          await fresh?.home.cleanup();
        }
      });
    }
  } finally {
    await shared.server.stop();
    await shared.home.cleanup();
  }
});
