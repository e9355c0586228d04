// The `./nixmsg` launcher of a checkout builds the admin console when web/dist is missing, and
// again when a file under web/ is newer than the last build (a `git pull` that changed the
// console would otherwise keep serving the old one). Run against a copy of the script in a temp
// tree, with a stand-in `deno` on PATH that records its arguments.
import assert from "node:assert/strict";
import { join } from "node:path";

const LAUNCHER = new URL("../nixmsg", import.meta.url).pathname;
const PERMISSIONS = new URL("../server/deno_permissions.txt", import.meta.url).pathname;

const FAKE_DENO = `#!/usr/bin/env bash
echo "$*" >> "$DENO_LOG"
if [ "$1" = "task" ]; then
  [ -n "\${FAIL_BUILD:-}" ] && exit 1
  mkdir -p web/dist && echo built > web/dist/index.html
fi
exit 0
`;

interface Tree {
  dir: string;
  run(
    args: string[],
    env?: Record<string, string>,
  ): Promise<{ code: number; stderr: string; calls: string[] }>;
  setTime(path: string, seconds: number): Promise<void>;
}

async function tree(): Promise<Tree> {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-launcher-" });
  await Deno.copyFile(LAUNCHER, join(dir, "nixmsg"));
  await Deno.mkdir(join(dir, "server"));
  await Deno.copyFile(PERMISSIONS, join(dir, "server", "deno_permissions.txt"));
  await Deno.mkdir(join(dir, "bin"));
  await Deno.writeTextFile(join(dir, "bin", "deno"), FAKE_DENO, { mode: 0o755 });
  await Deno.mkdir(join(dir, "web", "src"), { recursive: true });
  await Deno.mkdir(join(dir, "web", "node_modules"), { recursive: true });
  await Deno.writeTextFile(join(dir, "web", "src", "App.vue"), "<template />\n");
  await Deno.writeTextFile(join(dir, "web", "node_modules", "dep.js"), "\n");
  const log = join(dir, "calls.log");
  return {
    dir,
    async run(args, env = {}) {
      await Deno.writeTextFile(log, "");
      const out = await new Deno.Command("bash", {
        args: [join(dir, "nixmsg"), ...args],
        env: { PATH: `${join(dir, "bin")}:/usr/bin:/bin`, DENO_LOG: log, ...env },
        clearEnv: true,
        stdout: "piped",
        stderr: "piped",
      }).output();
      const calls = (await Deno.readTextFile(log)).split("\n").filter(Boolean);
      return { code: out.code, stderr: new TextDecoder().decode(out.stderr), calls };
    },
    async setTime(path, seconds) {
      await Deno.utime(join(dir, path), seconds, seconds);
    },
  };
}

const T = 1_800_000_000;

/** An earlier build in web/dist and a source edited after it. */
async function staleBuild(t: Tree): Promise<void> {
  await Deno.mkdir(join(t.dir, "web", "dist"));
  await Deno.writeTextFile(join(t.dir, "web", "dist", "index.html"), "old\n");
  await t.setTime("web/dist/index.html", T);
  await t.setTime("web/src/App.vue", T + 100);
}

Deno.test("./nixmsg builds the console once when web/dist is missing", async () => {
  const t = await tree();
  try {
    const first = await t.run(["serve"]);
    assert.equal(first.code, 0);
    assert.match(first.stderr, /building the admin console into web\/dist \(one time\)/);
    assert.equal(first.calls[0], "task --quiet build:web");
    assert.match(first.calls[1], /^run .*server\/main\.ts serve$/);
    // The build is newer than every source now: no second build.
    await t.setTime("web/src/App.vue", T - 100);
    await t.setTime("web/dist/index.html", T);
    const second = await t.run(["serve"]);
    assert.equal(second.stderr, "");
    assert.equal(second.calls.length, 1);
    assert.match(second.calls[0], /^run .*server\/main\.ts serve$/);
  } finally {
    await Deno.remove(t.dir, { recursive: true });
  }
});

Deno.test("./nixmsg rebuilds the console when a source under web/ is newer than the build", async () => {
  const t = await tree();
  try {
    await staleBuild(t);
    // node_modules is not a source: touching it alone would not rebuild.
    await t.setTime("web/node_modules/dep.js", T + 200);
    const r = await t.run(["quickstart"]);
    assert.equal(r.code, 0);
    assert.match(r.stderr, /console sources changed since the last build; rebuilding web\/dist/);
    assert.equal(r.calls[0], "task --quiet build:web");
    assert.equal(await Deno.readTextFile(join(t.dir, "web", "dist", "index.html")), "built\n");

    await t.setTime("web/src/App.vue", T - 100);
    await t.setTime("web/dist/index.html", T);
    const quiet = await t.run(["quickstart"]);
    assert.equal(quiet.calls.filter((c) => c.startsWith("task")).length, 0);
  } finally {
    await Deno.remove(t.dir, { recursive: true });
  }
});

Deno.test("./nixmsg serves the previous console when a rebuild fails, and never builds for other commands", async () => {
  const t = await tree();
  try {
    await staleBuild(t);
    const failed = await t.run(["serve"], { FAIL_BUILD: "1" });
    assert.equal(failed.code, 0);
    assert.match(
      failed.stderr,
      /the console build failed; the server still runs with the previous build/,
    );
    assert.match(failed.calls.at(-1) ?? "", /^run .*server\/main\.ts serve$/);

    const version = await t.run(["version"]);
    assert.deepEqual(version.calls.map((c) => c.split(" ")[0]), ["run"]);
    assert.equal(version.stderr, "");
  } finally {
    await Deno.remove(t.dir, { recursive: true });
  }
});
