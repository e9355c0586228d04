// One permission set (issue 27 item 1): the server runs under the flags of
// server/deno_permissions.txt wherever it is started, by the launcher, the compile, the release
// and every test. A test that started it with more (`--allow-all`) would hide what fails for users.
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { DENO_PERMISSIONS, parseDenoPermissions } from "../scripts/deno_permissions.ts";
import { compileArgs } from "../scripts/compile.ts";
import {
  cliArgs,
  LAUNCHER,
  makeTestHome,
  runCli,
  shippedDenoArgs,
  startServerProcess,
} from "./helpers/server_process.ts";

const ROOT = new URL("../", import.meta.url).pathname;
/** This file holds flags as scan fixtures; it is the checker, not a spawn site. */
const SELF = new URL(import.meta.url).pathname;

/** Written next to a spawn line that is not the shipped command, with the reason after it. */
const MARKER = "permissions: not the shipped command:";
/** How many lines above a flag its marker may stand (a multi-line argument list). */
const MARKER_WINDOW = 8;
const SCANNED = ["server", "tests", "sdk", "scripts", ".ci"];
const SKIPPED_DIRS = new Set([
  "node_modules",
  "dist",
  "build",
  "target",
  ".venv",
  "venv",
  "__pycache__",
  ".gradle",
  ".pytest_cache",
]);
const SOURCE = /\.(ts|mts|mjs|js|py|go|java|sh|kts)$/;
/** A permission flag on a code line: `--allow-…`, `--deny-…` or `-A` as its own word. */
const FLAG = /(--allow-[a-z]|--deny-[a-z]|(^|["'`\s,[(])-A(["'`\s,)\]]|$))/;
const COMMENT_LINE = /^\s*(\/\/|#|\*|\/\*)/;

function* sourceFiles(dir: string): Generator<string> {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch {
    return;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory && !SKIPPED_DIRS.has(e.name)) yield* sourceFiles(path);
    else if (e.isFile && SOURCE.test(e.name)) yield path;
  }
}

/** Code lines with a permission flag and no marker within {@link MARKER_WINDOW} lines above. */
function unmarkedFlags(text: string): number[] {
  const lines = text.split("\n");
  const found: number[] = [];
  lines.forEach((line, i) => {
    if (COMMENT_LINE.test(line) || !FLAG.test(line)) return;
    const above = lines.slice(Math.max(0, i - MARKER_WINDOW), i + 1);
    if (!above.some((l) => l.includes(MARKER))) found.push(i + 1);
  });
  return found;
}

/** The permission flags of a command line. */
function permissionFlags(argv: readonly string[]): string[] {
  return argv.filter((a) => /^(-A|--allow-.*|--deny-.*|--no-prompt|--v8-flags=.*)$/.test(a));
}

/** The command line of a running process (Linux). */
async function cmdline(pid: number): Promise<string[]> {
  return (await Deno.readTextFile(`/proc/${pid}/cmdline`)).split("\0").filter((a) => a !== "");
}

Deno.test("the shipped permissions are a list of Deno flags without --allow-all", () => {
  assert.ok(DENO_PERMISSIONS.length > 0);
  assert.ok(!DENO_PERMISSIONS.includes("--allow-all") && !DENO_PERMISSIONS.includes("-A"));
  assert.ok(!DENO_PERMISSIONS.some((f) => f.startsWith("--allow-run")), "the server runs nothing");
  assert.deepEqual(parseDenoPermissions("# c\n\n--allow-net\n  --allow-env  \n"), [
    "--allow-net",
    "--allow-env",
  ]);
  assert.throws(() => parseDenoPermissions("allow-net\n"), /Not a Deno flag/);
});

Deno.test("no test, harness or script spawns deno with its own permissions unless it says why", () => {
  const offenders: string[] = [];
  let scanned = 0;
  for (const top of SCANNED) {
    for (const file of sourceFiles(join(ROOT, top))) {
      if (file === SELF) continue;
      scanned++;
      for (const line of unmarkedFlags(Deno.readTextFileSync(file))) {
        offenders.push(`${relative(ROOT, file)}:${line}`);
      }
    }
  }
  assert.ok(scanned > 100, `scanned only ${scanned} files`);
  assert.deepEqual(
    offenders,
    [],
    `${offenders.length} spawn lines set their own permissions; use shippedDenoArgs() or ` +
      `DENO_PERMISSIONS, or write "${MARKER} <reason>" above a command that is not the server`,
  );
});

Deno.test("the scan finds an unmarked flag and accepts a marked one", () => {
  assert.deepEqual(unmarkedFlags(`a\nspawn(["run", "--allow-all", "server/main.ts"]);\n`), [2]);
  assert.deepEqual(unmarkedFlags(`args: ["run", "-A", x],`), [1]);
  assert.deepEqual(unmarkedFlags(`// deno run -A tests/bench/rtt.ts\n"grep", "-A3"`), []);
  assert.deepEqual(unmarkedFlags(`// ${MARKER} a peer\nspawn(["run",\n  "--allow-all"]);`), []);
});

Deno.test("the helpers, the compile task and the release build pass exactly the shipped flags", async () => {
  const home = await makeTestHome();
  try {
    assert.deepEqual(permissionFlags(cliArgs(home, ["serve"])), [...DENO_PERMISSIONS]);
    assert.deepEqual(permissionFlags(shippedDenoArgs(ROOT, "x.ts", [])), [...DENO_PERMISSIONS]);
    assert.deepEqual(permissionFlags(compileArgs("dist/nixmsg")), [...DENO_PERMISSIONS]);
    const tasks = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))).tasks;
    assert.match(tasks.compile, /scripts\/compile\.ts$/);
    const release = await Deno.readTextFile(join(ROOT, "scripts/release.ts"));
    assert.match(release, /\.\.\.DENO_PERMISSIONS,/);
    // The image runs `deno task release`, which reads the list from server/ via scripts/.
    const dockerfile = await Deno.readTextFile(join(ROOT, "deploy/Dockerfile"));
    assert.match(dockerfile, /^COPY scripts \.\/scripts$/m);
    assert.match(dockerfile, /^COPY server \.\/server$/m);
  } finally {
    await home.cleanup();
  }
});

Deno.test({
  name: "a server started by the launcher or the test helpers runs with exactly the shipped flags",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const home = await makeTestHome();
    try {
      const init = await runCli(home, ["admin", "init"], undefined, { launcher: true });
      assert.equal(init.code, 0, init.stderr);
      for (
        const opts of [
          { launcher: true },
          {},
          { entry: join(ROOT, "tests/helpers/serve_test_pool.ts") },
        ]
      ) {
        const server = await startServerProcess(home, 60_000, opts);
        try {
          const argv = await cmdline(server.pid);
          assert.deepEqual(permissionFlags(argv), [...DENO_PERMISSIONS], argv.join(" "));
        } finally {
          assert.equal(await server.stop(), 0);
        }
      }
    } finally {
      await home.cleanup();
    }
  },
});

Deno.test("the launcher reads its flags from server/deno_permissions.txt", async () => {
  const text = await Deno.readTextFile(LAUNCHER);
  assert.match(text, /server\/deno_permissions\.txt/);
  assert.doesNotMatch(text.replace(/^\s*#.*$/gm, ""), /--allow-/);
});
