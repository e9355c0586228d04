// The README's "First steps" curl example (issue 16) is run as written, with `curl`, against a
// real server: the MQTT receiver gets the message, and its status is readable over HTTP.
import assert from "node:assert/strict";
import { online } from "./helpers/client.ts";
import { AdminClient, adminSession } from "./helpers/admin.ts";
import { PW, waitMsg } from "./helpers/messaging.ts";

/** The README's address, replaced by the test server's. */
const README_BASE = "http://127.0.0.1:7443";

/** The shell command of the ```sh block that posts to `/messages`, continuation lines joined. */
async function readmeCurl(): Promise<string> {
  const text = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  const blocks = [...text.matchAll(/```sh\n([\s\S]*?)\n\s*```/g)].map((m) => m[1]);
  const block = blocks.find((b) => b.includes("/messages"));
  assert.ok(block !== undefined, "README.md has no curl example for /messages");
  const command = block.split("\n").map((l) => l.trim()).filter((l) => !l.startsWith("#"))
    .join("\n").replace(/\\\n/g, " ");
  assert.ok(command.startsWith("curl "), command);
  assert.ok(!command.includes("\n"), "one command only");
  return command;
}

Deno.test("the README's curl example sends a message with an API token to an MQTT receiver", async () => {
  const command = await readmeCurl();
  assert.ok(command.includes(README_BASE), command);
  const { t, admin } = await adminSession();
  try {
    for (const id of ["e_1", "e_2"]) {
      const r = await admin.post("/api/admin/endpoints", { id, login_password: PW });
      assert.equal(r.status, 200, r.text);
    }
    const created = await admin.post("/api/admin/tokens", { name: "readme" });
    assert.equal(created.status, 200, created.text);
    const token = created.data.token as string;
    const { client: receiver } = await online(t.wsUrl, "e_2", PW);
    try {
      const run = await new Deno.Command("sh", {
        args: ["-c", command.replaceAll(README_BASE, t.adminUrl)],
        env: { NIXMSG_TOKEN: token },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const out = new TextDecoder().decode(run.stdout);
      assert.equal(run.code, 0, new TextDecoder().decode(run.stderr));
      const answer = JSON.parse(out);
      assert.equal(answer.ok, true, out);
      assert.equal(answer.data.state, "dispatched");
      const id = answer.data.id as string;
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/, "a generated UUIDv7");
      const msg = await waitMsg(receiver, id);
      assert.equal(msg.from, "e_1");
      assert.equal((msg.body as Record<string, unknown>).data, "hello");
      const ack = await receiver.request({ type: "ack", from: "e_1", id });
      assert.equal(ack.ok, true);
      const program = new AdminClient(t.adminUrl, token);
      const status = await program.get(`/api/admin/endpoints/e_1/messages/${id}`);
      assert.equal(status.status, 200, status.text);
      assert.deepEqual(status.data.items, [{ endpoint_id: "e_2", state: "accepted", reason: "" }]);
    } finally {
      await receiver.close();
    }
  } finally {
    await t.close();
  }
});
