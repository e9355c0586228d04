import assert from "node:assert/strict";
import { withListeners } from "./_listener_harness.ts";
import { closeOf, connectTcp } from "./_test_util.ts";

Deno.test("MQTT connections that have not logged in are capped per address and closed at the login deadline; a login leaves the cap (issue 28)", async () => {
  await withListeners(
    { limits: { max_unauthenticated_per_ip: 2 }, timeouts: { auth_seconds: 0.5 } },
    async ({ listeners, nextConn, lines }) => {
      const port = listeners.listen.port;
      const open = async (from: string) => {
        const s = await connectTcp(port, "127.0.0.1", from);
        s.on("error", () => {});
        s.write(new Uint8Array([0x10]));
        return s;
      };
      const first = await open("127.0.0.2");
      const c1 = await nextConn();
      await open("127.0.0.2");
      await nextConn();
      // The third from that address is closed at once, unseen by the broker.
      const third = await open("127.0.0.2");
      await closeOf(third);
      const refused = lines.find((l) =>
        l.msg === "MQTT connection refused: too many not logged in from one address"
      );
      assert.equal(refused?.remote, "127.0.0.2");
      // Another address is not affected.
      await open("127.0.0.3");
      await nextConn();
      // One logs in: it leaves the cap, so the address may open another one.
      c1.loggedIn?.();
      await open("127.0.0.2");
      await nextConn();
      // The login deadline closes the ones that never logged in, not the one that did.
      const closed = await closeOf(await open("127.0.0.3"));
      assert.equal(closed.length, 0);
      assert.ok(
        lines.some((l) => l.msg === "MQTT connection closed: no login within the deadline"),
      );
      assert.equal(first.destroyed, false, "the logged-in connection stays open");
      first.destroy();
    },
  );
});
