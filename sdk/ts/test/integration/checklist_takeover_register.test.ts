// Checklist items 10 and 12 (spec 9 接入清单): takeover by a second login, and registration.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { NixMsgClient, NixMsgError } from "@nixevol/nixmsg";
import { closeAll, online, track } from "../helpers/clients.ts";
import { Harness } from "../helpers/harness.ts";
import { Proxy } from "../helpers/proxy.ts";
import { code } from "../helpers/errors.ts";

/** Longer than the first reconnect delay (1 s + 30% jitter). */
const NO_RECONNECT_WINDOW_MS = 2500;

let h: Harness;
before(async () => {
  h = await Harness.start();
});
after(async () => {
  await closeAll();
  await h?.stop();
});

test("checklist 10: a second login kicks the first, which does not reconnect", async () => {
  const ep = await h.endpoint();
  const proxy = await Proxy.start(h.address);
  try {
    const first = await online(`ws://${proxy.address}/mqtt`, ep);
    const second = await online(h.info.ws_url, ep, { transport: "tcp" });
    const kicked = await first.states.waitFor((s) => s.state === "kicked", "kicked");
    assert.equal(kicked.reason, "taken_over");
    assert.equal(kicked.error?.code, "kicked");
    await assert.rejects(first.client.send(ep.id, "after the kick"), code("kicked"));
    await proxy.accepted.expectNone(
      () => true,
      "a reconnect after the kick",
      NO_RECONNECT_WINDOW_MS,
    );
    assert.equal(proxy.accepted.count(), 1);
    assert.equal(first.client.state, "kicked");
    assert.equal(second.client.state, "online");
    assert.equal((await second.client.getSelf()).id, ep.id, "the second stays in");
  } finally {
    await proxy.close();
  }
});

test("checklist 12: registration: closed, wrong code, success, generated password, code change", async () => {
  const url = h.info.ws_url;
  await h.registration(false);
  await assert.rejects(
    NixMsgClient.register(url, "whatever-code", { id: "reg-closed", loginPassword: "password-1" }),
    (e: unknown) => code("registration_closed")(e) && (e as NixMsgError).status === 403,
  );
  await h.registration(true, "code-one-1111");
  await assert.rejects(
    NixMsgClient.register(url, "wrong-code-000", { id: "reg-wrong", loginPassword: "password-1" }),
    code("registration_code_invalid"),
  );

  const id = `reg-${process.pid}`;
  const r = await NixMsgClient.register(url, "code-one-1111", {
    id,
    loginPassword: "password-1",
    name: "门口",
  });
  assert.deepEqual(r, { id });
  const a = await online(url, { id, password: "password-1" });
  const self = await a.client.getSelf();
  assert.equal(self.name, "门口");
  assert.equal(self.source, "self");
  await a.client.close();
  await assert.rejects(
    NixMsgClient.register(url, "code-one-1111", { id, loginPassword: "password-1" }),
    code("id_taken"),
  );

  const gen = await NixMsgClient.register(url, "code-one-1111", { name: "generated" });
  assert.match(gen.id, /^e_/);
  assert.equal(gen.loginPassword?.length, 20);
  const g = await online(url, { id: gen.id, password: gen.loginPassword! });
  await g.client.close();

  await h.registration(true, "code-two-2222");
  await assert.rejects(
    NixMsgClient.register(url, "code-one-1111", { id: "reg-old-code" }),
    code("registration_code_invalid"),
  );
  const again = track(url, id, { password: "password-1" });
  await again.client.ready();
  assert.equal((await again.client.getSelf()).id, id, "registered endpoints still log in");
  const next = await NixMsgClient.register(h.info.tcp_url, "code-two-2222", {});
  assert.match(next.id, /^e_/, "the TCP URL maps to the same HTTP API");
});
