// `nixmsg store copy` on a database of the size (issue 29 "Done when": 10,000 endpoints and
// 100,000 messages, every count equal). Builds the source database through the ops (endpoints,
// one group, messages to endpoints with their deliveries, send keys and receipts, a tenth of them
// acked), then runs the real CLI and reports its time and its count lines.
//
//   deno run -A tests/bench/store_copy.ts [--endpoints N] [--messages N] [--to URL]
//     --to   postgres://… (an empty database) or file:PATH; default a new file in the temp home
import { parseArgs } from "node:util";
import { join } from "node:path";
import { makeTestHome, runCli } from "../helpers/server_process.ts";
import { dbPath } from "../../server/app/paths.ts";
import { openDb } from "../../server/store/db.ts";
import { migrate } from "../../server/store/migrations.ts";
import { createEndpoint } from "../../server/store/ops/endpoints.ts";
import { submitMessage } from "../../server/store/ops/messages.ts";
import { claimDeliveries } from "../../server/store/ops/deliveries.ts";
import { ackDelivery } from "../../server/store/ops/deliveries.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    endpoints: { type: "string", default: "10000" },
    messages: { type: "string", default: "100000" },
    to: { type: "string", default: "" },
  },
});
const endpoints = Number(flags.endpoints);
const messages = Number(flags.messages);

const home = await makeTestHome();
try {
  const init = await runCli(home, ["admin", "init"]);
  if (init.code !== 0) throw new Error(`admin init failed: ${init.stderr}`);
  const path = dbPath(home.dataDir);
  await migrate(path, { backupDir: join(home.dataDir, "backup") });
  const t0 = performance.now();
  const db = openDb(path, { synchronous: "NORMAL" });
  const now = Date.now();
  try {
    db.exec("BEGIN");
    for (let i = 0; i < endpoints; i++) {
      createEndpoint(db, {
        id: `e${i}`,
        name: `endpoint ${i}`,
        remark: "",
        source: "admin",
        loginHash: "$argon2id$bench",
        talkHash: null,
        defaultDelayMs: 0,
      }, now);
    }
    const body = new TextEncoder().encode("x".repeat(256));
    for (let i = 0; i < messages; i++) {
      submitMessage(db, {
        senderId: `e${i % endpoints}`,
        id: `m${i}`,
        fingerprint: new Uint8Array([i & 0xff]),
        toKind: "endpoint",
        toId: `e${(i + 1) % endpoints}`,
        body,
        bodyEnc: "utf8",
        contentType: "text/plain",
        meta: "{}",
        sendAt: now,
        keep: true,
        ttlSeconds: 86_400,
        receipt: true,
      }, now);
    }
    // A tenth of the recipients take and ack their message: accepted deliveries and receipts.
    for (let i = 0; i < endpoints; i += 10) {
      const { claimed } = claimDeliveries(
        db,
        { endpointId: `e${i}`, connCode: "c", limit: 1000 },
        now,
      );
      for (const c of claimed) {
        ackDelivery(db, { endpointId: `e${i}`, from: c.senderId, id: c.msgId }, now + 1);
      }
    }
    db.exec("COMMIT");
  } finally {
    db.close();
  }
  console.log(
    `source: ${endpoints} endpoints, ${messages} messages, built in ${
      ((performance.now() - t0) / 1000).toFixed(1)
    } s`,
  );
  const to = flags.to || `file:${join(home.dir, "copy.db")}`;
  const t1 = performance.now();
  const res = await runCli(home, ["store", "copy", "--to", to]);
  const s = (performance.now() - t1) / 1000;
  for (const line of res.stdout.split("\n")) if (line.includes("source ")) console.log(line);
  if (res.code !== 0) console.log(`FAILED (exit ${res.code}): ${res.stderr}`);
  else console.log(`store copy: ${s.toFixed(1)} s, every count equal`);
} finally {
  await home.cleanup();
}
