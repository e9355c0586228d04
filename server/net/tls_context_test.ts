import assert from "node:assert/strict";
import { copyFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CertReloader, loadCertPair } from "./tls_context.ts";
import { HAS_OPENSSL, makeCert, memoryLog, type TestCert, waitFor } from "./_test_util.ts";

/** Runs `body` with two certificates in a temp dir; `live` is where the server reads from. */
async function withCerts(
  body: (a: TestCert, b: TestCert, live: { certFile: string; keyFile: string }) => Promise<void>,
) {
  const dir = await Deno.makeTempDir();
  try {
    const a = await makeCert(dir, "a");
    const b = await makeCert(dir, "b");
    const live = { certFile: join(dir, "fullchain.pem"), keyFile: join(dir, "privkey.pem") };
    await copyFile(a.certFile, live.certFile);
    await copyFile(a.keyFile, live.keyFile);
    await body(a, b, live);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function install(from: TestCert, live: { certFile: string; keyFile: string }) {
  await copyFile(from.keyFile, live.keyFile);
  await copyFile(from.certFile, live.certFile);
}

Deno.test({
  name: "loadCertPair loads a matching pair and reports its fingerprint",
  ignore: !HAS_OPENSSL,
  fn: () =>
    withCerts(async (a) => {
      const loaded = await loadCertPair(a.certFile, a.keyFile);
      assert.equal(loaded.fingerprint256, a.fingerprint256);
      assert.ok(loaded.context !== undefined);
    }),
});

Deno.test({
  name: "loadCertPair refuses a key of another certificate, garbage and missing files",
  ignore: !HAS_OPENSSL,
  fn: () =>
    withCerts(async (a, b, live) => {
      await assert.rejects(loadCertPair(a.certFile, b.keyFile), /does not match/);
      await writeFile(live.certFile, "not a certificate");
      await assert.rejects(loadCertPair(live.certFile, a.keyFile), /Parse TLS certificate/);
      await writeFile(live.keyFile, "not a key");
      await assert.rejects(loadCertPair(a.certFile, live.keyFile), /Parse TLS private key/);
      await assert.rejects(loadCertPair(a.certFile, "/nonexistent/key.pem"), /Read TLS/);
    }),
});

Deno.test({
  name: "CertReloader.start fails on a bad pair (a start-up error, spec 4.2)",
  ignore: !HAS_OPENSSL,
  fn: () =>
    withCerts(async (a, b) => {
      const { log } = memoryLog();
      await assert.rejects(
        CertReloader.start({ certFile: a.certFile, keyFile: b.keyFile, checkSeconds: 0, log }),
        /does not match/,
      );
    }),
});

Deno.test({
  name: "CertReloader.check swaps in changed files and ignores unchanged ones",
  ignore: !HAS_OPENSSL,
  fn: () =>
    withCerts(async (a, b, live) => {
      const { log, lines } = memoryLog();
      const certs = await CertReloader.start({ ...live, checkSeconds: 0, log });
      try {
        assert.equal(certs.current.fingerprint256, a.fingerprint256);
        assert.equal(await certs.check(), false);
        await install(b, live);
        assert.equal(await certs.check(), true);
        assert.equal(certs.current.fingerprint256, b.fingerprint256);
        assert.ok(lines.some((l) => l.msg === "TLS certificate reloaded"));
      } finally {
        certs.close();
      }
    }),
});

Deno.test({
  name: "CertReloader keeps the old certificate when the new pair fails, and logs an error",
  ignore: !HAS_OPENSSL,
  fn: () =>
    withCerts(async (a, b, live) => {
      const { log, lines } = memoryLog();
      const certs = await CertReloader.start({ ...live, checkSeconds: 0, log });
      try {
        // A renewal caught half way: the new certificate has landed, its key not yet.
        await copyFile(b.certFile, live.certFile);
        assert.equal(await certs.check(), false);
        assert.equal(certs.current.fingerprint256, a.fingerprint256);
        const errors = lines.filter((l) => l.level === "error");
        assert.equal(errors.length, 1);
        assert.match(String(errors[0].error), /does not match/);
        // The unchanged broken pair is not retried on every check.
        assert.equal(await certs.check(), false);
        assert.equal(lines.filter((l) => l.level === "error").length, 1);
        // The key lands: the next check completes the swap.
        await copyFile(b.keyFile, live.keyFile);
        assert.equal(await certs.check(), true);
        assert.equal(certs.current.fingerprint256, b.fingerprint256);
      } finally {
        certs.close();
      }
    }),
});

Deno.test({
  name: "CertReloader checks the files on its own every checkSeconds",
  ignore: !HAS_OPENSSL,
  fn: () =>
    withCerts(async (_a, b, live) => {
      const { log } = memoryLog();
      const certs = await CertReloader.start({ ...live, checkSeconds: 0.02, log });
      try {
        await install(b, live);
        await waitFor(() => certs.current.fingerprint256 === b.fingerprint256, "the timed reload");
      } finally {
        certs.close();
      }
    }),
});

Deno.test({
  name: "CertReloader.reload loads the files even when they look unchanged",
  ignore: !HAS_OPENSSL,
  fn: () =>
    withCerts(async (a, _b, live) => {
      const { log } = memoryLog();
      const certs = await CertReloader.start({ ...live, checkSeconds: 0, log });
      try {
        const before = certs.context;
        assert.equal(await certs.reload(), true);
        assert.notEqual(certs.context, before);
        assert.equal(certs.current.fingerprint256, a.fingerprint256);
      } finally {
        certs.close();
      }
    }),
});
