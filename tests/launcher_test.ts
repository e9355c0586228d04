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

/** A copy of the launcher in a temp tree whose PATH has no deno, only `npm` doing `npmScript`. */
async function installTree(
  npmScript: string,
): Promise<{ dir: string; run(): Promise<Deno.CommandOutput> }> {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-launcher-install-" });
  await Deno.copyFile(LAUNCHER, join(dir, "nixmsg"));
  await Deno.mkdir(join(dir, "server"));
  await Deno.copyFile(PERMISSIONS, join(dir, "server", "deno_permissions.txt"));
  await Deno.mkdir(join(dir, "bin"));
  await Deno.writeTextFile(join(dir, "bin", "npm"), `#!/usr/bin/env bash\n${npmScript}\n`, {
    mode: 0o755,
  });
  return {
    dir,
    run: () =>
      new Deno.Command("bash", {
        args: [join(dir, "nixmsg"), "check-config"],
        env: { PATH: `${join(dir, "bin")}:/usr/bin:/bin`, NIXMSG_INSTALL_TIMEOUT: "2" },
        clearEnv: true,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output(),
  };
}

Deno.test("./nixmsg gives up installing Deno within its time bound when npm hangs, and says what to do", async () => {
  // No network: npm waits on connections that never answer.
  const t = await installTree("exec sleep 600");
  try {
    const started = Date.now();
    const out = await t.run();
    const seconds = (Date.now() - started) / 1000;
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 1, stderr);
    // The bound is 2 s, plus at most 5 s for a kill after the TERM.
    assert.ok(seconds < 30, `took ${seconds} s`);
    assert.match(
      stderr,
      /could not install Deno 2\.9\.6 from the npm registry \(no answer within 2 s\)/,
    );
    assert.match(stderr, /put\s+(nixmsg: )?it on PATH/);
  } finally {
    await Deno.remove(t.dir, { recursive: true });
  }
});

Deno.test("./nixmsg says so when npm cannot install Deno", async () => {
  const t = await installTree('echo "npm ERR! code ENOTFOUND" >&2; exit 1');
  try {
    const out = await t.run();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 1, stderr);
    assert.match(stderr, /npm ERR! code ENOTFOUND/);
    assert.match(stderr, /could not install Deno 2\.9\.6 .*\(npm install exited with status 1\)/);
  } finally {
    await Deno.remove(t.dir, { recursive: true });
  }
});

const HAS_UNSHARE = Deno.uid() === 0 && (() => {
  try {
    return Deno.statSync("/usr/bin/unshare").isFile && Deno.statSync("/usr/bin/npm").isFile;
  } catch {
    return false;
  }
})();

Deno.test({
  name: "./nixmsg fails with its message, not a hang, when real npm has no network",
  ignore: !HAS_UNSHARE,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "nixmsg-launcher-offline-" });
    try {
      await Deno.copyFile(LAUNCHER, join(dir, "nixmsg"));
      await Deno.mkdir(join(dir, "server"));
      await Deno.copyFile(PERMISSIONS, join(dir, "server", "deno_permissions.txt"));
      // A network namespace with no interface up, and an empty npm cache that cannot answer.
      const out = await new Deno.Command("unshare", {
        args: ["-n", "bash", join(dir, "nixmsg"), "check-config"],
        env: {
          PATH: "/usr/bin:/bin",
          HOME: dir,
          npm_config_cache: join(dir, "npm-cache"),
          NIXMSG_INSTALL_TIMEOUT: "60",
        },
        clearEnv: true,
        cwd: dir,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 1, stderr);
      assert.match(stderr, /could not install Deno 2\.9\.6 from the npm registry/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
