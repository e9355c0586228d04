// Every failure is a NixMsgError with a code from ErrorCode, its cause kept: invalid options,
// transport and TLS failures reported to `ready({ timeoutMs })`, and the spec 6.10 codes.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import * as tls from "node:tls";
import { test } from "node:test";
import { ErrorCode, NixMsgClient, NixMsgError } from "@nixevol/nixmsg";
import { track } from "../helpers/clients.ts";
import { within } from "../helpers/events.ts";
import { REPO_ROOT } from "../helpers/harness.ts";
import { makeCert } from "../helpers/wire.ts";

const CODES = new Set<string>(Object.values(ErrorCode));

/** Asserts that `err` is a NixMsgError whose code is `code` and one of the exported constants. */
function isCode(code: string) {
  return (err: unknown) => {
    assert.ok(err instanceof NixMsgError, `a NixMsgError, got ${String(err)}`);
    assert.equal(err.code, code);
    assert.ok(CODES.has(err.code), `${err.code} is an ErrorCode constant`);
    return true;
  };
}

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

test("ErrorCode has a constant for every code of docs/protocol.md (spec 6.10)", () => {
  const doc = readFileSync(join(REPO_ROOT, "docs/protocol.md"), "utf8");
  const table = doc.slice(doc.indexOf("## Error codes"));
  const documented = [...table.matchAll(/^\| `([a-z_]+)` +\| \d{3}/gm)].map((
    m,
  ) => m[1]!);
  assert.ok(documented.length >= 23, `found ${documented.length} codes`);
  for (const c of documented) assert.ok(CODES.has(c), `ErrorCode lacks ${c}`);
  for (
    const c of [
      "not_connected",
      "queue_full",
      "timeout",
      "closed",
      "kicked",
      "auth_failed",
    ]
  ) {
    assert.ok(CODES.has(c), `ErrorCode lacks the SDK's ${c}`);
  }
  assert.equal(ErrorCode.TalkPasswordRequired, "talk_password_required");
  assert.equal(ErrorCode.Closed, "closed");
});

test("invalid options fail with bad_request when they are built, before anything is sent", async () => {
  const url = "ws://127.0.0.1:9/mqtt";
  assert.throws(
    () =>
      NixMsgClient.connect(url, "a", { password: "p" }, {
        keepaliveSeconds: 5,
      }),
    isCode("bad_request"),
  );
  assert.throws(
    () => NixMsgClient.connect("ftp://x", "a", { password: "p" }),
    isCode("bad_request"),
  );
  assert.throws(
    () => NixMsgClient.connect("not a url", "a", { password: "p" }),
    (e: unknown) => {
      isCode("bad_request")(e);
      assert.ok(
        (e as NixMsgError).cause !== undefined,
        "the URL parser's error is the cause",
      );
      return true;
    },
  );
  assert.throws(
    () => NixMsgClient.connect(url, "", { password: "p" }),
    isCode("bad_request"),
  );
  assert.throws(
    () => NixMsgClient.connect(url, "a", { password: "" }),
    isCode("bad_request"),
  );
  const c = NixMsgClient.connect(url, "a", { password: "p" });
  try {
    assert.throws(() => c.onMessage(null as never), isCode("bad_request"));
    assert.throws(() => c.onReceipt(undefined as never), isCode("bad_request"));
    await assert.rejects(
      c.send("b", "x", { delay: -1 }),
      isCode("bad_request"),
    );
    await assert.rejects(
      c.send("b", "x", { delay: Number.NaN }),
      isCode("bad_request"),
    );
    await assert.rejects(c.ready({ timeoutMs: -1 }), isCode("bad_request"));
  } finally {
    await c.close();
  }
});

test("ready({ timeoutMs }) reports the last transport error of the first connect", async () => {
  const t = track(`ws://127.0.0.1:${await closedPort()}/mqtt`, "a", {
    password: "p",
  });
  try {
    const t0 = Date.now();
    const err = await t.client.ready({ timeoutMs: 1500 }).then(
      () => assert.fail("online without a server"),
      (e: unknown) => e,
    );
    assert.ok(Date.now() - t0 < 5000, "ready kept its timeout");
    isCode("timeout")(err);
    const cause = (err as NixMsgError).cause;
    isCode("network")(cause);
    const platform = (cause as NixMsgError).cause as { code?: string };
    assert.equal(
      platform?.code,
      "ECONNREFUSED",
      "the platform's error is kept",
    );
    assert.match((err as NixMsgError).message, /ECONNREFUSED/);
    const rec = t.states.items.find((s) => s.state === "reconnecting");
    assert.equal(rec?.error?.code, "network", "reconnecting carries the error");
  } finally {
    await t.client.close();
  }
});

test("an untrusted certificate is a tls error, not a silent retry", async () => {
  const cert = makeCert();
  const server = tls.createServer({ key: cert.key, cert: cert.cert });
  server.on("tlsClientError", () => {});
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  const t = track(`wss://127.0.0.1:${port}/mqtt`, "a", { password: "p" });
  try {
    const err = await within(
      t.client.ready({ timeoutMs: 1500 }).then(() => null, (e: unknown) => e),
      10_000,
      "ready",
    );
    isCode("timeout")(err);
    isCode("tls")((err as NixMsgError).cause);
  } finally {
    await t.client.close();
    await new Promise<void>((r) => server.close(() => r()));
  }
});
