// docs/devices.md: the Python paho-mqtt 2.x example device runs against a real server and talks
// to an SDK client (spec 10).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { closeAll, online, text } from "../helpers/clients.ts";
import { within } from "../helpers/events.ts";
import { Harness, REPO_ROOT, SDK_ROOT } from "../helpers/harness.ts";

/** run_tests.sh installs paho-mqtt into this venv; NIXMSG_PYTHON overrides it. */
const PYTHON = process.env.NIXMSG_PYTHON ?? join(SDK_ROOT, "node_modules/.venv/bin/python");
const skip = existsSync(PYTHON)
  ? false
  : `no Python with paho-mqtt at ${PYTHON} (run_tests.sh makes it)`;

let h: Harness;
let dir = "";
let script = "";
before(async () => {
  if (skip) return;
  h = await Harness.start();
  dir = mkdtempSync(join(tmpdir(), "nixmsg-device-"));
  const doc = readFileSync(join(REPO_ROOT, "docs/devices.md"), "utf8");
  const start = doc.indexOf("```python\n") + "```python\n".length;
  script = join(dir, "nixmsg_device.py");
  writeFileSync(script, doc.slice(start, doc.indexOf("\n```", start)) + "\n");
});
after(async () => {
  await closeAll();
  await h?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function device(args: string[]): { done: Promise<string>; output: () => string } {
  const child = spawn(PYTHON, [script, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  const done = new Promise<string>((resolve, reject) => {
    child.on(
      "exit",
      (code) => (code === 0 ? resolve(out) : reject(new Error(`device exited ${code}: ${out}`))),
    );
  });
  return {
    done: within(done, 30_000, "the device").finally(() => child.kill()),
    output: () => out,
  };
}

test("the Python device of docs/devices.md logs in, sends, receives, acks, and reuses its token", {
  skip,
}, async () => {
  const dev = await h.endpoint();
  const b = await online(h.info.ws_url, await h.endpoint());
  const tokenFile = join(dir, "device.token");

  // Over WebSocket with the password: send to B, receive B's reply, ack it, exit.
  const first = device([
    "--url",
    h.info.ws_url,
    "--id",
    dev.id,
    "--password",
    dev.password,
    "--token-file",
    tokenFile,
    "--send-to",
    b.client.endpointId,
    "--text",
    "你好 from python",
    "--exit-after",
    "1",
  ]);
  const fromDevice = await b.messages.waitFor(
    (m) => m.from === dev.id,
    "the device's message",
    30_000,
  );
  assert.equal(text(fromDevice), "你好 from python");
  const reply = await b.client.send(dev.id, "reply 1", { keep: true });
  const out1 = await first.done;
  assert.match(out1, new RegExp(`message ${reply.id} from ${b.client.endpointId}: reply 1`));
  assert.equal((await b.receipts.waitFor((r) => r.id === reply.id, "receipt")).state, "accepted");
  assert.match(readFileSync(tokenFile, "utf8"), /^nst_/);

  // Over TCP with the saved token only: a kept message waits for it.
  const waiting = await b.client.send(dev.id, "reply 2", { keep: true });
  const second = device([
    "--url",
    h.info.tcp_url,
    "--id",
    dev.id,
    "--token-file",
    tokenFile,
    "--exit-after",
    "1",
  ]);
  const out2 = await second.done;
  assert.match(out2, new RegExp(`message ${waiting.id} from ${b.client.endpointId}: reply 2`));
  assert.equal((await b.receipts.waitFor((r) => r.id === waiting.id, "receipt")).state, "accepted");
});
