// The `store` configuration through the real CLI (issue 29): check-config names a bad database
// URL without its password, from the file or from NIXMSG_POSTGRES_URL; backup refuses PostgreSQL;
// store copy moves a stopped database.
import assert from "node:assert/strict";
import { join } from "node:path";
import { makeTestHome, runCli, startServerProcess } from "./helpers/server_process.ts";
import { dbPath } from "../server/app/paths.ts";
import { openDb } from "../server/store/db.ts";
import { createEndpoint } from "../server/store/ops/endpoints.ts";

Deno.test("check-config names a store URL that is not postgres://, never with its password", async () => {
  const home = await makeTestHome({
    store: { kind: "postgres", postgres_url: "mysql://root:s3cret-pw@db:3306/nixmsg" },
  });
  try {
    const res = await runCli(home, ["check-config"]);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /store\.postgres_url: mysql:\/\/root:\*\*\*@db:3306\/nixmsg is not/);
    assert.ok(!(res.stdout + res.stderr).includes("s3cret-pw"), res.stderr);
  } finally {
    await home.cleanup();
  }
});

Deno.test("check-config checks NIXMSG_POSTGRES_URL under its own name and accepts a good one", async () => {
  const home = await makeTestHome({ store: { kind: "postgres" } });
  try {
    const missing = await runCli(home, ["check-config"]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /store\.postgres_url: must be set when store\.kind is postgres/);
    home.env.NIXMSG_POSTGRES_URL = "http://u:s3cret-pw@db/nixmsg";
    const bad = await runCli(home, ["check-config"]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /store\.postgres_url \(from NIXMSG_POSTGRES_URL\)/);
    assert.ok(!bad.stderr.includes("s3cret-pw"), bad.stderr);
    home.env.NIXMSG_POSTGRES_URL = "postgresql://u:s3cret-pw@db/nixmsg";
    const good = await runCli(home, ["check-config"]);
    assert.equal(good.code, 0, good.stderr);
    assert.match(good.stdout, /: OK/);
  } finally {
    await home.cleanup();
  }
});

Deno.test("backup with store.kind postgres is refused with a pointer to pg_dump", async () => {
  const home = await makeTestHome({
    store: { kind: "postgres", postgres_url: "postgres://u:s3cret-pw@127.0.0.1:1/nixmsg" },
  });
  try {
    const res = await runCli(home, ["backup", "--out", `${home.dir}/copy.db`]);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /Backup refused: .*pg_dump/);
    assert.ok(!(res.stdout + res.stderr).includes("s3cret-pw"));
  } finally {
    await home.cleanup();
  }
});

Deno.test("store copy moves the stopped database into a new file with every count equal, and refuses while serving", async () => {
  const home = await makeTestHome();
  try {
    assert.equal((await runCli(home, ["admin", "init"])).code, 0);
    const path = dbPath(home.dataDir);
    const db = openDb(path);
    try {
      db.exec("BEGIN");
      for (let i = 0; i < 50; i++) {
        createEndpoint(db, {
          id: `e${i}`,
          name: `e${i}`,
          remark: "",
          source: "admin",
          loginHash: "x",
          talkHash: null,
          defaultDelayMs: 0,
        }, Date.now());
      }
      db.exec("COMMIT");
    } finally {
      db.close();
    }
    const out = join(home.dir, "copy.db");
    const res = await runCli(home, ["store", "copy", "--to", `file:${out}`]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /endpoints: 0\/50/);
    assert.match(res.stdout, /endpoints: source 50, target 50\n/);
    assert.match(res.stdout, /settings: source 1, target 1\n/, "the admin password hash too");
    assert.match(res.stdout, /every count is equal/);
    const copy = openDb(out, { readOnly: true });
    try {
      const n = copy.prepare("SELECT count(*) AS n FROM endpoints").get() as { n: number };
      assert.equal(n.n, 50);
    } finally {
      copy.close();
    }
    const again = await runCli(home, ["store", "copy", "--to", `file:${out}`]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already exists/);

    const server = await startServerProcess(home);
    try {
      const busy = await runCli(home, ["store", "copy", "--to", `file:${out}.2`]);
      assert.equal(busy.code, 1);
      assert.match(busy.stderr, /Stop the server first/);
    } finally {
      await server.stop();
    }
  } finally {
    await home.cleanup();
  }
});
