import assert from "node:assert/strict";
import { join } from "node:path";
import { Logger } from "../../log/log.ts";
import { openDb } from "../../store/db.ts";
import { migrate } from "../../store/migrations.ts";
import { getSetting } from "../../store/ops/settings.ts";
import { Writer } from "../../store/writer.ts";
import { Bookkeeping } from "./bookkeeping.ts";

interface Fixture {
  writer: Writer;
  path: string;
  logs: Record<string, unknown>[];
  bookkeeping: Bookkeeping;
}

async function withFixture(fn: (f: Fixture) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-bookkeeping-" });
  const path = join(dir, "nixmsg.db");
  await migrate(path, { backupDir: join(dir, "backup") });
  const writer = await Writer.start({ path });
  const logs: Record<string, unknown>[] = [];
  const log = new Logger("debug", {}, (line) => logs.push(JSON.parse(line)));
  const bookkeeping = new Bookkeeping({ store: writer, log });
  try {
    await fn({ writer, path, logs, bookkeeping });
  } finally {
    bookkeeping.stop();
    await writer.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Every write to settings aborts the whole transaction, as SQLITE_FULL does. */
function failSettings(path: string): () => void {
  const db = openDb(path);
  db.exec(`CREATE TRIGGER fail_settings BEFORE INSERT ON settings
    BEGIN SELECT RAISE(ROLLBACK, 'database or disk is full'); END`);
  return () => {
    db.exec("DROP TRIGGER fail_settings");
    db.close();
  };
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (const end = Date.now() + 5000; Date.now() < end;) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out: ${what}`);
}

Deno.test("Bookkeeping retries a failed commit until it lands, then calls onCommitted once", () =>
  withFixture(async ({ writer, path, logs, bookkeeping }) => {
    const heal = failSettings(path);
    let committed = 0;
    let failedBatches = 0;
    writer.onCommit((info) => void (info.ok || failedBatches++));
    bookkeeping.commit("settings.set", () => ({ key: "k", value: "v" }), {
      onCommitted: () => committed++,
    });
    await until(() => failedBatches >= 2, "a failure and a failed retry");
    assert.equal(committed, 0);
    heal();
    await until(() => committed === 1, "the commit after the fault");
    const reader = openDb(path, { readOnly: true });
    assert.equal(getSetting(reader, "k"), "v");
    reader.close();
    assert.equal(bookkeeping.waiting, 0);
    assert.ok(logs.some((l) => l.level === "error" && l.msg === "bookkeeping failed, retrying"));
    assert.ok(logs.some((l) => l.msg === "bookkeeping committed after retries"));
  }));

Deno.test("Bookkeeping stops retrying when the work is no longer needed, on stop, and on an op's own refusal", () =>
  withFixture(async ({ writer, path, logs, bookkeeping }) => {
    const heal = failSettings(path);
    let needed = true;
    let calls = 0;
    bookkeeping.commit("settings.set", () => {
      calls++;
      return needed ? { key: "a", value: "1" } : null;
    });
    await until(() => bookkeeping.waiting === 1, "a retry waiting");
    needed = false;
    await until(() => bookkeeping.waiting === 0 && calls >= 2, "the retry gave up");

    bookkeeping.commit("settings.set", () => ({ key: "b", value: "1" }));
    await until(() => bookkeeping.waiting === 1, "a retry waiting");
    bookkeeping.stop();
    assert.equal(bookkeeping.waiting, 0);
    heal();

    const again = new Bookkeeping({
      store: writer,
      log: new Logger("debug", {}, (l) => logs.push(JSON.parse(l))),
    });
    const args = {
      id: "e1",
      name: "",
      remark: "",
      source: "admin" as const,
      loginHash: "x",
      talkHash: null,
      defaultDelayMs: 0,
    };
    await writer.run("endpoint.create", args);
    again.commit("endpoint.create", () => args);
    await until(() => logs.some((l) => l.msg === "bookkeeping refused"), "the refusal");
    assert.equal(again.waiting, 0);
    assert.equal(logs.find((l) => l.msg === "bookkeeping refused")?.code, "id_taken");
  }));
