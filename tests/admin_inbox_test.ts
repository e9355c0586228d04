// The live inbox (issue 32): GET /api/admin/endpoints/{id}/inbox streams, as Server-Sent Events,
// the frames the server pushes to that endpoint, without bodies, and never acks them: the device
// still gets the message and its delivery stays pending until the device acks.
import assert from "node:assert/strict";
import { adminSession, type AdminTestServer } from "./helpers/admin.ts";
import { online } from "./helpers/client.ts";
import { openApiChecker } from "./helpers/openapi_check.ts";

const PW = "device-pass-123";

interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/** Opens the inbox stream and collects its events. */
async function openInbox(t: AdminTestServer, cookie: string, id: string) {
  const ctrl = new AbortController();
  const res = await fetch(`${t.adminUrl}/api/admin/endpoints/${id}/inbox`, {
    headers: { Cookie: cookie },
    signal: ctrl.signal,
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
  const events: SseEvent[] = [];
  let raw = "";
  const waiters = new Set<() => void>();
  const reading = (async () => {
    let buf = "";
    try {
      for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
        raw += chunk;
        buf += chunk;
        let end;
        while ((end = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event !== undefined && data !== undefined) {
            events.push({ event, data: JSON.parse(data) });
            for (const w of [...waiters]) w();
          }
        }
      }
    } catch {
      // aborted
    }
  })();
  const wait = (pred: (e: SseEvent) => boolean, what: string) =>
    new Promise<SseEvent>((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`no ${what} in ${JSON.stringify(events)}`));
      }, 8000);
      const check = () => {
        const found = events.find(pred);
        if (found === undefined) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve(found);
      };
      waiters.add(check);
      check();
    });
  return {
    events,
    raw: () => raw,
    /** Settles when the server ends the stream. */
    ended: reading,
    wait,
    close: async () => {
      ctrl.abort();
      await reading;
    },
  };
}

Deno.test("the live inbox shows a message pushed to the endpoint without its body and does not ack it", async () => {
  const { t, admin } = await adminSession();
  try {
    await t.createEndpoint("sender", PW);
    await t.createEndpoint("device", PW);
    const { client: device } = await online(t.wsUrl, "device", PW);
    const inbox = await openInbox(t, admin.cookie!, "device");
    try {
      const hello = await inbox.wait((e) => e.event === "hello", "hello");
      assert.equal(hello.data.endpoint_id, "device");
      assert.equal(hello.data.online, true);
      const stream = hello.data.stream as string;

      const { client: sender } = await online(t.wsUrl, "sender", PW);
      const sent = await sender.request({
        type: "send",
        id: "inbox-1",
        to: { kind: "endpoint", id: "device" },
        body: { enc: "utf8", content_type: "text/plain", data: "the secret body" },
        meta: { note: "secret meta" },
        offline: { keep: true, ttl_seconds: 3600 },
      });
      assert.equal(sent.ok, true, JSON.stringify(sent));
      const msg = await inbox.wait(
        (e) => e.event === "frame" && e.data.type === "msg",
        "msg frame",
      );
      const frame = msg.data.frame as Record<string, unknown>;
      assert.equal(frame.id, "inbox-1");
      assert.equal(frame.from, "sender");
      assert.deepEqual(msg.data.body, { enc: "utf8", content_type: "text/plain", length: 15 });
      assert.ok(!inbox.raw().includes("secret"), "no body or meta in the stream");

      // The device got it, and the delivery is still pending: the inbox did not ack it.
      const got = await device.waitFrame((f) => f.type === "msg" && f.id === "inbox-1", "msg");
      assert.deepEqual(got.body, {
        enc: "utf8",
        content_type: "text/plain",
        data: "the secret body",
      });
      const records = await admin.get("/api/admin/messages?id=inbox-1");
      const [rec] = records.data.items as { counts: Record<string, number> }[];
      assert.equal(rec.counts.pending, 1, "still pending until the device acks");

      // Opening the body is an explicit, audited request.
      const opened = await admin.get(`/api/admin/endpoints/device/inbox/${stream}/${msg.data.n}`);
      assert.equal(opened.status, 200);
      assert.equal(opened.text, "the secret body");
      assert.equal(opened.headers.get("x-nixmsg-body-enc"), "utf8");
      assert.match(opened.headers.get("content-type") ?? "", /^text\/plain/);
      await t.waitLog((l) => l.msg === "audit" && l.action === "endpoint.inbox_body");
      const other = await admin.get(`/api/admin/endpoints/sender/inbox/${stream}/${msg.data.n}`);
      assert.equal(other.code, "not_found", "a body is opened only through its own endpoint");

      // The device's ack goes through as usual; the inbox sees the receipt-free path end.
      const ack = await device.request({ type: "ack", from: "sender", id: "inbox-1" });
      assert.equal(ack.ok, true, JSON.stringify(ack));
      await inbox.wait((e) => e.event === "frame" && e.data.type === "resp", "the ack's resp");

      await device.close();
      const offline = await inbox.wait((e) => e.event === "state", "offline state");
      assert.equal(offline.data.online, false);
      await sender.close();
      // Every event so far (hello, frames, state) is one the document declares.
      const checked = openApiChecker().check(
        "GET",
        "/api/admin/endpoints/device/inbox",
        200,
        "text/event-stream",
        inbox.raw(),
      );
      assert.equal(checked, null);
      // An event without the fields of its schema is refused: the check does look at them.
      const wrong = 'event: frame\ndata: {"n":1}\n\n';
      const path = "/api/admin/endpoints/device/inbox";
      assert.notEqual(openApiChecker().check("GET", path, 200, "text/event-stream", wrong), null);
    } finally {
      await inbox.close();
    }
    // The server sees the stream close a moment after the client drops it.
    const deadline = Date.now() + 8000;
    while (t.server.app.inbox.watchers > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(t.server.app.inbox.watchers, 0, "a closed stream stops watching");
    const missing = await admin.get("/api/admin/endpoints/nobody/inbox");
    assert.equal(missing.code, "not_found");
  } finally {
    await t.close();
  }
});

Deno.test("the live inbox ends when its session ends, before showing another frame", async () => {
  const { t, admin } = await adminSession();
  try {
    await t.createEndpoint("sender", PW);
    await t.createEndpoint("device", PW);
    const { client: device } = await online(t.wsUrl, "device", PW);
    const { client: sender } = await online(t.wsUrl, "sender", PW);
    const inbox = await openInbox(t, admin.cookie!, "device");
    try {
      await inbox.wait((e) => e.event === "hello", "hello");
      assert.equal((await admin.post("/api/admin/logout")).status, 200);
      const sent = await sender.request({
        type: "send",
        id: "after-logout",
        to: { kind: "endpoint", id: "device" },
        body: { enc: "utf8", data: "x" },
      });
      assert.equal(sent.ok, true, JSON.stringify(sent));
      await device.waitFrame((f) => f.type === "msg" && f.id === "after-logout", "msg");
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        inbox.ended,
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error("the stream outlived its session")), 8000);
        }),
      ]).finally(() => clearTimeout(timer));
      assert.ok(!inbox.events.some((e) => e.event === "frame"), "no frame after the logout");
    } finally {
      await inbox.close();
      await device.close();
      await sender.close();
    }
  } finally {
    await t.close();
  }
});

Deno.test("the live inbox shows the receipts, revoked frames and presence pushed to the endpoint", async () => {
  const { t, admin } = await adminSession();
  try {
    await t.createEndpoint("peer", PW);
    await t.createEndpoint("device", PW);
    const { client: device } = await online(t.wsUrl, "device", PW);
    const { client: peer } = await online(t.wsUrl, "peer", PW);
    const inbox = await openInbox(t, admin.cookie!, "device");
    const frameOf = (type: string) =>
      inbox.wait((e) => e.event === "frame" && e.data.type === type, `${type} frame`);
    try {
      await inbox.wait((e) => e.event === "hello", "hello");
      // Presence: the device watches the peer, which goes offline and comes back.
      const watch = await device.request({ type: "presence.watch", ids: ["peer"] });
      assert.equal(watch.ok, true, JSON.stringify(watch));

      // A receipt: the device's message with `receipt` is acked by the peer.
      const sent = await device.request({
        type: "send",
        id: "with-receipt",
        to: { kind: "endpoint", id: "peer" },
        body: { enc: "utf8", data: "hello peer" },
        receipt: true,
      });
      assert.equal(sent.ok, true, JSON.stringify(sent));
      await peer.waitFrame((f) => f.type === "msg" && f.id === "with-receipt", "msg at peer");
      assert.equal(
        (await peer.request({ type: "ack", from: "device", id: "with-receipt" })).ok,
        true,
      );
      const receipt = (await frameOf("receipt")).data.frame as Record<string, unknown>;
      assert.deepEqual([receipt.id, receipt.endpoint_id, receipt.state], [
        "with-receipt",
        "peer",
        "accepted",
      ]);

      // A revoked frame: the peer recalls a message the device got and has not acked.
      const kept = await peer.request({
        type: "send",
        id: "to-recall",
        to: { kind: "endpoint", id: "device" },
        body: { enc: "utf8", data: "take it back" },
        offline: { keep: true, ttl_seconds: 3600 },
      });
      assert.equal(kept.ok, true, JSON.stringify(kept));
      await device.waitFrame((f) => f.type === "msg" && f.id === "to-recall", "msg at device");
      assert.equal((await peer.request({ type: "recall", id: "to-recall" })).ok, true);
      const revoked = (await frameOf("revoked")).data.frame as Record<string, unknown>;
      assert.deepEqual([revoked.id, revoked.from, revoked.reason], [
        "to-recall",
        "peer",
        "recalled",
      ]);

      await peer.close();
      const presence = (await frameOf("presence")).data.frame as Record<string, unknown>;
      assert.deepEqual([presence.id, presence.online], ["peer", false]);
    } finally {
      await inbox.close();
      await device.close();
      await peer.close().catch(() => undefined);
    }
  } finally {
    await t.close();
  }
});
