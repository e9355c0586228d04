// Builds dist/: ESM and CJS bundles (mqtt external), a self-contained browser ESM bundle
// (mqtt included), and declarations for both module systems. Run with `npm run build`.
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");
// Only the build's own outputs: dist/test-build belongs to the test runner.
for (const out of ["index.js", "index.cjs", "types", "cjs-types", "browser"]) {
  rmSync(join(dist, out), { recursive: true, force: true });
}

execFileSync(process.execPath, [
  join(root, "node_modules/typescript/bin/tsc"),
  "-p",
  "tsconfig.build.json",
], {
  cwd: root,
  stdio: "inherit",
});

const common = {
  entryPoints: [join(root, "src/index.ts")],
  bundle: true,
  target: "es2022",
  logLevel: "warning",
  legalComments: "none",
};
await build({
  ...common,
  platform: "neutral",
  format: "esm",
  external: ["mqtt"],
  outfile: join(dist, "index.js"),
});
await build({
  ...common,
  platform: "node",
  format: "cjs",
  external: ["mqtt"],
  outfile: join(dist, "index.cjs"),
});
await build({
  ...common,
  platform: "browser",
  format: "esm",
  mainFields: ["browser", "module", "main"],
  conditions: ["browser", "import"],
  minify: true,
  outfile: join(dist, "browser/nixmsg.js"),
});

// Declarations: relative imports end in .js for ESM; CJS consumers need .d.cts files that import
// .cjs, so that TypeScript reads them as CommonJS.
const RELATIVE = /((?:from|import)\s*\(?\s*["']\.{1,2}\/[^"']*?)\.(?:ts|js)(["'])/g;
function rewriteTypes(from, to, ext) {
  mkdirSync(to, { recursive: true });
  for (const name of readdirSync(from)) {
    const src = join(from, name);
    if (statSync(src).isDirectory()) {
      rewriteTypes(src, join(to, name), ext);
    } else if (name.endsWith(".d.ts")) {
      const text = readFileSync(src, "utf8").replace(RELATIVE, `$1.${ext}$2`);
      writeFileSync(join(to, ext === "js" ? name : name.replace(/\.d\.ts$/, ".d.cts")), text);
    }
  }
}
rewriteTypes(join(dist, "types"), join(dist, "cjs-types"), "cjs");
rewriteTypes(join(dist, "types"), join(dist, "types"), "js");
console.log("built", dist);
