// Store failures over HTTP (spec 6.10 busy, 7.8): while writes fail or the database cannot be
// read, every route answers 503 `busy`, never 500, and logs one line without a stack trace.
import assert from "node:assert/strict";
import { copyFileSync } from "node:fs";
import type { DatabaseSync } from "node:sqlite";
import { ADMIN_PASSWORD, AdminClient, adminSession, type Reply } from "./helpers/admin.ts";
import { WriteFault } from "./helpers/db_fault.ts";
import { sqliteOnly } from "./helpers/test_store.ts";
import { dbPath } from "../server/app/paths.ts";
import { openDb } from "../server/store/db.ts";
import { openReader } from "../server/store/reader.ts";
import type { SqliteStore } from "../server/store/sqlite_store.ts";

function assertBusy(r: Reply, what: string): void {
  assert.equal(r.status, 503, `${what}: ${r.status} ${r.text}`);
  assert.equal(r.code, "busy", what);
  assert.ok(!r.text.includes(" at "), `${what}: no stack trace in the answer`);
}

/** Asserts that no error line since `from` carries a stack trace or more than one line. */
function assertNoStacks(logs: Record<string, unknown>[], from: number): void {
  const errors = logs.slice(from).filter((l) => l.level === "error");
  assert.ok(errors.length > 0, "the failures are logged");
  for (const line of errors) {
    const text = JSON.stringify(line);
    assert.ok(!/\\n\s*at /.test(text), `no stack trace: ${text}`);
  }
}

/**
 * A read connection onto a copy of the database whose pages after the first turn to garbage once
 * the connection has read its schema (as when a disk starts returning bad sectors).
 */
function corruptReader(dataDir: string): DatabaseSync {
  const path = `${dbPath(dataDir)}.corrupt`;
  const src = openDb(dbPath(dataDir));
  src.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  src.close();
  copyFileSync(dbPath(dataDir), path);
  const reader = openReader(path);
  reader.prepare("SELECT count(*) FROM sqlite_master").get();
  const size = Deno.statSync(path).size;
  const f = Deno.openSync(path, { write: true });
  f.seekSync(4096, Deno.SeekMode.Start);
  f.writeSync(new Uint8Array(size - 4096).fill(0xa5));
  f.close();
  return reader;
}

Deno.test("while writes fail, admin writes and login answer 503 busy and log one line each", async () => {
  const { t, admin } = await adminSession();
  let fault: WriteFault | null = null;
  try {
    const code = "code-0123456";
    assert.equal((await admin.put("/api/admin/registration", { enabled: true, code })).status, 200);
    const from = t.logs.length;
    fault = await WriteFault.on(t);
    assertBusy(
      await admin.put("/api/admin/registration", { enabled: false }),
      "PUT /api/admin/registration",
    );
    assertBusy(
      await new AdminClient(t.adminUrl).post("/api/admin/login", {
        username: "admin",
        password: ADMIN_PASSWORD,
      }),
      "POST /api/admin/login",
    );
    assertBusy(
      await admin.post("/api/admin/endpoints", { id: "dev1", name: "d" }),
      "POST /api/admin/endpoints",
    );
    assertBusy(await admin.post("/api/admin/tokens", { name: "ci" }), "POST /api/admin/tokens");
    assertBusy(
      await fetchJson(`${t.httpUrl}/api/client/register`, {
        id: "self1",
        login_password: "device-password-1",
        registration_code: code,
      }),
      "POST /api/client/register",
    );
    assertNoStacks(t.logs, from);

    await fault.off();
    fault = null;
    const okAgain = await admin.put("/api/admin/registration", { enabled: false });
    assert.equal(okAgain.status, 200, okAgain.text);
  } finally {
    await fault?.off();
    await t.close();
  }
});

// SQLite only: it swaps the SQLite store's read connection for one on a corrupt file.
Deno.test({
  name: "with the database unreadable, admin reads and login answer 503 busy, not 500",
  ignore: sqliteOnly(),
}, async () => {
  const { t, admin } = await adminSession();
  const app = t.server.store as SqliteStore;
  const healthy = app.reader;
  try {
    await t.createEndpoint("dev1", "device-password-1");
    const closed = openReader(dbPath(t.dataDir));
    closed.close();
    const corrupt = corruptReader(t.dataDir);
    for (const [reader, kind] of [[closed, "closed"], [corrupt, "corrupt"]] as const) {
      const from = t.logs.length;
      app.reader = reader;
      assertBusy(await admin.get("/api/admin/overview"), `${kind}: GET /api/admin/overview`);
      assertBusy(await admin.get("/api/admin/endpoints"), `${kind}: GET /api/admin/endpoints`);
      assertBusy(await admin.get("/api/admin/endpoints/dev1"), `${kind}: GET one endpoint`);
      assertBusy(
        await new AdminClient(t.adminUrl).post("/api/admin/login", {
          username: "admin",
          password: ADMIN_PASSWORD,
        }),
        `${kind}: POST /api/admin/login`,
      );
      assertNoStacks(t.logs, from);
      app.reader = healthy;
      assert.equal((await admin.get("/api/admin/overview")).status, 200);
    }
    corrupt.close();
  } finally {
    app.reader = healthy;
    await t.close();
  }
});

async function fetchJson(url: string, body: unknown): Promise<Reply> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json: Record<string, unknown> | null = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  const code = ((json?.error as Record<string, unknown> | undefined)?.code as string) ?? "";
  return { status: res.status, headers: res.headers, text, json, data: {}, code };
}
