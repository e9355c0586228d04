// The kill -9 matrix (issue 14 item 4, spec 13 崩溃 and 7.8). A `nixmsg serve` child dies by
// SIGKILL in each window of at-least-once delivery, either killed by the test at an observed
// point or killing itself at a named crash point (`NIXMSG_TEST_CRASH_AT`, see
// server/config/crash_point.ts), and is restarted on the same data directory. Senders retry every
// request they have no answer for, with the same frame, as the SDK does; receivers dedup by
// (from, id) and ack. Each row waits (bounded) for the acks and a quiet window after the last one
// (tests/helpers/fault_counts.ts), counts lost, duplicated and redelivered messages at the
// application, prints and records them as a `fault-summary {...}` line (the figures of
// docs/RELIABILITY.md), and then fails on `lost=N` (with the ids) or a duplicate; then it checks
// the `status` the sender sees.
// Longer runs: NIXMSG_CRASH_MESSAGES=200 NIXMSG_CRASH_ROUNDS=50 deno test -A tests/crash_matrix_test.ts
// With NIXMSG_TEST_STORE=postgres every row but the SQLite migration one runs on a database of its
// own on the test PostgreSQL (tests/helpers/crash_node.ts), through the same shipped launcher.
import assert from "node:assert/strict";
import { join } from "node:path";
import { existsSync, readdirSync } from "node:fs";
import type { TestClient } from "./helpers/client.ts";
import { AppReceiver, CrashNode, eachLimit, setAdminPassword } from "./helpers/crash_node.ts";
import { makeTestHome } from "./helpers/server_process.ts";
import { AdminClient } from "./helpers/admin.ts";
import { type Data, KEEP, PW, sendFrame } from "./helpers/messaging.ts";
import { ADMIN_PW } from "./helpers/crash_node.ts";
import { dbPath, ensureDataDir } from "../server/app/paths.ts";
import { openDb } from "../server/store/db.ts";
import { currentVersion, migrate, MIGRATIONS, SCHEMA_VERSION } from "../server/store/migrations.ts";
import { submitMessage } from "../server/store/ops/messages.ts";
import { binaryArgs } from "../server/store/ops/_testing.ts";
import { configure, resetOpsContext } from "../server/store/ops/context.ts";
import { PasswordPool } from "../server/auth/password_pool.ts";
import { TEST_POOL_PARAMS } from "./helpers/test_server.ts";
import { seedEndpoints } from "./helpers/store_seed.ts";
import { countFaults, type FaultRow, reportFaults, type Settled } from "./helpers/fault_counts.ts";
import { sqliteOnly } from "./helpers/test_store.ts";

/** One row of the matrix: the figures of docs/RELIABILITY.md's fault table. */
type Row = Omit<FaultRow, "at" | "load_per_core">;

/** Prints the row, writes it to the summary, then fails with `lost=N` and the ids if any. */
function report(row: Row): void {
  reportFaults(row);
}

/** The summary key of a row: `crash-matrix/<fault, slugged>`, plus `@<variant>` for long runs. */
function keyOf(fault: string, variant = ""): string {
  const slug = fault.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
  return `crash-matrix/${slug}${variant ? `@${variant}` : ""}`;
}

/**
 * Lost, duplicated and redelivered over `receivers`, each of which should have every id of
 * `from`, counted after `settled` (a bounded wait and a quiet window) whatever its outcome.
 */
function tally(
  fault: string,
  from: string,
  ids: readonly string[],
  receivers: readonly AppReceiver[],
  kills: number,
  n: CrashNode,
  settled: Settled,
  variant = "",
): Row {
  return {
    key: keyOf(fault, variant),
    fault,
    ...countFaults(ids, receivers.map((r) => r.of(from))),
    crashes: n.crashes,
    ms: settled.ms,
    figures: { kills, receivers: receivers.length, late_frames: settled.late },
  };
}

const keptFrame = (id: string, to = "b") => sendFrame(id, to, `body of ${id}`, KEEP);

/**
 * Publishes the `send` frames without waiting for answers or PUBACKs: the server may die
 * meanwhile, and MQTT.js never settles a QoS 1 publish of a client that will not reconnect.
 */
function fireSends(c: TestClient, frames: readonly Data[]): void {
  for (const f of frames) {
    const payload = JSON.stringify({ v: 1, rid: `fire-${f.id}`, ...f });
    c.mqtt.publish(`nix/c/${c.id}/up`, payload, { qos: 1 }, () => {});
  }
}

/** The sender's retry after a restart: every frame again; each must be answered ok. */
async function retrySends(c: TestClient, frames: readonly Data[]): Promise<Data[]> {
  const out: Data[] = [];
  for (const f of frames) {
    const r = await c.request(f);
    assert.equal(r.ok, true, `retry of ${f.id}: ${JSON.stringify(r)}`);
    out.push(r.data as Data);
  }
  return out;
}

/** `status` of each id: one message, every recipient accepted once. */
async function assertAccepted(c: TestClient, ids: readonly string[], recipients: number) {
  for (const id of ids) {
    const r = await c.request({ type: "status", id, limit: 200 });
    assert.equal(r.ok, true, `status ${id}: ${JSON.stringify(r)}`);
    const counts = (r.data as Data).counts as Record<string, number>;
    assert.equal(counts.accepted, recipients, `${id}: ${JSON.stringify(counts)}`);
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    assert.equal(total, recipients, `${id}: one delivery per recipient`);
  }
}

/** One endpoint-to-endpoint row: `crash` drives the first run until the server is dead. */
async function endpointRow(
  fault: string,
  ids: readonly string[],
  crash: (n: CrashNode, b: AppReceiver) => Promise<void>,
): Promise<void> {
  const n = await CrashNode.create(["a", "b"]);
  const b = new AppReceiver("b");
  try {
    await crash(n, b);
    assert.equal(n.server, null, "the first run ended with a kill");
    await n.start();
    await b.connect(n.ws);
    const a = await n.online("a");
    await retrySends(a, ids.map((id) => keptFrame(id)));
    const settled = await b.settleAcked("a", ids);
    report(tally(fault, "a", ids, [b], 1, n, settled, VARIANT));
    await assertAccepted(a, ids, 1);
  } finally {
    await b.close();
    await n.close();
  }
}

/** Messages per endpoint row; `NIXMSG_CRASH_MESSAGES=N` (at least 5) for a longer run. */
const COUNT = Math.max(5, Number(Deno.env.get("NIXMSG_CRASH_MESSAGES") ?? 10));
const MSGS = Array.from({ length: COUNT }, (_, i) => `m${i}`);
/** The endpoint rows' summary variant: `messages=N` when not the default 10. */
const VARIANT = COUNT === 10 ? "" : `messages=${COUNT}`;

Deno.test("crash matrix: kill -9 right after send answers loses and duplicates nothing", async () => {
  await endpointRow("kill -9 after send resp", MSGS, async (n) => {
    await n.start();
    const a = await n.online("a");
    for (const id of MSGS) {
      const r = await a.request(keptFrame(id));
      assert.equal((r.data as Data).state, "dispatched");
    }
    await n.kill();
  });
});

Deno.test("crash matrix: kill -9 after the send commit, before its answer", async () => {
  await endpointRow("kill -9 after send commit, before resp", MSGS, async (n) => {
    await n.start("send_committed:5");
    const a = await n.online("a");
    fireSends(a, MSGS.map((id) => keptFrame(id)));
    await n.crashed();
  });
});

Deno.test("crash matrix: kill -9 after a send committed with its receiver's push mark", async () => {
  // issue 33: a send to an online receiver with an idle push loop marks the push in its own
  // transaction; the server dies before that send's `resp` and before its `msg`. A burst takes
  // the loop's claim once, so the second burst's first send is the second such commit.
  const fault = "kill -9 after send + push mark commit, before resp and publish";
  await endpointRow(
    fault,
    MSGS,
    async (n, b) => {
      await n.start("send_marked:2");
      await b.connect(n.ws);
      const a = await n.online("a");
      const half = MSGS.length / 2;
      fireSends(a, MSGS.slice(0, half).map((id) => keptFrame(id)));
      const first = await b.settleAcked("a", MSGS.slice(0, half));
      // The second burst needs an idle push loop: a first burst not all acked ends the test here,
      // counted (lost=N with the ids) rather than asserted as a timeout.
      if (!first.done) report(tally(fault, "a", MSGS.slice(0, half), [b], 0, n, first, VARIANT));
      assert.ok(first.done, "the first burst is acked before the second one crashes the server");
      fireSends(a, MSGS.slice(half).map((id) => keptFrame(id)));
      await n.crashed();
      await b.close();
    },
  );
});

Deno.test("crash matrix: kill -9 after a push mark, before the publish", async () => {
  await endpointRow("kill -9 after push mark, before publish", MSGS, async (n, b) => {
    await n.start("after_mark:3");
    await b.connect(n.ws);
    fireSends(await n.online("a"), MSGS.map((id) => keptFrame(id)));
    await n.crashed();
    await b.close();
  });
});

Deno.test("crash matrix: kill -9 after the publish, before the ack", async () => {
  await endpointRow("kill -9 after publish (PUBACK), before ack", MSGS, async (n, b) => {
    await n.start("after_publish:3");
    await b.connect(n.ws);
    fireSends(await n.online("a"), MSGS.map((id) => keptFrame(id)));
    await n.crashed();
    await b.close();
  });
});

Deno.test("crash matrix: kill -9 during a 200-member group fan-out", async () => {
  const members = Array.from({ length: 200 }, (_, i) => `g${String(i).padStart(3, "0")}`);
  const n = await CrashNode.create(["a", ...members]);
  await n.withStore((store) =>
    store.run("group.create", {
      ownerId: "a",
      groupId: "team",
      name: "team",
      members: members.map((id) => ({ id, verdict: "ok" as const })),
      maxMembers: 1000,
      admin: true,
    })
  );
  const ids = ["t0", "t1", "t2"];
  const frames = ids.map((id) =>
    sendFrame(id, "", `body of ${id}`, { ...KEEP, to: { kind: "group", id: "team" } })
  );
  const receivers = members.map((id) => new AppReceiver(id));
  try {
    // Dies at the 300th PUBACK of 600 (3 messages x 200 members), mid fan-out.
    await n.start("after_publish:300");
    await eachLimit(receivers, 20, (r) => r.connect(n.ws));
    fireSends(await n.online("a"), frames);
    await n.crashed();
    for (const r of receivers) await r.close();

    await n.start();
    await eachLimit(receivers, 20, (r) => r.connect(n.ws));
    const a = await n.online("a");
    await retrySends(a, frames);
    const t0 = Date.now();
    const each = await Promise.all(receivers.map((r) => r.settleAcked("a", ids)));
    const settled = { done: each.every((s) => s.done), late: 0, ms: Date.now() - t0 };
    for (const s of each) settled.late += s.late;
    report(tally("kill -9 mid 200-member group fan-out", "a", ids, receivers, 1, n, settled));
    await assertAccepted(a, ids, members.length);
  } finally {
    for (const r of receivers) await r.close();
    await n.close();
  }
});

const HEADER = "id,name,login_password,talk_password,default_delay_seconds,remark";

Deno.test("crash matrix: kill -9 during a 1,000-row CSV import leaves all or nothing", async () => {
  const n = await CrashNode.create([]);
  const rows = Array.from({ length: 1000 }, (_, i) => `imp-${String(i).padStart(4, "0")}`);
  const csv = [HEADER, ...rows.map((id) => `${id},${id},password-${id},,0,`)].join("\r\n");
  const importCsv = async (admin: AdminClient) =>
    await admin.post("/api/admin/endpoints/import", csv, {
      headers: { "Content-Type": "text/csv" },
    });
  const count = async (admin: AdminClient) => {
    const r = await admin.get("/api/admin/endpoints?q=imp-&limit=1");
    assert.equal(r.status, 200, r.text);
    return r.data.total as number;
  };
  try {
    // The last row is inserted, the transaction not yet committed: the worst moment.
    const t0 = Date.now();
    await n.start("import_row:1000");
    const admin = new AdminClient(n.http);
    await admin.login(ADMIN_PW);
    const answered = await importCsv(admin).then((r) => r.status, () => "no answer");
    assert.equal(answered, "no answer", "the import must not be answered before the kill");
    await n.crashed();

    await n.start();
    const again = new AdminClient(n.http);
    await again.login(ADMIN_PW);
    const after = await count(again);
    assert.ok(after === 0 || after === 1000, `all or nothing, got ${after}`);
    assert.equal(after, 0, "the uncommitted import is rolled back");
    const r = await importCsv(again);
    assert.equal(r.status, 200, r.text.slice(0, 300));
    // An imported endpoint logs in with its CSV password.
    await n.online("imp-0999", "password-imp-0999");
    // Lost: a row of the second import that is not there; duplicated: more rows than the CSV has.
    const total = await count(again);
    const present = new Set<string>();
    let cursor = "";
    do {
      const page = await again.get(`/api/admin/endpoints?q=imp-&limit=200&cursor=${cursor}`);
      assert.equal(page.status, 200, page.text);
      for (const e of page.data.items as { id: string }[]) present.add(e.id);
      cursor = page.data.next_cursor as string;
    } while (cursor !== "");
    const fault = "kill -9 during 1,000-row CSV import";
    report({
      key: keyOf(fault),
      fault,
      ...countFaults(rows, [{ has: (id) => present.has(id), duplicates: 0, redelivered: null }]),
      duplicated: Math.max(0, total - rows.length),
      crashes: n.crashes,
      ms: Date.now() - t0,
      figures: { kills: 1, rows: rows.length, after_restart: after, imported: total },
    });
  } finally {
    await n.close();
  }
});

// SQLite only: the pre-migration file copy and the file's integrity check are SQLite's; a
// PostgreSQL migration runs in one transaction and is backed up with pg_dump (docs/operations.md).
Deno.test({
  name: "crash matrix: kill -9 during migration 2 leaves the backup and a usable database",
  ignore: sqliteOnly(),
}, async () => {
  const home = await makeTestHome();
  await ensureDataDir(home.dataDir);
  const path = dbPath(home.dataDir);
  await migrate(path, {
    backupDir: join(home.dataDir, "backup"),
    migrations: MIGRATIONS.slice(0, 1),
  });
  const loginHash = await new PasswordPool({ params: TEST_POOL_PARAMS }).hash(PW);
  const now = Date.now();
  const ids = ["v0", "v1", "v2", "v3", "v4"];
  const v1 = openDb(path);
  try {
    seedEndpoints(v1, ["a", "b"], loginHash, now);
    // Version 1 has no quota counters (migration 4): fill it as a build without quotas would.
    resetOpsContext();
    configure(v1, { maxPendingPerSender: 0, maxPendingPerReceiver: 0 }, now);
    for (const id of ids) {
      submitMessage(v1, binaryArgs(id, { sendAt: now, keep: true, ttlSeconds: 3600 }), now);
    }
  } finally {
    v1.close();
  }
  await setAdminPassword(path);
  const n = CrashNode.on(home);
  const b = new AppReceiver("b");
  try {
    await assert.rejects(n.start("migration"), /did not start/);
    const backups = readdirSync(n.backupDir).filter((f) => f.startsWith("pre-migrate-"));
    assert.equal(backups.length, 1, "the backup was taken before the migration");
    const copy = openDb(join(n.backupDir, backups[0]), { readOnly: true });
    assert.equal(currentVersion(copy), 1);
    copy.close();
    const killed = openDb(path);
    const version = currentVersion(killed);
    const check = killed.prepare("PRAGMA integrity_check").get() as { integrity_check: string };
    killed.close();
    assert.ok(version === 1 || version === SCHEMA_VERSION, `old or new version, got ${version}`);
    assert.equal(check.integrity_check, "ok");

    await n.start();
    const after = openDb(path, { readOnly: true });
    assert.equal(currentVersion(after), SCHEMA_VERSION);
    after.close();
    await b.connect(n.ws);
    const settled = await b.settleAcked("a", ids);
    report(tally("kill -9 during migration 2", "a", ids, [b], 1, n, settled));
    const a = await n.online("a");
    await assertAccepted(a, ids, 1);
    assert.ok(existsSync(join(n.backupDir, backups[0])));
  } finally {
    await b.close();
    await n.close();
  }
});

/** Kill rounds of the random-moment row; `NIXMSG_CRASH_ROUNDS=N` for a longer run. */
const ROUNDS = Math.max(1, Number(Deno.env.get("NIXMSG_CRASH_ROUNDS") ?? 3));
const PER_ROUND = 20;

Deno.test(`crash matrix: ${ROUNDS} kills -9 at random moments of a send stream`, async () => {
  const n = await CrashNode.create(["a", "b"]);
  const b = new AppReceiver("b");
  const frames = new Map<string, Data>();
  const answered = new Set<string>();
  const retryUnanswered = async (a: TestClient) => {
    const open = [...frames].filter(([id]) => !answered.has(id)).map(([, f]) => f);
    await retrySends(a, open);
    for (const f of open) answered.add(f.id as string);
  };
  let seq = 0;
  try {
    for (let round = 0; round < ROUNDS; round++) {
      await n.start();
      await b.connect(n.ws);
      const a = await n.online("a");
      await retryUnanswered(a);
      // Sends PER_ROUND messages without waiting; the kill comes after a random number of
      // answers, so some sends are answered, some committed without an answer, some never read.
      const killAfter = 1 + Math.floor(Math.random() * PER_ROUND);
      const batch: Data[] = [];
      for (let i = 0; i < PER_ROUND; i++) {
        const f = keptFrame(`r${seq++}`);
        frames.set(f.id as string, f);
        batch.push(f);
      }
      const resps = () =>
        a.frames.filter((f) => f.type === "resp" && String(f.rid).startsWith("fire-"));
      fireSends(a, batch);
      await a.until(() => resps().length >= killAfter, `${killAfter} answers`, 20_000);
      for (const r of resps()) if (r.ok === true) answered.add(String(r.rid).slice(5));
      await n.kill();
      await b.close();
    }
    await n.start();
    await b.connect(n.ws);
    const a = await n.online("a");
    await retryUnanswered(a);
    const ids = [...frames.keys()];
    const settled = await b.settleAcked("a", ids);
    const fault = "kill -9 at random moments of a send stream";
    const variant = ROUNDS === 3 ? "" : `rounds=${ROUNDS}`;
    report(tally(fault, "a", ids, [b], ROUNDS, n, settled, variant));
    await assertAccepted(a, ids, 1);
  } finally {
    await b.close();
    await n.close();
  }
});
