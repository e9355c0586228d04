// deno task release (issue 17): each target's argon2 addon is installed and checked, the start-up
// self-check names the addon when it cannot load, and a tree moved elsewhere still serves.
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  addonPath,
  checkAddon,
  installFor,
  parseReleaseArgs,
  release,
  ReleaseError,
  stageSources,
  TARGETS,
} from "../scripts/release.ts";
import { checkAddonBinary, hostAddonPackage } from "../server/auth/argon2_addon.ts";
import { argon2SelfCheck } from "../server/cli/self_check.ts";
import { PasswordPool } from "../server/auth/password_pool.ts";
import { TEST_POOL_PARAMS } from "./helpers/test_server.ts";
import { makeTestHome, runCli, startServerProcess } from "./helpers/server_process.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const HOST = TARGETS.find((t) =>
  t.name === (Deno.build.arch === "aarch64" ? "linux-arm64" : "linux-x64")
)!;

Deno.test("release --check-only installs and checks the argon2 addon of all three targets", async () => {
  const out = await Deno.makeTempDir({ prefix: "nixmsg-release-" });
  try {
    const lines: string[] = [];
    const built = await release({
      targets: TARGETS,
      checkOnly: true,
      outDir: out,
      log: (l) => lines.push(l),
    });
    assert.deepEqual(built, [], "--check-only compiles nothing");
    for (const t of TARGETS) {
      const ok = lines.find((l) => l.includes(t.name) && l.includes("argon2 addon OK"));
      assert.ok(ok, `${t.name}: ${lines.join("\n")}`);
      const bytes = await Deno.readFile(addonPath(join(out, "stage", t.name), t));
      assert.equal(checkAddonBinary(bytes, t), null);
    }
    assert.match(lines.join("\n"), /argon2-win32-x64-msvc/);
    assert.match(lines.join("\n"), /argon2-linux-arm64-gnu/);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("the addon check refuses a missing addon and one built for another machine", async () => {
  const out = await Deno.makeTempDir({ prefix: "nixmsg-release-" });
  try {
    const stage = join(out, "x64");
    const x64 = TARGETS.find((t) => t.name === "linux-x64")!;
    const arm = TARGETS.find((t) => t.name === "linux-arm64")!;
    const win = TARGETS.find((t) => t.name === "windows-x64")!;
    await stageSources(stage, false);
    await installFor(stage, x64);
    await checkAddon(stage, x64);
    await assert.rejects(
      checkAddon(stage, arm),
      (e: Error) =>
        e instanceof ReleaseError && /argon2-linux-arm64-gnu is not installed/.test(e.message),
    );
    // An x64 library where the arm64 one belongs: the ELF machine gives it away.
    const wrong = addonPath(stage, arm);
    await Deno.mkdir(join(wrong, ".."), { recursive: true });
    await Deno.copyFile(addonPath(stage, x64), wrong);
    await assert.rejects(checkAddon(stage, arm), /built for machine 0x3e, expected 0xb7/);
    const winPath = addonPath(stage, win);
    await Deno.mkdir(join(winPath, ".."), { recursive: true });
    await Deno.copyFile(addonPath(stage, x64), winPath);
    await assert.rejects(checkAddon(stage, win), /an ELF file, expected a PE file/);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("release arguments name targets by our name or by Docker platform", () => {
  assert.deepEqual(parseReleaseArgs(["--target", "linux/arm64"]).targets.map((t) => t.name), [
    "linux-arm64",
  ]);
  assert.equal(parseReleaseArgs(["--check-only"]).targets.length, 3);
  assert.throws(() => parseReleaseArgs(["--target", "plan9-mips"]), /Unknown target plan9-mips/);
});

Deno.test("the argon2 self-check passes with a working pool", async () => {
  assert.equal(
    await argon2SelfCheck(new PasswordPool({ size: 1, params: TEST_POOL_PARAMS })),
    null,
  );
});

Deno.test("serve stops with a message naming the addon when the argon2 addon cannot load", async () => {
  const out = await Deno.makeTempDir({ prefix: "nixmsg-release-" });
  const home = await makeTestHome();
  try {
    const stage = join(out, "tree");
    await stageSources(stage, false);
    await installFor(stage, HOST);
    const config = JSON.parse(await Deno.readTextFile(join(stage, "deno.json")));
    config.nodeModulesDir = "manual";
    await Deno.writeTextFile(join(stage, "deno.json"), JSON.stringify(config));
    home.root = stage;
    assert.equal((await runCli(home, ["admin", "init"])).code, 0, "the addon works before");
    await Deno.remove(addonPath(stage, HOST));
    for (const args of [["serve"], ["version"]]) {
      const r = await runCli(home, args);
      assert.equal(r.code, 1, `${args}: ${r.stdout}`);
      assert.match(
        r.stderr,
        new RegExp(`^Cannot start: the argon2 native addon ${hostAddonPackage()}`),
      );
      assert.doesNotMatch(r.stderr, /Uncaught|at Object\./, "no stack trace");
    }
  } finally {
    await home.cleanup();
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("a copy of the tree run from another directory finds its console, workers and migrations", async () => {
  const out = await Deno.makeTempDir({ prefix: "nixmsg-relocated-" });
  const home = await makeTestHome();
  try {
    const tree = join(out, "elsewhere");
    await stageSources(tree, false);
    // The console build is optional in a test run; a marker page shows which tree served it.
    const marker = `<!doctype html><title>relocated ${crypto.randomUUID()}</title>`;
    await Deno.mkdir(join(tree, "web/dist"), { recursive: true });
    await Deno.writeTextFile(join(tree, "web/dist/index.html"), marker);
    home.root = tree;
    const init = await runCli(home, ["admin", "init"]);
    assert.equal(init.code, 0, init.stderr);
    const password = /password: (\S+)/.exec(init.stdout)?.[1];
    assert.ok(password);
    const server = await startServerProcess(home);
    try {
      const base = `http://${server.addr}`;
      assert.equal((await fetch(`${base}/healthz`).then((r) => r.text())).includes("true"), true);
      const page = await fetch(`${base}/some/console/route`);
      assert.equal(page.status, 200);
      assert.equal(await page.text(), marker, "the console comes from the relocated tree");
      const login = await fetch(`${base}/api/admin/login`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-nixmsg-request": "1" },
        body: JSON.stringify({ username: "admin", password }),
      });
      assert.equal(login.status, 200, await login.text());
      const ready = await fetch(`${base}/readyz`);
      assert.equal(ready.status, 200, await ready.text());
    } finally {
      assert.equal(await server.stop(), 0);
    }
  } finally {
    await home.cleanup();
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("version prints the Deno, V8, SQLite and argon2 backend versions", async () => {
  const home = await makeTestHome();
  try {
    const r = await runCli(home, ["version"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^nixmsg \d+\.\d+\.\d+$/m);
    assert.match(r.stdout, new RegExp(`^deno ${Deno.version.deno.replaceAll(".", "\\.")}$`, "m"));
    assert.match(r.stdout, /^v8 \d+\./m);
    assert.match(r.stdout, /^sqlite 3\.\d+\.\d+$/m);
    assert.match(
      r.stdout,
      new RegExp(
        `^argon2 @node-rs/argon2 2\\.2\\.1 \\(native addon ${hostAddonPackage()}\\)$`,
        "m",
      ),
    );
    const pinned =
      JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))).imports["@node-rs/argon2"];
    assert.equal(pinned, "npm:@node-rs/argon2@2.2.1", "ARGON2_VERSION follows deno.json");
  } finally {
    await home.cleanup();
  }
});
