// Self-registration over HTTP against the real server (spec 6.9, spec 5 锁定, spec 12).
import assert from "node:assert/strict";
import { online } from "./helpers/client.ts";
import { startTestServer, type TestServer } from "./helpers/test_server.ts";
import { Logger } from "../server/log/log.ts";

const CODE = "CODE-1234567890";
const PATH = "/api/client/register";

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  body: { ok: boolean; data?: Record<string, unknown>; error?: { code: string } };
}

/** POSTs `body` (an object is sent as JSON) to the registration endpoint. */
async function register(
  t: TestServer,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const res = await fetch(t.httpUrl + PATH, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) };
}

/** Asserts an error reply of spec 6.9: status, code, and the CORS header every reply carries. */
function assertFails(r: Reply, status: number, code: string, what = code): void {
  assert.equal(r.status, status, `${what}: ${r.text}`);
  assert.equal(r.body.ok, false, what);
  assert.equal(r.body.error?.code, code, what);
  assert.equal(r.headers.get("access-control-allow-origin"), "*", `${what}: CORS`);
}

/** A server with registration on, its log lines kept as text. */
async function openServer(
  overrides: Record<string, unknown> = {},
): Promise<{ t: TestServer; logs: string[] }> {
  const logs: string[] = [];
  const t = await startTestServer(overrides, {
    log: new Logger("debug", {}, (line) => logs.push(line)),
  });
  await t.setSetting("registration_enabled", "true");
  await t.setSetting("registration_code", CODE);
  return { t, logs };
}

Deno.test("registration answers 403 registration_closed until it is enabled, then 403 registration_code_invalid for a wrong code", async () => {
  const t = await startTestServer();
  try {
    assertFails(await register(t, { registration_code: CODE }), 403, "registration_closed");
    await t.setSetting("registration_code", CODE);
    await t.setSetting("registration_enabled", "false");
    assertFails(await register(t, { registration_code: CODE }), 403, "registration_closed");
    await t.setSetting("registration_enabled", "true");
    for (const code of ["CODE-1234567891", "code-1234567890", "", CODE + " "]) {
      assertFails(await register(t, { registration_code: code }), 403, "registration_code_invalid");
    }
    assertFails(await register(t, { name: "no code" }), 403, "registration_code_invalid");
    assertFails(await register(t, "not json"), 403, "registration_code_invalid", "not JSON");
  } finally {
    await t.close();
  }
});

Deno.test("ten wrong codes from one IP answer 429 rate_limited even with the right code, while another IP still registers", async () => {
  const { t } = await openServer({ trusted_proxies: ["127.0.0.1/32"] });
  const guesser = { "X-Forwarded-For": "203.0.113.7" };
  try {
    for (let i = 0; i < 10; i++) {
      const r = await register(t, { registration_code: `WRONG-${i}` }, guesser);
      assertFails(r, 403, "registration_code_invalid", `guess ${i + 1}`);
    }
    assertFails(await register(t, { registration_code: CODE }, guesser), 429, "rate_limited");
    const other = await register(t, { registration_code: CODE, id: "dev1", name: "门口" }, {
      "X-Forwarded-For": "203.0.113.8",
    });
    assert.equal(other.status, 200, other.text);
  } finally {
    await t.close();
  }
});

Deno.test("a successful registration generates an id and a password only when they are left empty, and the device then logs in", async () => {
  const { t } = await openServer();
  try {
    const generated = await register(t, { registration_code: CODE, name: "门口" });
    assert.equal(generated.status, 200, generated.text);
    assert.equal(generated.headers.get("access-control-allow-origin"), "*");
    assert.equal(generated.body.ok, true);
    const data = generated.body.data as { id: string; login_password: string };
    assert.match(data.id, /^e_[0-9a-z]{8}$/);
    assert.ok(typeof data.login_password === "string" && data.login_password.length >= 8);
    const device = await online(t.wsUrl, data.id, data.login_password);
    const self = (await device.client.request({ type: "self.get" })).data as Record<
      string,
      unknown
    >;
    assert.deepEqual([self.id, self.name, self.source], [data.id, "门口", "self"]);
    await device.client.close();

    const chosen = await register(t, {
      registration_code: CODE,
      id: "door-1",
      login_password: "chosen-password-1",
      name: "",
      talk_password: "talk-secret",
    });
    assert.equal(chosen.status, 200, chosen.text);
    assert.deepEqual(chosen.body, { ok: true, data: { id: "door-1" } }, "no password echoed");
    const door = await online(t.tcpUrl, "door-1", "chosen-password-1");
    const doorSelf = (await door.client.request({ type: "self.get" })).data as Record<
      string,
      unknown
    >;
    assert.equal(doorSelf.talk_password_set, true);
    await door.client.close();

    const generatedPassword = await register(t, { registration_code: CODE, id: "door-2" });
    const pw = (generatedPassword.body.data as { login_password: string }).login_password;
    assert.equal((generatedPassword.body.data as { id: string }).id, "door-2");
    const door2 = await online(t.wsUrl, "door-2", pw);
    await door2.client.close();
  } finally {
    await t.close();
  }
});

Deno.test("an existing id answers 409 id_taken, bad fields 400 bad_request, and a body over 4 KiB 400", async () => {
  const { t } = await openServer();
  try {
    await t.createEndpoint("taken", "device-password-1");
    assertFails(await register(t, { registration_code: CODE, id: "taken" }), 409, "id_taken");
    for (
      const [what, fields] of Object.entries({
        idWithSpace: { id: "bad id" },
        idTooLong: { id: "a".repeat(65) },
        idNumber: { id: 12 },
        passwordTooShort: { login_password: "short" },
        passwordLikeToken: { login_password: "nst_abcdefghijkl" },
        passwordTooLong: { login_password: "p".repeat(129) },
        nameTooLong: { name: "名".repeat(65) },
        nameNumber: { name: 5 },
        idList: { id: ["a"] },
        talkPasswordTooLong: { talk_password: "t".repeat(129) },
        talkPasswordNumber: { talk_password: 1234 },
      })
    ) {
      assertFails(
        await register(t, { registration_code: CODE, ...fields }),
        400,
        "bad_request",
        what,
      );
    }
    const big = { registration_code: CODE, name: "n", pad: "x".repeat(4097) };
    assertFails(await register(t, big), 400, "bad_request", "body over 4 KiB");
    // Nothing above was created.
    const n = t.reader.prepare("SELECT count(*) AS n FROM endpoints").get() as {
      n: number;
    };
    assert.equal(n.n, 1);
  } finally {
    await t.close();
  }
});

Deno.test("an OPTIONS preflight answers the CORS headers and sets no cookie", async () => {
  const { t } = await openServer();
  try {
    const res = await fetch(t.httpUrl + PATH, {
      method: "OPTIONS",
      headers: {
        Origin: "https://device.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
      },
    });
    await res.body?.cancel();
    assert.ok(res.status === 204 || res.status === 200, `status ${res.status}`);
    assert.equal(res.headers.get("access-control-allow-origin"), "*");
    assert.match(res.headers.get("access-control-allow-methods") ?? "", /POST/);
    assert.match(res.headers.get("access-control-allow-headers") ?? "", /content-type/i);
    assert.equal(res.headers.get("set-cookie"), null);
    const post = await register(t, { registration_code: CODE }, { Origin: "https://x.example" });
    assert.equal(post.headers.get("set-cookie"), null);
  } finally {
    await t.close();
  }
});

Deno.test("a changed code refuses the old one while endpoints registered with it still log in", async () => {
  const { t } = await openServer();
  try {
    const first = await register(t, {
      registration_code: CODE,
      id: "early",
      login_password: "early-password",
    });
    assert.equal(first.status, 200);
    await t.setSetting("registration_code", "CODE-NEW-0987654321");
    assertFails(await register(t, { registration_code: CODE }), 403, "registration_code_invalid");
    const second = await register(t, { registration_code: "CODE-NEW-0987654321", id: "late" });
    assert.equal(second.status, 200);
    const early = await online(t.wsUrl, "early", "early-password");
    await early.client.close();
  } finally {
    await t.close();
  }
});

Deno.test("neither the replies nor the logs ever contain the registration code or a password", async () => {
  const { t, logs } = await openServer();
  try {
    const secrets = [CODE, "chosen-password-1", "talk-secret-1", "WRONG-CODE-777"];
    const replies: string[] = [];
    const ok = await register(t, {
      registration_code: CODE,
      id: "dev1",
      login_password: "chosen-password-1",
      talk_password: "talk-secret-1",
    });
    assert.equal(ok.status, 200);
    replies.push(ok.text);
    for (
      const body of [
        { registration_code: "WRONG-CODE-777", login_password: "chosen-password-1" },
        { registration_code: CODE, id: "dev1", login_password: "chosen-password-1" },
        { registration_code: CODE, login_password: "chosen-password-1", name: "n".repeat(70) },
      ]
    ) {
      const r = await register(t, body);
      assert.ok(r.status >= 400);
      replies.push(r.text);
    }
    const gen = await register(t, { registration_code: CODE });
    const generated = (gen.body.data as { login_password: string }).login_password;
    assert.ok(logs.some((l) => l.includes('"registration"') && l.includes('"dev1"')), "logged");
    for (const secret of [...secrets, generated]) {
      for (const line of logs) assert.ok(!line.includes(secret), `log line leaks ${secret}`);
    }
    for (const secret of secrets) {
      for (const text of replies) assert.ok(!text.includes(secret), `reply leaks ${secret}`);
    }
  } finally {
    await t.close();
  }
});
