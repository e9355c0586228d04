// Checklist items 8 and 9 (spec 9 接入清单): groups and talk passwords.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Message } from "@nixevol/nixmsg";
import { closeAll, online, text } from "../helpers/clients.ts";
import { Harness } from "../helpers/harness.ts";
import { code } from "../helpers/errors.ts";

let h: Harness;
before(async () => {
  h = await Harness.start();
});
after(async () => {
  await closeAll();
  await h?.stop();
});

const byId = (id: string) => (m: Message) => m.id === id;

test("checklist 8: both members receive the same group message; the sender does not", async () => {
  const [ea, eb, ec] = [await h.endpoint(), await h.endpoint(), await h.endpoint()];
  const a = await online(h.info.ws_url, ea);
  const b = await online(h.info.ws_url, eb);
  const c = await online(h.info.ws_url, ec, { transport: "tcp" });
  const created = await a.client.groups.create("floor 1", [eb.id, { id: ec.id }]);
  assert.match(created.groupId, /^g_/);
  assert.deepEqual(created.failed, []);
  const group = await a.client.groups.get(created.groupId);
  assert.equal(group.ownerId, ea.id);
  assert.equal(group.memberCount, 3);
  assert.deepEqual(group.members.items.map((m) => m.id).sort(), [ea.id, eb.id, ec.id].sort());
  const mine = await b.client.groups.list();
  assert.ok(mine.items.some((g) => g.id === created.groupId));

  const sent = await a.client.send({ kind: "group", id: created.groupId }, "to everyone");
  const [gb, gc] = await Promise.all([
    b.messages.waitFor(byId(sent.id), "B's copy"),
    c.messages.waitFor(byId(sent.id), "C's copy"),
  ]);
  for (const m of [gb, gc]) {
    assert.equal(text(m), "to everyone");
    assert.equal(m.from, ea.id);
    assert.deepEqual(m.to, { kind: "group", id: created.groupId });
  }
  await a.receipts.waitCount(2, (r) => r.id === sent.id && r.state === "accepted", "two receipts");
  // A message from B to A after the group message: A would have got the group message first.
  const marker = await b.client.send(ea.id, "marker");
  await a.messages.waitFor(byId(marker.id), "the marker");
  assert.equal(a.messages.count(byId(sent.id)), 0, "the sender does not receive its own");
  assert.equal(b.messages.count(byId(sent.id)), 1);
  assert.equal(c.messages.count(byId(sent.id)), 1);
});

test("checklist 9: talk passwords: refused, unlocked, void after a change, and replies allowed", async () => {
  const [ea, eb, ec] = [await h.endpoint(), await h.endpoint(), await h.endpoint()];
  const a = await online(h.info.ws_url, ea);
  const b = await online(h.info.ws_url, eb);
  const c = await online(h.info.ws_url, ec);
  await b.client.setTalkPassword("talk-1");
  assert.equal((await b.client.getSelf()).talkPasswordSet, true);

  await assert.rejects(a.client.send(eb.id, "no password"), code("talk_password_required"));
  await assert.rejects(
    a.client.send(eb.id, "wrong", { talkPassword: "nope" }),
    code("talk_password_invalid"),
  );
  await assert.rejects(a.client.unlock(eb.id, "nope"), code("talk_password_invalid"));
  await a.client.unlock(eb.id, "talk-1");
  const ok = await a.client.send(eb.id, "after unlock");
  await b.messages.waitFor(byId(ok.id), "the unlocked message");

  // A new talk password voids earlier grants.
  await b.client.setTalkPassword("talk-2");
  await assert.rejects(a.client.send(eb.id, "stale grant"), code("talk_password_required"));
  const withPw = await a.client.send(eb.id, "with the new password", { talkPassword: "talk-2" });
  await b.messages.waitFor(byId(withPw.id), "the message with the password");

  // B writes to C first: C may answer without B's talk password.
  await assert.rejects(c.client.send(eb.id, "cold"), code("talk_password_required"));
  const first = await b.client.send(ec.id, "hello C");
  await c.messages.waitFor(byId(first.id), "B's message");
  const reply = await c.client.send(eb.id, "reply to B");
  await b.messages.waitFor(byId(reply.id), "C's reply");
});
