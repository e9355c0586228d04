// Schemathesis against a real server (issue 32): bounded in examples and time, it generates
// requests from docs/openapi.json for every admin operation and fails on any failed check. The
// program comes from tests/schemathesis/requirements.txt (pip, pinned); set NIXMSG_SCHEMATHESIS to
// its `st` binary, or have `st` on PATH. Without it the test is skipped with a warning.
//
// Every check runs (status codes, schema conformance, acceptance of valid and refusal of invalid
// data, methods), with the few exceptions and their reasons in tests/schemathesis/schemathesis.toml.
import assert from "node:assert/strict";
import { makeTestHome, runCli, startServerProcess } from "./helpers/server_process.ts";
import { AdminClient } from "./helpers/admin.ts";

function findSt(): string | null {
  const fromEnv = Deno.env.get("NIXMSG_SCHEMATHESIS");
  if (fromEnv) return fromEnv;
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      if (Deno.statSync(`${dir}/st`).isFile) return `${dir}/st`;
    } catch {
      // not here
    }
  }
  return null;
}

const ST = findSt();
if (ST === null) {
  console.warn(
    "SKIPPED tests/schemathesis_test.ts: install tests/schemathesis/requirements.txt and set NIXMSG_SCHEMATHESIS",
  );
}

Deno.test({
  name: "Schemathesis finds no failure in any admin operation",
  ignore: ST === null,
  async fn() {
    const home = await makeTestHome();
    try {
      const init = await runCli(home, ["admin", "init"]);
      assert.equal(init.code, 0, init.stderr);
      const password = init.stdout.match(/password: (\S+)/)![1];
      const server = await startServerProcess(home);
      try {
        const base = `http://${server.addr}`;
        const admin = new AdminClient(base);
        await admin.login(password);
        const token = await admin.post("/api/admin/tokens", { name: "schemathesis" });
        assert.equal(token.status, 200, token.text);
        const config = new URL("./schemathesis/schemathesis.toml", import.meta.url).pathname;
        const st = async (
          args: string[],
          configFile = config,
          env: Record<string, string> = {},
        ) => {
          const out = await new Deno.Command(ST!, {
            args: [
              "--config-file",
              configFile,
              "run",
              `${base}/api/admin/openapi.json`,
              "--url",
              base,
              "--max-examples",
              "25",
              "--seed",
              "32",
              "--request-timeout",
              "10",
              "--workers",
              "1",
              ...args,
            ],
            env: { NO_COLOR: "1", ...env },
            // Its example database and caches go to the scratch directory, not the checkout.
            cwd: home.dir,
            stdout: "piped",
            stderr: "piped",
          }).output();
          const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
          assert.equal(out.code, 0, text.slice(-6000));
          assert.doesNotMatch(text, /Server error/);
          // Mostly 429 would mean the run locked itself out and tested little (see the config).
          assert.doesNotMatch(text, /Rate limited/);
          return Number(/Tested: (\d+)/.exec(text)?.[1] ?? 0);
        };
        // With an API token: every operation a token may use.
        const tested = await st([
          "--header",
          `Authorization: Bearer ${token.data.token}`,
          // An endless event stream; tests/admin_inbox_test.ts covers it.
          "--exclude-path",
          "/api/admin/endpoints/{id}/inbox",
        ]);
        assert.ok(tested >= 40, `Schemathesis tested ${tested} operations`);
        // With the session cookie: the token routes, which a token may not use. Not the password
        // change (its wrong old passwords would lock the address) nor logout (it ends the session).
        const session = new URL("./schemathesis/schemathesis_session.toml", import.meta.url);
        const tokens = await st(
          ["--header", "X-Nixmsg-Request: 1", "--include-path-regex", "^/api/admin/tokens"],
          session.pathname,
          { NIXMSG_ST_SESSION: admin.cookie!.replace(/^nixmsg_admin=/, "") },
        );
        assert.equal(tokens, 4, "the four token operations");
        assert.equal(server.stderr(), "", "the server wrote nothing to stderr");
      } finally {
        assert.equal(await server.stop(), 0);
      }
    } finally {
      await home.cleanup();
    }
  },
});
