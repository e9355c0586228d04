// Redocly's lint of docs/openapi.json (issue 32): the pinned npm:@redocly/cli with its
// `recommended-strict` rules (redocly.yaml) finds no problem; the two it may skip are listed with
// their reason in .redocly.lint-ignore.yaml. A broken copy of the document shows that the lint
// really runs with that configuration.
import assert from "node:assert/strict";
import { join } from "node:path";

const ROOT = new URL("..", import.meta.url).pathname;
const REDOCLY = "npm:@redocly/cli@2.77.0";

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: { ruleId: string; message: string }[];
}

async function lint(file: string): Promise<LintReport> {
  // permissions: not the shipped command: the linter is a tool of the tests, not NixMsg.
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--frozen", "--quiet", "--allow-all", REDOCLY, "lint", "--format=json", file],
    cwd: ROOT,
    env: { REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  const start = text.indexOf("{");
  assert.ok(start >= 0, `no JSON report: ${text}${new TextDecoder().decode(out.stderr)}`);
  return JSON.parse(text.slice(start));
}

Deno.test("Redocly's recommended-strict lint finds no problem in docs/openapi.json", async () => {
  const r = await lint("docs/openapi.json");
  assert.deepEqual(r.problems.map((p) => `${p.ruleId}: ${p.message}`), []);
  assert.deepEqual(r.totals, { errors: 0, warnings: 0, ignored: 2 });
});

Deno.test("the lint fails a copy of the document with an operation that lost its operationId", async () => {
  const doc = JSON.parse(await Deno.readTextFile(join(ROOT, "docs/openapi.json")));
  delete doc.paths["/api/admin/me"].get.operationId;
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "openapi.json"), JSON.stringify(doc));
    const r = await lint(join(dir, "openapi.json"));
    assert.ok(r.problems.some((p) => p.ruleId === "operation-operationId"), JSON.stringify(r));
    // recommended-strict makes every problem an error, and the exceptions hold for docs/ only.
    assert.equal(r.totals.warnings, 0, JSON.stringify(r.totals));
    assert.equal(r.problems.filter((p) => p.ruleId === "operation-4xx-response").length, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
