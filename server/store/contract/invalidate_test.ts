import assert from "node:assert/strict";
import { binaryArgs } from "../ops/_testing.ts";
import { contractTest, countRows, deliveryLines, messageLine, T0 } from "./_stores.ts";

// Disabling and deleting an endpoint (spec 7.6 作废, spec 8) on both stores.

for (const kind of ["disabled", "deleted"] as const) {
  contractTest(`endpoint ${kind}: deliveries to and from it are voided`, async (s) => {
    for (const id of ["x", "b"]) await s.addEndpoint(id);
    for (const id of ["x", "b"]) await s.run("context.connected", { endpointId: id, connCode: id });
    const toX = await s.run("message.submit", binaryArgs("to", { senderId: "b", toId: "x" }));
    await s.run("delivery.claim", { endpointId: "x", connCode: "x", limit: 5 });
    const fromX = await s.run("message.submit", binaryArgs("from", { senderId: "x", toId: "b" }));
    const later = await s.run(
      "message.submit",
      binaryArgs("later", { senderId: "b", toId: "x", sendAt: T0 + 60_000 }),
    );
    const op = kind === "disabled" ? "endpoint.disable" : "endpoint.delete";
    const r = await s.run(op, { endpointId: "x" }, T0 + 1);
    assert.deepEqual(r.revoked, [
      { endpointId: "x", connCode: "x", msgId: "to", from: "b", reason: `endpoint_${kind}` },
    ]);
    assert.deepEqual(
      r.receipts.map((x) => `${x.msgId}:${x.endpointId}:${x.reason}`).sort(),
      [`later:x:endpoint_${kind}`, `to:x:endpoint_${kind}`],
    );
    assert.deepEqual(await deliveryLines(s, toX.seq!), [`x:rejected:endpoint_${kind}`]);
    assert.equal(await messageLine(s, later.seq!), `completed:endpoint_${kind}`);
    if (kind === "disabled") {
      assert.deepEqual(await deliveryLines(s, fromX.seq!), ["b:rejected:sender_disabled"]);
      assert.equal((await s.run("endpoint.disable", { endpointId: "x" })).changed, false);
      assert.deepEqual(await s.run("endpoint.enable", { endpointId: "x" }), { changed: true });
    } else {
      assert.equal(await messageLine(s, fromX.seq!), "gone");
      assert.equal(await countRows(s, "endpoints", "id = ?", "x"), 0);
      assert.equal(await countRows(s, "send_keys", "sender_id = ?", "x"), 0);
    }
    assert.equal(await s.codeOf(op, { endpointId: "nobody" }), "not_found");
  });
}

contractTest("deleting X hands its groups to the longest member or dissolves them", async (s) => {
  for (const id of ["x", "b", "c"]) await s.addEndpoint(id);
  await s.addGroup("shared", ["x", "c", "b"]);
  await s.addGroup("alone", ["x"]);
  const r = await s.run("endpoint.delete", { endpointId: "x" });
  assert.deepEqual(r.groupEvents, [
    { groupId: "alone", members: [], event: "dissolved", endpointId: "x" },
    { groupId: "shared", members: ["b", "c"], event: "left", endpointId: "x" },
    { groupId: "shared", members: ["b", "c"], event: "owner_changed", endpointId: "c" },
  ]);
  assert.deepEqual(await s.rows("SELECT id, owner_id FROM groups"), [
    { id: "shared", owner_id: "c" },
  ]);
});

contractTest("reset_password swaps the hash and kills the session", async (s) => {
  await s.addEndpoint("x", { sessionHash: "s" });
  assert.deepEqual(await s.run("endpoint.reset_password", { endpointId: "x", loginHash: "new" }), {
    changed: true,
  });
  assert.deepEqual(await s.rows("SELECT login_hash, session_hash FROM endpoints"), [
    { login_hash: "new", session_hash: null },
  ]);
  assert.equal(
    await s.codeOf("endpoint.reset_password", { endpointId: "nobody", loginHash: "n" }),
    "not_found",
  );
});

contractTest(
  "admin closes record the login revision they close through, for a cluster node's poll",
  async (s) => {
    await s.addEndpoint("x", { sessionHash: "s" });
    const logins = async () => await s.query("cluster.logins", { ids: ["x"] });
    // Never logged in: a kick records nothing to close.
    assert.deepEqual(await s.run("endpoint.kick", { endpointId: "x" }), { closedThrough: null });
    const h1 = await s.run("endpoint.handshake", { endpointId: "x" }, T0 + 100);
    assert.deepEqual(await s.run("endpoint.kick", { endpointId: "x" }, T0 + 150), {
      closedThrough: h1.onlineSince,
    });
    assert.deepEqual(await logins(), [{
      id: "x",
      enabled: true,
      online_since: h1.onlineSince,
      closed_through: h1.onlineSince,
      closed_reason: "kick",
    }]);
    // A reset closes the same logins for a stronger reason; a kick after it keeps that reason.
    await s.run("endpoint.reset_password", { endpointId: "x", loginHash: "new" }, T0 + 160);
    await s.run("endpoint.kick", { endpointId: "x" }, T0 + 170);
    assert.equal((await logins())[0].closed_reason, "password_reset");
    // A later login is not closed by them; a kick of it is recorded with its revision.
    const h2 = await s.run("endpoint.handshake", { endpointId: "x" }, T0 + 200);
    assert.ok(h2.onlineSince > h1.onlineSince);
    assert.equal((await logins())[0].closed_through, h1.onlineSince);
    await s.run("endpoint.kick", { endpointId: "x" }, T0 + 250);
    assert.deepEqual((await logins())[0], {
      id: "x",
      enabled: true,
      online_since: h2.onlineSince,
      closed_through: h2.onlineSince,
      closed_reason: "kick",
    });
    // A disable records itself (and enabled = false); enabling again leaves the record.
    await s.run("endpoint.disable", { endpointId: "x" }, T0 + 300);
    await s.run("endpoint.enable", { endpointId: "x" }, T0 + 310);
    assert.deepEqual((await logins())[0], {
      id: "x",
      enabled: true,
      online_since: h2.onlineSince,
      closed_through: h2.onlineSince,
      closed_reason: "disabled",
    });
    await s.run("endpoint.disable", { endpointId: "x" }, T0 + 320);
    assert.equal((await logins())[0].enabled, false);
    // A deleted endpoint is not answered.
    await s.run("endpoint.delete", { endpointId: "x" }, T0 + 400);
    assert.deepEqual(await logins(), []);
    assert.equal(await s.codeOf("endpoint.kick", { endpointId: "x" }), "not_found");
  },
);
