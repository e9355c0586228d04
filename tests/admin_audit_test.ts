// The 操作日志 (spec 8, 14 M4; issue 32): an admin action and a CLI action on a running server both
// appear in GET /api/admin/audit, with filters and a cursor.
import assert from "node:assert/strict";
import { makeTestHome, runCli, startServerProcess } from "./helpers/server_process.ts";
import { AdminClient, adminSession } from "./helpers/admin.ts";

interface Row {
  id: number;
  at: number;
  actor: string;
  action: string;
  target: string;
  result: string;
  ip: string;
}

async function auditRows(admin: AdminClient, query = ""): Promise<Row[]> {
  const r = await admin.get(`/api/admin/audit${query}`);
  assert.equal(r.status, 200, r.text);
  return r.data.items as Row[];
}

/** Polls until `pred` holds: the row is written after the response, through the writer. */
async function waitRows(admin: AdminClient, query: string, pred: (rows: Row[]) => boolean) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const rows = await auditRows(admin, query);
    if (pred(rows)) return rows;
    if (Date.now() > deadline) throw new Error(`audit rows never matched: ${JSON.stringify(rows)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test("an admin request is an audit row with actor, action, target, result and address; filters and the cursor narrow the list", async () => {
  const { t, admin } = await adminSession();
  try {
    assert.equal((await admin.post("/api/admin/endpoints", { id: "door-1" })).status, 200);
    assert.equal((await admin.post("/api/admin/endpoints/door-1/kick")).status, 200);
    const missing = await admin.post("/api/admin/endpoints/nope/kick");
    assert.equal(missing.status, 404);
    const rows = await waitRows(admin, "?target=nope", (r) => r.length === 1);
    assert.deepEqual(
      { ...rows[0], id: 0, at: 0 },
      {
        id: 0,
        at: 0,
        actor: "admin",
        action: "endpoint.kick",
        target: "nope",
        result: "not_found",
        ip: "127.0.0.1",
      },
    );
    const kicks = await auditRows(admin, "?action=endpoint.kick");
    assert.deepEqual(kicks.map((r) => [r.target, r.result]), [["nope", "not_found"], [
      "door-1",
      "ok",
    ]]);
    const family = await auditRows(admin, "?action=endpoint&target=door-1");
    assert.deepEqual(family.map((r) => r.action), ["endpoint.kick", "endpoint.create"]);
    const all = await auditRows(admin);
    assert.ok(all.some((r) => r.action === "admin.login"), "the login is recorded too");
    for (const r of all) assert.ok(!("body" in r));

    const first = await admin.get("/api/admin/audit?limit=1");
    const next = first.data.next_cursor as string;
    assert.notEqual(next, "");
    const second = await admin.get(`/api/admin/audit?limit=1&cursor=${next}`);
    assert.ok((second.data.items as Row[])[0].id < (first.data.items as Row[])[0].id);

    const at = all[0].at;
    assert.equal((await auditRows(admin, `?from=${at + 1}`)).length, 0);
    assert.equal((await admin.get("/api/admin/audit?from=-1")).code, "bad_request");
    assert.equal((await admin.get("/api/admin/audit?cursor=x")).code, "bad_request");
    assert.equal((await admin.get("/api/admin/audit?limit=0")).code, "bad_request");
  } finally {
    await t.close();
  }
});

Deno.test("admin set-password and backup run by the CLI next to a running server are audit rows of actor cli", async () => {
  const home = await makeTestHome();
  try {
    const init = await runCli(home, ["admin", "init"]);
    assert.equal(init.code, 0, init.stderr);
    const server = await startServerProcess(home);
    try {
      const password = "a-new-admin-password-1";
      const changed = await runCli(home, ["admin", "set-password"], `${password}\n`);
      assert.equal(changed.code, 0, changed.stderr);
      const out = `${home.dir}/copy.db`;
      const backup = await runCli(home, ["backup", "--out", out]);
      assert.equal(backup.code, 0, backup.stderr);
      const admin = new AdminClient(`http://${server.addr}`);
      await admin.login(password);
      const rows = await auditRows(admin, "?actor=cli");
      assert.deepEqual(rows.map((r) => [r.action, r.target, r.result, r.ip]), [
        ["backup", out, "ok", ""],
        ["admin.set_password", "", "ok", ""],
        ["admin.init", "", "ok", ""],
      ]);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  } finally {
    await home.cleanup();
  }
});

Deno.test("an admin lockout is an audit row of actor system", async () => {
  const { t, admin } = await adminSession();
  try {
    const intruder = new AdminClient(t.adminUrl);
    let status = 0;
    for (let i = 0; i < 20 && status !== 429; i++) {
      status = (await intruder.post("/api/admin/login", {
        username: "admin",
        password: `wrong-password-${i}`,
      })).status;
    }
    assert.equal(status, 429, "the address locked");
    const rows = await waitRows(admin, "?actor=system", (r) => r.length > 0);
    assert.deepEqual(rows.map((r) => [r.action, r.target, r.result, r.ip]), [
      ["lockout.start", "127.0.0.1", "admin/ip", "127.0.0.1"],
    ]);
  } finally {
    await t.close();
  }
});

Deno.test("the hourly cleanup deletes audit rows older than audit_retention_days", async () => {
  const { t, admin } = await adminSession({ audit_retention_days: 0 });
  try {
    const [login] = await waitRows(admin, "?action=admin.login", (r) => r.length === 1);
    // With 0 days a row is past its retention once the clock has moved past its `at`.
    while (Date.now() <= login.at) await new Promise((r) => setTimeout(r, 1));
    const removed = await t.server.messaging.housekeeping();
    assert.ok(removed.audit >= 1, `deleted ${removed.audit}`);
    assert.deepEqual(await auditRows(admin, "?action=admin.login"), []);
  } finally {
    await t.close();
  }
});
