// `npm pack` produces a tarball that installs into a fresh project outside the SDK (the README's
// "Installing": pack, then `npm install <tarball>`) and connects from Node (ESM and CommonJS,
// with type definitions) and from Deno; the README's first example runs there as written.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { closeAll, online, text } from "../helpers/clients.ts";
import { within } from "../helpers/events.ts";
import { denoPath, type Endpoint, Harness, SDK_ROOT } from "../helpers/harness.ts";

const NPM = process.platform === "win32" ? "npm.cmd" : "npm";

let h: Harness;
let scratch = "";
let tarball = "";
before(async () => {
  h = await Harness.start();
  scratch = mkdtempSync(join(tmpdir(), "nixmsg-pack-"));
  const out = execFileSync(NPM, [
    "pack",
    "--json",
    "--ignore-scripts",
    "--pack-destination",
    scratch,
  ], {
    cwd: SDK_ROOT,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const info = JSON.parse(out.slice(out.indexOf("["))) as {
    filename: string;
    files: { path: string }[];
  }[];
  tarball = join(scratch, info[0]!.filename);
  const files = info[0]!.files.map((f) => f.path);
  assert.ok(
    files.includes("LICENSE") && files.includes("README.md") && files.includes("dist/index.js"),
  );
  assert.ok(
    !files.some((f) => f.startsWith("dist/test-build") || f.startsWith("src/")),
    "no tests or sources",
  );
  writeFileSync(
    join(scratch, "package.json"),
    JSON.stringify({ name: "scratch", private: true, type: "module" }),
  );
  execFileSync(NPM, ["install", "--no-audit", "--no-fund", "--prefer-offline", tarball], {
    cwd: scratch,
    stdio: ["ignore", "ignore", "inherit"],
  });
});
after(async () => {
  await closeAll();
  await h?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** A script that logs in, sends to `peer` and prints the send result as JSON. */
function script(kind: "esm" | "cjs" | "deno"): string {
  const imp = kind === "cjs"
    ? `const { NixMsgClient } = require("@nixevol/nixmsg");`
    : `import { NixMsgClient } from "${
      kind === "deno" ? "npm:@nixevol/nixmsg" : "@nixevol/nixmsg"
    }";`;
  const body = `
const [url, id, password, peer] = ${kind === "deno" ? "Deno.args" : "process.argv.slice(2)"};
const client = NixMsgClient.connect(url, id, { password });
await client.ready();
const sent = await client.send(peer, "from ${kind}");
await client.close();
console.log(JSON.stringify({ id: sent.id, state: client.state }));`;
  return kind === "cjs" ? `${imp}\n(async () => {${body}\n})();` : `${imp}\n${body}`;
}

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: scratch, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on(
      "exit",
      (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} exited ${code}: ${err}`))),
    );
  });
}

async function roundTrip(kind: "esm" | "cjs" | "deno", cmd: string, args: string[]) {
  const sender: Endpoint = await h.endpoint();
  const receiver: Endpoint = await h.endpoint();
  const peer = await online(h.info.ws_url, receiver);
  const file = join(
    scratch,
    kind === "cjs" ? "check.cjs" : kind === "deno" ? "check_deno.mjs" : "check.mjs",
  );
  writeFileSync(file, script(kind));
  const out = await within(
    run(cmd, [...args, file, h.info.ws_url, sender.id, sender.password, receiver.id]),
    60_000,
    kind,
  );
  const result = JSON.parse(out.trim().split("\n").at(-1)!) as { id: string; state: string };
  assert.equal(result.state, "offline");
  const got = await peer.messages.waitFor((m) => m.id === result.id, `the message from ${kind}`);
  assert.equal(text(got), `from ${kind}`);
}

test("the packed tarball installs and connects from Node ESM", async () => {
  await roundTrip("esm", process.execPath, []);
});

test("the packed tarball installs and connects from Node CommonJS", async () => {
  await roundTrip("cjs", process.execPath, []);
});

test("the packed tarball type-checks for ESM and CommonJS consumers", () => {
  const tsc = join(SDK_ROOT, "node_modules/typescript/bin/tsc");
  writeFileSync(
    join(scratch, "types.mts"),
    `import { NixMsgClient, NixMsgError, type Message } from "@nixevol/nixmsg";
const c: NixMsgClient = NixMsgClient.connect("ws://x/mqtt", "a", { sessionToken: "nst_x" });
c.onMessage((m: Message) => console.log(m.body));
export const e: NixMsgError = new NixMsgError("busy");\n`,
  );
  writeFileSync(
    join(scratch, "types.cts"),
    `import { NixMsgClient } from "@nixevol/nixmsg";
export const c = NixMsgClient.connect("ws://x/mqtt", "a", { password: "p" });\n`,
  );
  execFileSync(process.execPath, [
    tsc,
    "--noEmit",
    "--strict",
    "--module",
    "nodenext",
    "--moduleResolution",
    "nodenext",
    "--lib",
    "es2022,dom",
    join(scratch, "types.mts"),
    join(scratch, "types.cts"),
  ], { cwd: scratch, stdio: ["ignore", "inherit", "inherit"] });
  const pkg = JSON.parse(
    readFileSync(join(scratch, "node_modules/@nixevol/nixmsg/package.json"), "utf8"),
  );
  assert.equal(pkg.license, "SEE LICENSE IN LICENSE");
});

test("the packed tarball installs and connects from Deno", async () => {
  // permissions: not the shipped command: a client of the packed SDK, not the server.
  await roundTrip("deno", denoPath(), [
    "run",
    "--allow-all",
    "--quiet",
    "--no-config",
    "--node-modules-dir=manual",
  ]);
});

/** The first fenced block of `lang` in the README. */
function readmeBlock(lang: string): string {
  const readme = readFileSync(join(SDK_ROOT, "README.md"), "utf8");
  const m = readme.match(new RegExp("```" + lang + "\\n([\\s\\S]*?)```"));
  assert.ok(m, `a ${lang} block in the README`);
  return m[1]!;
}

test("the README's first example runs from the installed tarball and waits for its answer", async () => {
  const asker: Endpoint = await h.endpoint();
  const peer = await online(h.info.ws_url, await h.endpoint());
  // The peer answers every message twice: first a stale answer (another marker, as a previous
  // run's late reply would be), then the real one with the same meta.
  peer.client.onMessage(async (m) => {
    await peer.client.send(m.from, "stale answer", { meta: { marker: "an-earlier-run" } });
    await peer.client.send(m.from, `it is ${new Date().toISOString()}`, { meta: m.meta ?? {} });
  });
  writeFileSync(join(scratch, "ask.mjs"), readmeBlock("js"));
  const out = await within(
    new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ["ask.mjs"], {
        cwd: scratch,
        stdio: ["ignore", "pipe", "pipe"],
        env: {
          ...process.env,
          NIXMSG_URL: h.info.ws_url,
          NIXMSG_ID: asker.id,
          NIXMSG_PASSWORD: asker.password,
          NIXMSG_PEER: peer.client.endpointId,
        },
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d) => (stdout += d));
      child.stderr.on("data", (d) => (stderr += d));
      child.on(
        "exit",
        (c) => (c === 0 ? resolve(stdout) : reject(new Error(`exit ${c}: ${stderr}`))),
      );
    }),
    60_000,
    "the README example",
  );
  assert.match(out, /^sent [0-9a-f-]{36} dispatched$/m);
  assert.match(out, /^answer: it is \d{4}-/m, out);
  assert.doesNotMatch(out, /stale answer/);
});
