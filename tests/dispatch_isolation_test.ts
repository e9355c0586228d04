// spec 7.4: due messages are dispatched each on its own. One whose dispatch fails is rolled back
// alone, the others are delivered, and it is retried until it goes through.
import assert from "node:assert/strict";
import { type Data, sendFrame, waitMsg, withServer } from "./helpers/messaging.ts";
import { openDb } from "../server/store/db.ts";
import { dbPath } from "../server/app/paths.ts";

Deno.test("a due message whose dispatch fails does not hold back the others due with it, and is retried", async () => {
  await withServer({}, async (h) => {
    await h.endpoints("a", "b", "c");
    const a = await h.online("a");
    const b = await h.online("b");
    const c = await h.online("c");

    // A real SQLite error, for deliveries to c only: inserting one aborts the statement.
    const db = openDb(dbPath(h.t.dataDir));
    db.exec(`CREATE TRIGGER test_fail_c BEFORE INSERT ON deliveries WHEN NEW.endpoint_id = 'c'
      BEGIN SELECT RAISE(ABORT, 'injected failure for c'); END`);
    try {
      // All three become due at the same instant, so one dispatch run takes them together.
      const at = Date.now() + 1500;
      for (const [id, to] of [["s1", "b"], ["s2", "c"], ["s3", "b"]]) {
        const resp = await a.request(sendFrame(id, to, id, { send_at_ms: at }));
        assert.equal((resp.data as Data).state, "scheduled", JSON.stringify(resp));
      }
      await waitMsg(b, "s1");
      await waitMsg(b, "s3");
      const s2 = (await a.request({ type: "status", id: "s2" })).data as Data;
      assert.equal(s2.state, "scheduled", "the failed one stays scheduled");
    } finally {
      db.exec("DROP TRIGGER IF EXISTS test_fail_c");
      db.close();
    }
    // Retried (after about a second) once the fault is gone.
    await waitMsg(c, "s2");
  });
});
