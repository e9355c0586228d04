// A server started on a populated version-1 data directory (issue 10 item 7): it backs the
// database up, upgrades it to migration 2, and serves what was stored before, over MQTT, with
// ids above every id handed out before the upgrade.
import assert from "node:assert/strict";
import { join } from "node:path";
import { existsSync, readdirSync } from "node:fs";
import { online } from "./helpers/client.ts";
import { PW } from "./helpers/messaging.ts";
import { startTestServer, TEST_POOL_PARAMS } from "./helpers/test_server.ts";
import { seedEndpoints } from "./helpers/store_seed.ts";
import { dbPath, ensureDataDir } from "../server/app/paths.ts";
import { PasswordPool } from "../server/auth/password_pool.ts";
import { openDb } from "../server/store/db.ts";
import { currentVersion, migrate, MIGRATIONS, SCHEMA_VERSION } from "../server/store/migrations.ts";
import { ackDelivery, claimDeliveries } from "../server/store/ops/deliveries.ts";
import { submitMessage } from "../server/store/ops/messages.ts";
import { binaryArgs } from "../server/store/ops/_testing.ts";
import { configure, resetOpsContext } from "../server/store/ops/context.ts";

Deno.test("a server upgrades a populated version-1 database, delivers what it held and reuses no id", async () => {
  const dataDir = join(await Deno.makeTempDir({ prefix: "nixmsg-upgrade-" }), "data");
  await ensureDataDir(dataDir);
  const path = dbPath(dataDir);
  await migrate(path, { backupDir: join(dataDir, "backup"), migrations: MIGRATIONS.slice(0, 1) });
  const loginHash = await new PasswordPool({ params: TEST_POOL_PARAMS }).hash(PW);
  const now = Date.now();
  const v1 = openDb(path);
  let oldReceipt: number;
  let oldSeq: number;
  try {
    seedEndpoints(v1, ["a", "b"], loginHash, now);
    // Version 1 has no quota counters (migration 4): fill it as a build without quotas would.
    resetOpsContext();
    configure(v1, { maxPendingPerSender: 0, maxPendingPerReceiver: 0 }, now);
    // m0 was delivered and its receipt deleted (retention): version 1 would reuse both ids.
    submitMessage(v1, binaryArgs("m0", { sendAt: now, keep: true, ttlSeconds: 3600 }), now);
    claimDeliveries(v1, { endpointId: "b", connCode: "old", limit: 10 }, now);
    ackDelivery(v1, { endpointId: "b", from: "a", id: "m0" }, now);
    oldReceipt = (v1.prepare("SELECT max(receipt_id) AS n FROM receipts").get() as { n: number })
      .n;
    v1.exec("DELETE FROM receipts");
    // m1 is still pending for b when the old build stops.
    submitMessage(v1, binaryArgs("m1", { sendAt: now, keep: true, ttlSeconds: 3600 }), now);
    // The newest message record was deleted too (record_retention_days 0).
    submitMessage(v1, binaryArgs("m9", { sendAt: now, keep: true, ttlSeconds: 3600 }), now);
    oldSeq = (v1.prepare("SELECT max(seq) AS n FROM messages").get() as { n: number }).n;
    v1.exec("DELETE FROM deliveries WHERE seq = (SELECT seq FROM messages WHERE id = 'm9')");
    v1.exec("DELETE FROM message_bodies WHERE seq = (SELECT seq FROM messages WHERE id = 'm9')");
    v1.exec("DELETE FROM messages WHERE id IN ('m0', 'm9')");
  } finally {
    v1.close();
  }

  const t = await startTestServer({}, { dataDir });
  const clients = [];
  try {
    const check = openDb(path, { readOnly: true });
    assert.equal(currentVersion(check), SCHEMA_VERSION);
    check.close();
    const backups = readdirSync(join(dataDir, "backup")).filter((f) => f.startsWith("pre-"));
    assert.equal(backups.length, 1, "the upgrade took one backup copy");
    const copy = openDb(join(dataDir, "backup", backups[0]), { readOnly: true });
    assert.equal(currentVersion(copy), 1);
    copy.close();
    assert.ok(existsSync(path));

    const a = (await online(t.wsUrl, "a", PW)).client;
    const b = (await online(t.wsUrl, "b", PW)).client;
    clients.push(a, b);
    const m1 = await b.waitFrame((f) => f.type === "msg" && f.id === "m1", "m1 after upgrade");
    assert.equal(m1.from, "a");
    await b.request({ type: "ack", from: "a", id: "m1" });
    const receipt = await a.waitFrame((f) => f.type === "receipt" && f.id === "m1", "receipt");
    assert.ok(Number(receipt.receipt_id) > oldReceipt, `receipt ${receipt.receipt_id}`);

    const sent = await a.request({
      type: "send",
      id: "m2",
      to: { kind: "endpoint", id: "b" },
      body: { enc: "utf8", data: "after" },
      delay_ms: 0,
    });
    assert.equal(sent.ok, true);
    const seq = t.reader.prepare("SELECT seq FROM messages WHERE id = 'm2'").get() as {
      seq: number;
    };
    assert.ok(seq.seq > oldSeq, `seq ${seq.seq} > ${oldSeq}`);
  } finally {
    for (const c of clients) await c.close();
    await t.close();
  }
});
