/**
 * `deno task release`: builds the server for every release target (spec 11.2) into `dist/`, each
 * with its own platform's argon2 addon, and writes `dist/SHA256SUMS`.
 *
 * Usage: deno task release [--target linux-x64,linux-arm64,windows-x64] [--check-only]
 *
 * For each target it stages the sources in `dist/stage/<target>/`, installs the npm packages for
 * that OS and CPU (`deno install --os … --arch …`), checks that the right
 * `@node-rs/argon2-<os>-<cpu>` addon is in place and built for that machine, then runs
 * `deno compile --target …`. `--check-only` stops after the addon check (the compile downloads
 * `denort` for the target from the Deno download host).
 */
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import {
  addonFile,
  addonPackage,
  type AddonPlatform,
  ARGON2_VERSION,
  checkAddonBinary,
} from "../server/auth/argon2_addon.ts";
import { DENO_PERMISSIONS } from "./deno_permissions.ts";

/** One release target. */
export interface Target extends AddonPlatform {
  /** Our name for it, used in file names. */
  readonly name: string;
  /** `deno compile --target` value. */
  readonly triple: string;
  /** The binary's file name in `dist/`. */
  readonly output: string;
}

/** The three targets of spec 11.2. */
export const TARGETS: readonly Target[] = [
  {
    name: "linux-x64",
    triple: "x86_64-unknown-linux-gnu",
    os: "linux",
    arch: "x64",
    output: "nixmsg-linux-x64",
  },
  {
    name: "linux-arm64",
    triple: "aarch64-unknown-linux-gnu",
    os: "linux",
    arch: "arm64",
    output: "nixmsg-linux-arm64",
  },
  {
    name: "windows-x64",
    triple: "x86_64-pc-windows-msvc",
    os: "win32",
    arch: "x64",
    output: "nixmsg-windows-x64.exe",
  },
];

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Files the server reads at run time that no static import reaches. */
export const INCLUDES: readonly string[] = [
  "server/store/writer_worker.ts",
  "server/store/checkpointer_worker.ts",
  "web/dist",
];

/** A failed release step, with a message for the operator. */
export class ReleaseError extends Error {
  override name = "ReleaseError";
}

async function run(cwd: string, args: string[]): Promise<{ ok: boolean; output: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const dec = new TextDecoder();
  return { ok: out.success, output: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    const src = join(from, entry.name);
    const dst = join(to, entry.name);
    if (entry.isDirectory) await copyTree(src, dst);
    else if (entry.isFile) await Deno.copyFile(src, dst);
  }
}

/** Copies what a compile needs into `stage`: config, lock file, server and (unless skipped) the console. */
export async function stageSources(stage: string, withWeb: boolean): Promise<void> {
  await Deno.remove(stage, { recursive: true }).catch(() => {});
  await Deno.mkdir(stage, { recursive: true });
  for (const f of ["deno.json", "deno.lock"]) await Deno.copyFile(join(ROOT, f), join(stage, f));
  await copyTree(join(ROOT, "server"), join(stage, "server"));
  if (withWeb) {
    try {
      await Deno.stat(join(ROOT, "web/dist/index.html"));
    } catch {
      throw new ReleaseError("web/dist is missing: run `deno task build:web` first");
    }
    await copyTree(join(ROOT, "web/dist"), join(stage, "web/dist"));
  }
}

/** Installs the npm packages for `target`'s OS and CPU into `stage/node_modules`. */
export async function installFor(stage: string, target: Target): Promise<void> {
  const r = await run(stage, [
    "install",
    "--frozen",
    "--node-modules-dir=auto",
    "--os",
    target.os,
    "--arch",
    target.arch,
  ]);
  if (!r.ok) throw new ReleaseError(`deno install for ${target.name} failed:\n${r.output}`);
}

/** Where the addon of `target` lies in a staged `node_modules`. */
export function addonPath(stage: string, target: AddonPlatform): string {
  const pkg = addonPackage(target);
  const dir = `${pkg.replace("/", "+")}@${ARGON2_VERSION}`;
  return join(stage, "node_modules", ".deno", dir, "node_modules", pkg, addonFile(target));
}

/**
 * Checks that the staged tree holds `target`'s argon2 addon, built for its machine. Returns the
 * addon's path relative to the stage.
 */
export async function checkAddon(stage: string, target: Target): Promise<string> {
  const path = addonPath(stage, target);
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(path);
  } catch {
    throw new ReleaseError(
      `${target.name}: ${addonPackage(target)} is not installed (missing ${relative(stage, path)})`,
    );
  }
  const problem = checkAddonBinary(bytes, target);
  if (problem) throw new ReleaseError(`${target.name}: ${relative(stage, path)} is ${problem}`);
  return relative(stage, path);
}

async function compile(stage: string, target: Target, outDir: string): Promise<string> {
  const output = join(outDir, target.output);
  const r = await run(stage, [
    "compile",
    "--frozen",
    "--node-modules-dir=auto",
    // What the compiled binary may do: the shipped set (server/deno_permissions.txt).
    ...DENO_PERMISSIONS,
    ...INCLUDES.flatMap((i) => ["--include", i]),
    "--target",
    target.triple,
    "--output",
    output,
    "server/main.ts",
  ]);
  if (!r.ok) {
    const hint = /denort|dl\.deno\.land|download/i.test(r.output)
      ? " (deno compile downloads the Deno runtime `denort` for the target from the Deno " +
        "download host; that host must be reachable)"
      : "";
    throw new ReleaseError(`deno compile for ${target.name} failed${hint}:\n${r.output}`);
  }
  return output;
}

async function sha256(path: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", await Deno.readFile(path));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Options of {@linkcode release}. */
export interface ReleaseOptions {
  targets: readonly Target[];
  checkOnly: boolean;
  outDir: string;
  log: (line: string) => void;
}

/** Stages, checks and (unless `checkOnly`) compiles each target; returns the binaries made. */
export async function release(opts: ReleaseOptions): Promise<string[]> {
  const built: string[] = [];
  for (const [i, target] of opts.targets.entries()) {
    const step = `[${i + 1}/${opts.targets.length}] ${target.name}`;
    const stage = join(opts.outDir, "stage", target.name);
    opts.log(`${step}: staging sources`);
    await stageSources(stage, !opts.checkOnly);
    opts.log(`${step}: installing npm packages for ${target.os}/${target.arch}`);
    await installFor(stage, target);
    const addon = await checkAddon(stage, target);
    opts.log(`${step}: argon2 addon OK (${addon})`);
    if (opts.checkOnly) continue;
    opts.log(`${step}: deno compile --target ${target.triple}`);
    built.push(await compile(stage, target, opts.outDir));
  }
  if (built.length > 0) {
    const lines = await Promise.all(
      built.map(async (p) => `${await sha256(p)}  ${relative(opts.outDir, p)}`),
    );
    await Deno.writeTextFile(join(opts.outDir, "SHA256SUMS"), lines.join("\n") + "\n");
    opts.log(`wrote ${built.length} binaries and SHA256SUMS to ${opts.outDir}`);
  }
  return built;
}

/** Parses `--target a,b` and `--check-only`. */
export function parseReleaseArgs(
  args: readonly string[],
): { targets: Target[]; checkOnly: boolean } {
  let names: string[] | null = null;
  let checkOnly = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--check-only") checkOnly = true;
    else if (a === "--target" && i + 1 < args.length) names = args[++i].split(",");
    else if (a.startsWith("--target=")) names = a.slice(9).split(",");
    else {throw new ReleaseError(
        `Unknown argument ${a}; usage: release [--target ${
          TARGETS.map((t) => t.name).join(",")
        }] [--check-only]`,
      );}
  }
  const targets = names === null ? [...TARGETS] : names.map((n) => {
    const t = TARGETS.find((x) =>
      x.name === n ||
      `${x.os === "win32" ? "windows" : x.os}/${x.arch === "x64" ? "amd64" : x.arch}` === n
    );
    if (!t) {
      throw new ReleaseError(
        `Unknown target ${n}; known: ${TARGETS.map((x) => x.name).join(", ")}`,
      );
    }
    return t;
  });
  return { targets, checkOnly };
}

if (import.meta.main) {
  try {
    const { targets, checkOnly } = parseReleaseArgs(Deno.args);
    await release({ targets, checkOnly, outDir: join(ROOT, "dist"), log: (l) => console.log(l) });
  } catch (err) {
    console.error(err instanceof ReleaseError ? err.message : err);
    Deno.exit(1);
  }
}
