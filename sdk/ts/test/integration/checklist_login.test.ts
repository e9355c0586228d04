// Checklist items 1, 13 and 15 (spec 9 接入清单): login, password change, session tokens.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { closeAll, online, track } from "../helpers/clients.ts";
import { within } from "../helpers/events.ts";
import { Harness } from "../helpers/harness.ts";
import { Proxy } from "../helpers/proxy.ts";
import { code } from "../helpers/errors.ts";

/** Longer than the first reconnect delay (1 s + 30% jitter): a reconnect would show by then. */
const NO_RECONNECT_WINDOW_MS = 2500;

let h: Harness;
before(async () => {
  h = await Harness.start();
});
after(async () => {
  await closeAll();
  await h?.stop();
});

test("checklist 1: log in with the password and receive the handshake parameters", async () => {
  const ep = await h.endpoint();
  const a = await online(h.info.ws_url, ep);
  const info = a.client.serverInfo!;
  assert.equal(info.maxBodyBytes, 262144);
  assert.equal(info.maxMetaBytes, 4096);
  assert.equal(info.maxFrameBytes, 786432);
  assert.equal(info.ackTimeoutSeconds, 2, "the harness config");
  assert.ok(info.maxTtlSeconds > 0 && info.maxScheduleSeconds > 0);
  assert.match(info.serverVersion, /^\d+\.\d+\.\d+/);
  assert.ok(Math.abs(a.client.clockOffsetMs) < 1000, `offset ${a.client.clockOffsetMs}`);
  assert.deepEqual(a.states.items.map((s) => s.state), ["connecting", "online"]);
  assert.equal(a.sessions.items.length, 1);
  assert.match(a.sessions.items[0]!, /^nst_/);
  assert.equal(a.client.sessionToken, a.sessions.items[0]);
  assert.equal((await a.client.getSelf()).id, ep.id);

  // Raw TCP only when asked for; the same handshake.
  const tcp = await online(h.info.ws_url, ep, { transport: "tcp" });
  assert.equal(tcp.client.serverInfo!.maxFrameBytes, 786432);
  assert.equal((await tcp.client.getSelf()).id, ep.id);
});

test("checklist 13: after a password change the new password works, the old fails, and the SDK stops", async () => {
  const ep = await h.endpoint();
  const a = await online(h.info.ws_url, ep);
  await assert.rejects(
    a.client.changeLoginPassword("not-the-password", "new-password-1"),
    code("unauthorized"),
  );
  await a.client.changeLoginPassword(ep.password, "new-password-1");
  assert.equal(a.sessions.items.length, 2, "the change issues a new token");
  assert.notEqual(a.sessions.items[1], a.sessions.items[0]);
  assert.equal(a.client.sessionToken, a.sessions.items[1]);
  await a.client.close();

  const b = await online(h.info.ws_url, { id: ep.id, password: "new-password-1" });
  assert.equal((await b.client.getSelf()).id, ep.id);
  await b.client.close();

  const proxy = await Proxy.start(h.address);
  try {
    const old = track(`ws://${proxy.address}/mqtt`, ep.id, { password: ep.password });
    const queued = old.client.send(ep.id, "queued before the refusal");
    const ev = await old.states.waitFor((s) => s.state === "auth_failed", "auth_failed");
    assert.equal(ev.reason, "bad_credentials");
    await assert.rejects(queued, code("auth_failed"));
    await assert.rejects(old.client.ready(), code("auth_failed"));
    assert.equal(proxy.accepted.count(), 1);
    await proxy.accepted.expectNone(
      () => true,
      "a reconnect after auth_failed",
      NO_RECONNECT_WINDOW_MS,
    );
    assert.equal(old.client.state, "auth_failed");
  } finally {
    await proxy.close();
  }
});

test("checklist 15: session tokens: reconnect with the token; a password login elsewhere kills it; logout kills it", async () => {
  const ep = await h.endpoint();
  const proxy = await Proxy.start(h.address);
  try {
    // Password login through a proxy we can cut: the SDK's own reconnect uses the token.
    const a = await online(`ws://${proxy.address}/mqtt`, ep);
    const token = a.sessions.items[0]!;
    assert.match(token, /^nst_/);
    proxy.cut();
    await a.states.waitFor((s) => s.state === "reconnecting", "reconnecting");
    await a.states.waitCount(2, (s) => s.state === "online", "online again");
    assert.equal(a.sessions.items.length, 1, "a token reconnect issues no new token");
    assert.equal(a.client.sessionToken, token);
    await a.client.close();

    // An application restart: connect with the saved token.
    const b = track(h.info.ws_url, ep.id, { sessionToken: token });
    await within(b.client.ready(), 15_000, "token login");
    assert.equal(b.sessions.items.length, 0);

    // A password login elsewhere takes over (0x8E) and replaces the token.
    const c = await online(h.info.ws_url, ep);
    const kicked = await b.states.waitFor((s) => s.state === "kicked", "kicked");
    assert.equal(kicked.reason, "taken_over");
    const newToken = c.sessions.items[0]!;
    assert.notEqual(newToken, token);

    const stale = track(`ws://${proxy.address}/mqtt`, ep.id, { sessionToken: token });
    const refused = await stale.states.waitFor((s) => s.state === "auth_failed", "auth_failed");
    assert.equal(refused.reason, "session_invalid");
    const attempts = proxy.accepted.count();
    await proxy.accepted.expectNone(
      () => true,
      "a reconnect after session_invalid",
      NO_RECONNECT_WINDOW_MS,
    );
    assert.equal(proxy.accepted.count(), attempts);

    // logout invalidates the token and stops the client.
    await c.client.logout();
    const off = await c.states.waitFor((s) => s.state === "offline", "offline");
    assert.equal(off.reason, "logout");
    await assert.rejects(c.client.getSelf(), code("closed"));
    const after = track(h.info.ws_url, ep.id, { sessionToken: newToken });
    const gone = await after.states.waitFor((s) => s.state === "auth_failed", "auth_failed");
    assert.equal(gone.reason, "session_invalid");
  } finally {
    await proxy.close();
  }
});
