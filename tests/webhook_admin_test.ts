// An endpoint's webhook over the admin API (issue 34): the secret is shown once, the SSRF rule
// refuses private and loopback targets unless `webhooks.allow` lists them, and the test event
// reaches a real receiver signed with the current secret.
import assert from "node:assert/strict";
import { adminSession, auditLines } from "./helpers/admin.ts";
import { startReceiver } from "./helpers/webhook_receiver.ts";
import { online, type TestClient } from "./helpers/client.ts";
import { PW, sendNowFrame, waitReceipt } from "./helpers/messaging.ts";

type Item = Record<string, unknown>;
const W = "/api/admin/endpoints/dev1/webhook";

Deno.test("a webhook to a loopback or private address is refused unless webhooks.allow lists it", async () => {
  const { t, admin } = await adminSession();
  try {
    await t.createEndpoint("dev1", "device-password-1");
    for (
      const url of [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]:9/hook",
        "ftp://example.com/x",
        "https://user:pw@example.com/x",
      ]
    ) {
      const r = await admin.put(W, { url });
      assert.equal(r.status, 400, `${url}: ${r.text}`);
      assert.equal(r.code, "bad_request");
    }
    const r = await admin.put(W, { url: "http://127.0.0.1:9/hook" });
    assert.match(r.text, /webhooks\.allow/);
    const none = await admin.get(W);
    assert.equal(none.status, 200);
    assert.equal(none.data.item, null, "a refused URL stores no webhook");
  } finally {
    await t.close();
  }
});

Deno.test("the secret is shown once; get, change, rotate, test event and delete work", async () => {
  const ref = { secret: "" };
  const receiver = startReceiver(ref);
  const { t, admin } = await adminSession({ webhooks: { allow: ["127.0.0.1"] } });
  try {
    await t.createEndpoint("dev1", "device-password-1");
    assert.equal(
      (await admin.put("/api/admin/endpoints/nobody/webhook", { url: receiver.url })).status,
      404,
    );
    const made = await admin.put(W, { url: receiver.url });
    assert.equal(made.status, 200, made.text);
    const secret = made.data.secret as string;
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    ref.secret = secret;
    const item = made.data.item as Item;
    assert.deepEqual([item.endpoint_id, item.url, item.enabled], ["dev1", receiver.url, true]);
    assert.equal(item.secret_hint, `${secret.slice(0, 6)}…${secret.slice(-4)}`);

    const got = await admin.get(W);
    assert.equal(got.status, 200);
    assert.ok(!got.text.includes(secret), "the secret is never shown again");
    assert.deepEqual(got.data.recent, []);

    const changed = await admin.put(W, { url: `${receiver.url}?v=2`, enabled: false });
    assert.equal(changed.status, 200);
    assert.equal(changed.data.secret, undefined, "a change keeps the secret");
    assert.equal((changed.data.item as Item).enabled, false);

    const rotated = await admin.put(W, { url: receiver.url, rotate_secret: true });
    const secret2 = rotated.data.secret as string;
    assert.ok(secret2 !== secret && secret2.startsWith("whsec_"));
    ref.secret = secret2;

    const test = await admin.post(`${W}/test`);
    assert.equal(test.status, 200, test.text);
    const attempt = test.data.attempt as Item;
    assert.deepEqual([attempt.kind, attempt.ok, attempt.status, attempt.error], [
      "test",
      true,
      200,
      "",
    ]);
    await receiver.until(() => receiver.hits.length === 1, "the test event");
    const hit = receiver.hits[0];
    assert.ok(hit.signed, "signed with the rotated secret");
    assert.equal(hit.id, attempt.event_id);
    assert.deepEqual([hit.event.type, hit.event.endpoint_id], ["test", "dev1"]);
    const recent = (await admin.get(W)).data.recent as Item[];
    assert.deepEqual(recent.map((a) => a.event_id), [attempt.event_id]);

    // A failing receiver is reported, not thrown.
    receiver.behave(() => 503);
    const failed = (await admin.post(`${W}/test`)).data.attempt as Item;
    assert.deepEqual([failed.ok, failed.status, failed.error], [false, 503, "http_503"]);

    assert.equal((await admin.delete(W)).status, 200);
    assert.equal((await admin.get(W)).data.item, null);
    assert.equal((await admin.get("/api/admin/endpoints/nobody/webhook")).status, 404);
    assert.equal((await admin.delete(W)).status, 404);
    const actions = auditLines(t).map((l) => l.action);
    for (const a of ["endpoint.webhook_put", "endpoint.webhook_test", "endpoint.webhook_delete"]) {
      assert.ok(actions.includes(a), `audit ${a}`);
    }
    for (const l of t.logs) assert.ok(!JSON.stringify(l).includes(secret2), "no secret in logs");
  } finally {
    await t.close();
    await receiver.close();
  }
});

Deno.test("a message to an endpoint with only a webhook is POSTed, acked by the 2xx, and its receipt reaches the sender", async () => {
  const ref = { secret: "" };
  const receiver = startReceiver(ref);
  const { t, admin } = await adminSession({
    webhooks: { allow: ["127.0.0.1"] },
    metrics: { token: "metrics-token" },
  });
  const clients: TestClient[] = [];
  try {
    await t.createEndpoint("dev1", PW);
    await t.createEndpoint("app", PW);
    const made = await admin.put(W, { url: receiver.url });
    ref.secret = made.data.secret as string;
    const { client: app } = await online(t.wsUrl, "app", PW);
    clients.push(app);
    // Not kept: it still waits for the webhook instead of being dropped as offline.
    assert.equal((await app.request(sendNowFrame("h1", "dev1", "to the webhook"))).ok, true);
    await receiver.until(() => receiver.delivered().size === 1, "the msg event");
    const hit = [...receiver.delivered().values()][0];
    assert.ok(hit.signed);
    assert.deepEqual([hit.event.type, hit.event.id, hit.event.from], ["msg", "h1", "app"]);
    assert.equal((await waitReceipt(app, "h1")).state, "accepted");
    const recent = (await admin.get(W)).data.recent as Item[];
    assert.deepEqual(recent.map((a) => [a.kind, a.ok]), [["msg", true]]);

    // dev1 sends over HTTP (the admin API on its behalf); app acks; the receipt goes to the webhook.
    const sent = await admin.post("/api/admin/endpoints/dev1/messages", {
      id: "from-dev1",
      to: { kind: "endpoint", id: "app" },
      body: { enc: "utf8", data: "over http" },
    });
    assert.equal(sent.status, 200, sent.text);
    await app.waitFrame((f) => f.type === "msg" && f.id === "from-dev1", "from-dev1");
    assert.equal((await app.request({ type: "ack", from: "dev1", id: "from-dev1" })).ok, true);
    await receiver.until(
      () => receiver.hits.some((h) => h.event.type === "receipt" && h.event.id === "from-dev1"),
      "the receipt of the HTTP send",
    );
    const receipt = receiver.hits.find((h) => h.event.type === "receipt")!;
    assert.deepEqual([receipt.event.state, receipt.event.endpoint_id], ["accepted", "app"]);
    assert.equal(receipt.id, `rcpt_${receipt.event.receipt_id}`);

    const metrics = await fetch(`${t.httpUrl}/metrics`, {
      headers: { authorization: "Bearer metrics-token" },
    }).then((r) => r.text());
    assert.match(metrics, /nixmsg_webhook_attempts_total\{kind="msg",result="ok"\} 1/);
    assert.match(metrics, /nixmsg_webhook_latency_seconds_count \d+/);
    assert.match(metrics, /nixmsg_webhook_backlog\{kind="msg"\} 0/);
  } finally {
    for (const c of clients) await c.close();
    await t.close();
    await receiver.close();
  }
});
