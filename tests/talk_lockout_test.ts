// Talk password lockouts over MQTT (spec 5 锁定): 10 wrong passwords in 5 minutes lock a
// sender -> target pair; 50 wrong passwords in an hour from anyone lock the target. While
// locked, unlock, a send with a password and a group invite with a password are `rate_limited`;
// existing grants keep working; the target changing its password clears the count.
import assert from "node:assert/strict";
import { online, type TestClient } from "./helpers/client.ts";
import { startTestServer, type TestServer } from "./helpers/test_server.ts";

const PW = "device-password-1";
const TALK = "open-sesame";

const code = (f: Record<string, unknown>) => (f.error as Record<string, unknown> | undefined)?.code;

let seq = 0;
function send(to: string, talkPassword?: string): Record<string, unknown> {
  return {
    type: "send",
    id: `m${++seq}`,
    to: { kind: "endpoint", id: to },
    body: { enc: "utf8", data: "hi" },
    delay_ms: 0,
    ...(talkPassword === undefined ? {} : { talk_password: talkPassword }),
  };
}

async function connectAll(t: TestServer, ids: readonly string[]): Promise<TestClient[]> {
  for (const id of ids) await t.createEndpoint(id, PW);
  const out: TestClient[] = [];
  for (let i = 0; i < ids.length; i += 10) {
    const batch = ids.slice(i, i + 10).map((id) => online(t.wsUrl, id, PW));
    out.push(...(await Promise.all(batch)).map((o) => o.client));
  }
  return out;
}

async function setTalk(c: TestClient, password: string): Promise<void> {
  const r = await c.request({ type: "self.talk_password", talk_password: password });
  assert.equal(r.ok, true, JSON.stringify(r));
}

Deno.test("ten wrong talk passwords lock that sender and target pair but no other sender", async () => {
  const t = await startTestServer();
  const clients: TestClient[] = [];
  try {
    const [target, guesser, other] = await connectAll(t, ["target", "guesser", "other"]);
    clients.push(target, guesser, other);
    await setTalk(target, TALK);
    for (let i = 1; i <= 10; i++) {
      const r = await guesser.request(send("target", `wrong-${i}`));
      assert.equal(code(r), "talk_password_invalid", `guess ${i}`);
    }
    // spec 5: locked now, so even the right password is refused without hashing.
    assert.equal(code(await guesser.request(send("target", TALK))), "rate_limited");
    const unlock = { type: "unlock", endpoint_id: "target", talk_password: TALK };
    assert.equal(code(await guesser.request(unlock)), "rate_limited");
    const created = await guesser.request({
      type: "group.create",
      name: "g",
      members: [{ id: "target", talk_password: TALK }],
    });
    assert.equal(created.ok, true, JSON.stringify(created));
    assert.deepEqual(created.data, {
      group_id: (created.data as { group_id: string }).group_id,
      added: [],
      failed: [{ id: "target", code: "rate_limited" }],
    });
    // Without a password the answer stays talk_password_required: there is nothing to verify.
    assert.equal(code(await guesser.request(send("target"))), "talk_password_required");
    // Another sender is not affected by this pair's lock.
    const ok = await other.request(send("target", TALK));
    assert.equal(ok.ok, true, JSON.stringify(ok));
    assert.equal((await other.request(unlock)).ok, true);
  } finally {
    for (const c of clients) await c.close();
    await t.close();
  }
});

Deno.test("fifty wrong talk passwords from fifty senders lock the target until it changes its password", async () => {
  const t = await startTestServer();
  const clients: TestClient[] = [];
  try {
    const guesserIds = Array.from({ length: 50 }, (_, i) => `g${String(i).padStart(2, "0")}`);
    const [target, holder, fresh, ...guessers] = await connectAll(t, [
      "target",
      "holder",
      "fresh",
      ...guesserIds,
    ]);
    clients.push(target, holder, fresh, ...guessers);
    await setTalk(target, TALK);
    // `holder` earns a grant before the lock.
    const granted = await holder.request({
      type: "unlock",
      endpoint_id: "target",
      talk_password: TALK,
    });
    assert.equal(granted.ok, true, JSON.stringify(granted));
    // One wrong guess each: no pair reaches 10, only the per-target total reaches 50.
    for (let i = 0; i < guessers.length; i += 10) {
      const answers = await Promise.all(
        guessers.slice(i, i + 10).map((g) => g.request(send("target", `guess-${g.id}`))),
      );
      for (const a of answers) assert.equal(code(a), "talk_password_invalid");
    }
    // spec 5: the target's talk password checks are paused for everyone.
    assert.equal(code(await fresh.request(send("target", TALK))), "rate_limited");
    assert.equal(
      code(await fresh.request({ type: "unlock", endpoint_id: "target", talk_password: TALK })),
      "rate_limited",
    );
    const created = await fresh.request({
      type: "group.create",
      name: "invite",
      members: [{ id: "target", talk_password: TALK }, { id: "holder" }],
    });
    assert.equal(created.ok, true, JSON.stringify(created));
    const data = created.data as { group_id: string; added: string[]; failed: unknown[] };
    assert.deepEqual(data.added, ["holder"]);
    assert.deepEqual(data.failed, [{ id: "target", code: "rate_limited" }]);
    const added = await fresh.request({
      type: "group.add",
      group_id: data.group_id,
      members: [{ id: "target", talk_password: TALK }],
    });
    assert.deepEqual((added.data as { failed: unknown[] }).failed, [
      { id: "target", code: "rate_limited" },
    ]);
    // An existing grant is not affected, even with a wrong password attached (spec 6.2).
    const viaGrant = await holder.request(send("target"));
    assert.equal(viaGrant.ok, true, JSON.stringify(viaGrant));
    assert.equal((await holder.request(send("target", "wrong"))).ok, true);
    const viaGrantId = (viaGrant.data as { id: string }).id;
    await target.waitFrame((f) => f.type === "msg" && f.from === "holder" && f.id === viaGrantId);
    // The target changes its password: the count and the lock are gone.
    await setTalk(target, "new-secret");
    const after = await fresh.request(send("target", "new-secret"));
    assert.equal(after.ok, true, JSON.stringify(after));
    assert.equal(
      (await guessers[0].request({
        type: "unlock",
        endpoint_id: "target",
        talk_password: "new-secret",
      })).ok,
      true,
    );
    // The change voided the holder's grant (spec 6.6), so it now needs the new password.
    assert.equal(code(await holder.request(send("target"))), "talk_password_required");
  } finally {
    for (const c of clients) await c.close();
    await t.close();
  }
});
