// Compiles the TypeScript tests with esbuild into dist/test-build/ (one bundle per test file;
// packages stay external, so "@nixevol/nixmsg" resolves to the built package) and runs them
// with node's built-in test runner. Usage:
// node scripts/test.mjs [unit|integration|integration/x.test.ts ...] [-- args].
import { spawnSync } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist/test-build");
const argv = process.argv.slice(2);
const sep = argv.indexOf("--");
const suites = (sep < 0 ? argv : argv.slice(0, sep)).filter(Boolean);
const extra = sep < 0 ? [] : argv.slice(sep + 1);
const selected = suites.length ? suites : ["unit", "integration"];

// The tests use the built package (integration tests import "@nixevol/nixmsg"): build it first.
const built = spawnSync(process.execPath, [join(root, "scripts/build.mjs")], { stdio: "inherit" });
if (built.status !== 0) process.exit(built.status ?? 1);

// A suite is a directory of test/ ("unit", "integration") or one file ("integration/x.test.ts").
const entries = selected.flatMap((suite) =>
  suite.endsWith(".test.ts") ? [join(root, "test", suite)] : readdirSync(join(root, "test", suite))
    .filter((f) => f.endsWith(".test.ts"))
    .sort()
    .map((f) => join(root, "test", suite, f))
);
rmSync(out, { recursive: true, force: true });
await build({
  entryPoints: entries,
  outdir: out,
  outbase: join(root, "test"),
  bundle: true,
  packages: "external",
  platform: "node",
  format: "esm",
  target: "node20",
  outExtension: { ".js": ".mjs" },
  logLevel: "warning",
});
const files = entries.map((f) =>
  join(out, f.slice(join(root, "test").length + 1)).replace(/\.ts$/, ".mjs")
);
const res = spawnSync(process.execPath, ["--test", ...extra, ...files], {
  stdio: "inherit",
  cwd: root,
});
process.exit(res.status ?? 1);
