import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { cliArgs, makeTestHome, runCli, startServerProcess } from "./helpers/server_process.ts";

Deno.test("admin init prints a 20-character password once and refuses a second time", async () => {
  const home = await makeTestHome();
  try {
    const first = await runCli(home, ["admin", "init"]);
    assert.equal(first.code, 0, first.stderr);
    const m = first.stdout.match(/password: (\S+)/);
    assert.ok(m, first.stdout);
    assert.equal(m[1].length, 20);
    const second = await runCli(home, ["admin", "init"]);
    assert.equal(second.code, 1);
    assert.match(second.stderr, /already set/);
    assert.doesNotMatch(second.stdout + second.stderr, new RegExp(m[1]));
    const db = new DatabaseSync(join(home.dataDir, "nixmsg.db"));
    const row = db.prepare("SELECT value FROM settings WHERE key = 'admin_password_hash'").get() as
      | { value: string }
      | undefined;
    db.close();
    assert.match(row?.value ?? "", /^\$argon2id\$/);
  } finally {
    await home.cleanup();
  }
});

Deno.test("admin set-password refuses a password shorter than 12 characters", async () => {
  const home = await makeTestHome();
  try {
    const short = await runCli(home, ["admin", "set-password"], "short-pw\n");
    assert.equal(short.code, 1);
    assert.match(short.stderr, /at least 12/);
    const ok = await runCli(home, ["admin", "set-password"], "a-long-enough-password\n");
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /changed/);
    assert.doesNotMatch(ok.stdout, /a-long-enough-password/);
  } finally {
    await home.cleanup();
  }
});

Deno.test("serve refuses to start before admin init and says what to run", async () => {
  const home = await makeTestHome();
  try {
    const res = await runCli(home, ["serve"]);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /nixmsg admin init/);
  } finally {
    await home.cleanup();
  }
});

Deno.test("check-config names the bad key and exits 1", async () => {
  const home = await makeTestHome({ limits: { max_body_bytes: 300000 } });
  try {
    const res = await runCli(home, ["check-config"]);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /limits\.max_body_bytes/);
    const serve = await runCli(home, ["serve"]);
    assert.equal(serve.code, 1);
    assert.match(serve.stderr, /limits\.max_body_bytes/);
  } finally {
    await home.cleanup();
  }
});

Deno.test("every command answers --help with its usage", async () => {
  const home = await makeTestHome();
  try {
    for (
      const cmd of [
        ["serve"],
        ["quickstart"],
        ["admin", "init"],
        ["admin", "set-password"],
        ["backup"],
        ["check-config"],
        ["healthcheck"],
        ["version"],
      ]
    ) {
      const res = await runCli(home, [...cmd, "--help"]);
      assert.equal(res.code, 0, `${cmd.join(" ")}: ${res.stderr}`);
      assert.match(res.stdout, new RegExp(`Usage: nixmsg ${cmd.join(" ")}`));
    }
    const top = await runCli(home, ["--help"]);
    assert.equal(top.code, 0);
    assert.match(top.stdout, /admin set-password/);
    const unknown = await runCli(home, ["frobnicate"]);
    assert.equal(unknown.code, 2);
    const version = await runCli(home, ["version"]);
    assert.match(version.stdout, /^nixmsg \d+\.\d+\.\d+/);
  } finally {
    await home.cleanup();
  }
});

Deno.test("backup while serving gives a database that passes integrity_check; healthcheck follows the server", async () => {
  const home = await makeTestHome();
  try {
    assert.equal((await runCli(home, ["admin", "init"])).code, 0);
    const down = await runCli(home, ["healthcheck"]);
    assert.equal(down.code, 1, "healthcheck must fail while nothing listens");
    const server = await startServerProcess(home);
    try {
      const health = await runCli(home, ["healthcheck"]);
      assert.equal(health.code, 0, health.stderr);
      const out = join(home.dir, "copy.db");
      const res = await runCli(home, ["backup", "--out", out]);
      assert.equal(res.code, 0, res.stderr);
      const copy = new DatabaseSync(out, { readOnly: true });
      const check = copy.prepare("PRAGMA integrity_check").get() as Record<string, string>;
      const hash = copy.prepare("SELECT value FROM settings WHERE key = 'admin_password_hash'")
        .get() as { value: string } | undefined;
      copy.close();
      assert.equal(Object.values(check)[0], "ok");
      assert.ok(hash?.value.startsWith("$argon2id$"));
      const again = await runCli(home, ["backup", "--out", out]);
      assert.equal(again.code, 1, "an existing backup file must not be overwritten");
    } finally {
      assert.equal(await server.stop(), 0);
    }
  } finally {
    await home.cleanup();
  }
});

Deno.test("a SIGTERM during start-up still ends serve in order, with exit code 0", async () => {
  const home = await makeTestHome();
  try {
    assert.equal((await runCli(home, ["admin", "init"])).code, 0);
    const child = new Deno.Command(Deno.execPath(), {
      args: cliArgs(home, ["serve"]),
      env: home.env,
      cwd: home.dir,
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const lines: string[] = [];
    let signalled = false;
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      lines.push(...chunk.split("\n").filter((l) => l !== ""));
      // The first log line comes from start-up, before the server is serving.
      if (!signalled && lines.length > 0) {
        signalled = true;
        child.kill("SIGTERM");
      }
    }
    const status = await child.status;
    assert.equal(status.code, 0, lines.join("\n"));
    assert.ok(lines.some((l) => l.includes('"nixmsg stopped"')), lines.join("\n"));
  } finally {
    await home.cleanup();
  }
});
