// issue 28 items 6 and 7, against a `nixmsg serve` child: the HTTP send route refuses unknown
// fields at every level with 400 `bad_request` naming the field (the MQTT frame stays lenient);
// every 429 carries Retry-After; successful self-registrations are rated per address.
import assert from "node:assert/strict";
import { online } from "./helpers/client.ts";
import { KEEP, PW, sendFrame } from "./helpers/messaging.ts";
import { runCli, type ServerProcess, startServerProcess } from "./helpers/server_process.ts";
import { prepareHome } from "./bench/_load_util.ts";
import { fetchHttp, type TestResponse } from "../server/net/_test_util.ts";

const ADMIN_PW = "the-admin-password-1";

async function withServer(
  overrides: Record<string, unknown>,
  fn: (
    s: ServerProcess,
    call: (method: string, path: string, body?: unknown) => Promise<TestResponse>,
  ) => Promise<void>,
): Promise<void> {
  const home = await prepareHome(overrides, ["a", "b"], PW);
  const set = await runCli(home, ["admin", "set-password"], `${ADMIN_PW}\n`);
  assert.equal(set.code, 0, set.stderr);
  const server = await startServerProcess(home, 60_000, { launcher: true });
  try {
    const headers = { "Content-Type": "application/json", "X-Nixmsg-Request": "1" };
    const login = await fetchHttp(server.port, "/api/admin/login", {
      method: "POST",
      headers,
      body: JSON.stringify({ username: "admin", password: ADMIN_PW }),
    });
    assert.equal(login.status, 200, login.text);
    const cookie = String(login.headers["set-cookie"]).split(";")[0];
    await fn(server, (method, path, body) =>
      fetchHttp(server.port, path, {
        method,
        headers: { ...headers, Cookie: cookie },
        body: body === undefined ? undefined : JSON.stringify(body),
      }));
  } finally {
    assert.equal(await server.stop(), 0);
    await home.cleanup();
  }
}

const SEND = "/api/admin/endpoints/a/messages";
const good = () => ({ to: { kind: "endpoint", id: "b" }, body: { enc: "utf8", data: "hi" } });

Deno.test("the HTTP send route refuses unknown fields at every level, naming them; the MQTT frame stays lenient", async () => {
  await withServer({}, async (server, call) => {
    const cases: [string, Record<string, unknown>][] = [
      ["ofline", { ...good(), ofline: { keep: true } }],
      ["offline.kep", { ...good(), offline: { kep: true } }],
      ["body.contenttype", { ...good(), body: { enc: "utf8", data: "x", contenttype: "a/b" } }],
      ["to.extra", { ...good(), to: { kind: "endpoint", id: "b", extra: 1 } }],
    ];
    for (const [field, body] of cases) {
      const r = await call("POST", SEND, body);
      assert.equal(r.status, 400, `${field}: ${r.text}`);
      const error = (r.json as { error: { code: string; message: string } }).error;
      assert.equal(error.code, "bad_request");
      assert.ok(error.message.includes(field), `${field}: ${error.message}`);
    }
    // Nothing was sent, and the same fields without the typo are taken.
    const ok = await call("POST", SEND, {
      ...good(),
      offline: { keep: true },
      meta: { any: { x: 1 } },
    });
    assert.equal(ok.status, 200, ok.text);
    const { client } = await online(`mqtt://127.0.0.1:${server.port}`, "a", PW);
    try {
      const r = await client.request(
        sendFrame("m1", "b", "hi", { ...KEEP, ofline: { keep: true } }),
      );
      assert.equal(r.ok, true, JSON.stringify(r));
    } finally {
      await client.close();
    }
  });
});

Deno.test("the send route's 429 carries Retry-After", async () => {
  await withServer({ limits: { requests_per_second: 1 } }, async (_server, call) => {
    let limited: TestResponse | null = null;
    for (let i = 0; i < 10 && limited === null; i++) {
      const r = await call("POST", SEND, good());
      if (r.status === 429) limited = r;
      else assert.equal(r.status, 200, r.text);
    }
    assert.ok(limited !== null, "the rate limit was reached");
    assert.equal((limited.json as { error: { code: string } }).error.code, "rate_limited");
    assert.ok(Number(limited.headers["retry-after"]) >= 1, JSON.stringify(limited.headers));
  });
});

Deno.test("successful registrations are rated per address, with Retry-After; another address still registers", async () => {
  const limits = { registrations_per_ip_per_minute: 5 };
  await withServer({ limits }, async (server, call) => {
    const reg = await call("PUT", "/api/admin/registration", {
      enabled: true,
      code: "reg-code-12345",
    });
    assert.equal(reg.status, 200, reg.text);
    const register = (from: string, i: number) =>
      fetchHttp(server.port, "/api/client/register", {
        method: "POST",
        localAddress: from,
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ registration_code: "reg-code-12345", name: `n${i}` }),
      });
    const statuses: number[] = [];
    let refused: TestResponse | null = null;
    for (let i = 0; i < 8; i++) {
      const r = await register("127.0.0.2", i);
      statuses.push(r.status);
      if (r.status === 429) refused = r;
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429, 429]);
    assert.ok(Number(refused!.headers["retry-after"]) >= 1);
    assert.equal((await register("127.0.0.3", 99)).status, 200);
  });
});
