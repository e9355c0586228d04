// The `store` configuration through the real CLI (issue 29): check-config names a bad database
// URL without its password, from the file or from NIXMSG_POSTGRES_URL; backup refuses PostgreSQL.
import assert from "node:assert/strict";
import { makeTestHome, runCli } from "./helpers/server_process.ts";

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
