// Webhook isolation (issue 34): 1,000 events to a receiver that answers after 2 s must not slow
// the MQTT path. A real `nixmsg serve` child, a real receiver on 127.0.0.1, MQTT.js clients.
import assert from "node:assert/strict";
import { online, type TestClient } from "./helpers/client.ts";
import { startServerProcess } from "./helpers/server_process.ts";
import { prepareHome } from "./bench/_load_util.ts";
import { KEEP, PW, sendNowFrame, waitMsg } from "./helpers/messaging.ts";
import { startReceiver } from "./helpers/webhook_receiver.ts";
import { openDb } from "../server/store/db.ts";
import { dbPath } from "../server/app/paths.ts";
import { putWebhook } from "../server/store/ops/webhooks.ts";
import { newWebhookSecret } from "../server/webhooks/signature.ts";

const EVENTS = 1000;
const SLOW_MS = 2000;

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

Deno.test({
  name: "1,000 events to a webhook that answers after 2 s leave MQTT latency alone",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const secret = newWebhookSecret();
  const receiver = startReceiver({ secret });
  receiver.behave(() => ({ status: 200, delayMs: SLOW_MS }));
  const home = await prepareHome(
    {
      webhooks: {
        allow: ["127.0.0.1/32"],
        concurrency: 100,
        connect_timeout_seconds: 2,
        response_timeout_seconds: 10,
      },
    },
    ["a", "hook", "c1", "c2"],
    PW,
  );
  const db = openDb(dbPath(home.dataDir));
  putWebhook(db, { endpointId: "hook", url: receiver.url, enabled: true, secret }, Date.now());
  db.close();
  const server = await startServerProcess(home);
  const clients: TestClient[] = [];
  const session = async (id: string) => {
    const { client } = await online(`ws://127.0.0.1:${server.port}/mqtt`, id, PW);
    clients.push(client);
    return client;
  };
  try {
    const [a, c1, c2] = [await session("a"), await session("c1"), await session("c2")];
    /** One MQTT message c1 → c2, send to arrival, in ms. */
    const probe = async (id: string) => {
      const t0 = performance.now();
      await c1.request(sendNowFrame(id, "c2", "p"));
      await waitMsg(c2, id);
      const ms = performance.now() - t0;
      await c2.request({ type: "ack", from: "c1", id });
      return ms;
    };
    const baseline: number[] = [];
    for (let i = 0; i < 20; i++) baseline.push(await probe(`base${i}`));
    // MQTT probes run the whole time the webhook backlog builds up and drains.
    const loaded: number[] = [];
    let draining = true;
    const probing = (async () => {
      for (let i = 0; draining; i++) {
        loaded.push(await probe(`load${i}`));
        // About 10 probes a second, well inside c1's request bucket (spec 6.10: 50/s).
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    for (let i = 0; i < EVENTS; i++) {
      let r = await a.request(sendNowFrame(`w${i}`, "hook", `w ${i}`, KEEP));
      // The sender's request bucket (spec 6.10) refills at its own pace: resend the same id.
      while ((r.error as Record<string, unknown> | undefined)?.code === "rate_limited") {
        await new Promise((res) => setTimeout(res, 100));
        r = await a.request(sendNowFrame(`w${i}`, "hook", `w ${i}`, KEEP));
      }
      assert.equal(r.ok, true, `${i} ${JSON.stringify(r)}`);
    }
    await receiver.until(() => receiver.delivered().size >= EVENTS, "1,000 events", 120_000);
    draining = false;
    await probing;
    const lost = EVENTS - receiver.delivered().size;
    assert.equal(lost, 0, `lost ${lost}`);
    baseline.sort((x, y) => x - y);
    loaded.sort((x, y) => x - y);
    const figures = {
      baseline_p50: Math.round(quantile(baseline, 0.5)),
      loaded_p50: Math.round(quantile(loaded, 0.5)),
      loaded_p99: Math.round(quantile(loaded, 0.99)),
      probes: loaded.length,
    };
    console.log(JSON.stringify(figures));
    assert.ok(loaded.length >= 5, `only ${loaded.length} probes ran during the drain`);
    // A slow webhook holds its own slots only: MQTT stays far below the webhook's 2 s.
    assert.ok(figures.loaded_p50 < 250, JSON.stringify(figures));
    assert.ok(figures.loaded_p99 < 1000, JSON.stringify(figures));
  } finally {
    for (const c of clients) await c.close();
    assert.equal(await server.stop(), 0);
    await receiver.close();
    await home.cleanup();
  }
});
