// docs/devices.md: the Python paho-mqtt 2.x example device and the mosquitto_rr quick check run
// against a real server and talk to an SDK client (spec 10).
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { closeAll, online, text } from "../helpers/clients.ts";
import { Events, within } from "../helpers/events.ts";
import { Harness, REPO_ROOT, SDK_ROOT } from "../helpers/harness.ts";
import { parseTarget } from "../helpers/proxy.ts";

/** run_tests.sh installs paho-mqtt into this venv; NIXMSG_PYTHON overrides it. */
const PYTHON = process.env.NIXMSG_PYTHON ?? join(SDK_ROOT, "node_modules/.venv/bin/python");
const skip = existsSync(PYTHON)
  ? false
  : `no Python with paho-mqtt at ${PYTHON} (run_tests.sh makes it)`;

function onPath(cmd: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

const skipTls = skip || (onPath("openssl") ? false : "no openssl to make a private CA");
const skipMosquitto = onPath("mosquitto_rr")
  ? false
  : "mosquitto_rr not found (apt-get install mosquitto-clients; tests/run.sh installs it)";
if (skipMosquitto) console.log(`# skipping the mosquitto_rr check: ${skipMosquitto}`);

const doc = readFileSync(join(REPO_ROOT, "docs/devices.md"), "utf8");

/** The first fenced block of `lang` in the guide that contains `needle`. */
function docBlock(lang: string, needle: string): string {
  const fence = "```" + lang + "\n";
  for (let at = doc.indexOf(fence); at >= 0; at = doc.indexOf(fence, at + 1)) {
    const start = at + fence.length;
    const block = doc.slice(start, doc.indexOf("\n```", start));
    if (block.includes(needle)) return block;
  }
  throw new Error(`docs/devices.md has no ${lang} block with ${needle}`);
}

let h: Harness;
let dir = "";
let script = "";
before(async () => {
  h = await Harness.start();
  dir = mkdtempSync(join(tmpdir(), "nixmsg-device-"));
  script = join(dir, "nixmsg_device.py");
  writeFileSync(script, docBlock("python", "import paho.mqtt.client") + "\n");
});
after(async () => {
  await closeAll();
  await h?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The example device as a child process; `lines` records its output line by line. */
function device(args: string[]): { done: Promise<string>; lines: Events<string> } {
  const child = spawn(PYTHON, [script, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  const lines = new Events<string>();
  let out = "";
  let partial = "";
  const onData = (d: Buffer) => {
    out += d;
    partial += d;
    const parts = partial.split("\n");
    partial = parts.pop()!;
    for (const line of parts) lines.push(line);
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  const done = new Promise<string>((resolve, reject) => {
    child.on(
      "exit",
      (code) => (code === 0 ? resolve(out) : reject(new Error(`device exited ${code}: ${out}`))),
    );
  });
  return { done: within(done, 60_000, "the device").finally(() => child.kill()), lines };
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

/** A port on 127.0.0.1 that nothing listens on (bound once, then released). */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Opens `port` and forwards every connection to the server: the server "comes up" there. */
async function serverComesUpAt(port: number): Promise<net.Server> {
  const target = parseTarget(h.address);
  const server = net.createServer((client) => {
    const upstream = net.connect(target);
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", end);
    upstream.on("close", end);
  });
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  return server;
}

test("the Python device started while the server is unreachable keeps trying and comes online", {
  skip,
}, async () => {
  const dev = await h.endpoint();
  const b = await online(h.info.ws_url, await h.endpoint());
  const port = await freePort();
  const run = device([
    ...["--url", `ws://127.0.0.1:${port}/mqtt`, "--id", dev.id, "--password", dev.password],
    ...["--exit-after", "1"],
  ]);
  // Nothing listens yet: the first connection attempt is refused, and the device says so.
  await Promise.race([
    run.lines.waitFor((l) => l.includes("server unreachable, retrying"), "a refused attempt"),
    run.done.then((out) => Promise.reject(new Error(`The device exited while offline: ${out}`))),
  ]);
  const door = await serverComesUpAt(port);
  try {
    const reply = await b.client.send(dev.id, "after the outage", { keep: true });
    const out = await run.done;
    assert.match(out, new RegExp(`message ${reply.id} from ${b.client.endpointId}: after the`));
    assert.doesNotMatch(out, /Traceback/);
    assert.equal((await b.receipts.waitFor((r) => r.id === reply.id, "receipt")).state, "accepted");
  } finally {
    await new Promise<void>((r) => door.close(() => r()));
  }
});

test("the Python device logs in with its password when the saved token is refused", {
  skip,
}, async () => {
  const dev = await h.endpoint();
  const b = await online(h.info.ws_url, await h.endpoint());
  // A token that died: the device's own later password login replaced it.
  const tokenFile = join(dir, "dead.token");
  const first = device([
    ...["--url", h.info.tcp_url, "--id", dev.id, "--password", dev.password],
    ...["--token-file", tokenFile, "--exit-after", "1"],
  ]);
  const m1 = await b.client.send(dev.id, "first run", { keep: true });
  await first.done;
  await b.receipts.waitFor((r) => r.id === m1.id, "receipt of the first run");
  const dead = readFileSync(tokenFile, "utf8");
  const other = await online(h.info.ws_url, dev); // a password login issues a new token
  await other.client.close();

  const m2 = await b.client.send(dev.id, "token refused", { keep: true });
  const second = device([
    ...["--url", h.info.tcp_url, "--id", dev.id, "--password", dev.password],
    ...["--token-file", tokenFile, "--exit-after", "1"],
  ]);
  const out = await second.done;
  assert.match(out, /session token refused: logging in with the password/);
  assert.match(out, new RegExp(`message ${m2.id} from ${b.client.endpointId}: token refused`));
  const fresh = readFileSync(tokenFile, "utf8");
  assert.match(fresh, /^nst_/);
  assert.notEqual(fresh, dead);
});

/** A private CA and a server certificate it signed for 127.0.0.1, as PEM files in `into`. */
function privateCa(into: string): { ca: string; cert: string; key: string } {
  const f = (name: string) => join(into, name);
  const ssl = (...args: string[]) =>
    execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  ssl(
    "req",
    "-x509",
    ...ec,
    "-days",
    "2",
    "-subj",
    "/CN=NixMsg test CA",
    "-keyout",
    f("ca.key"),
    "-out",
    f("ca.pem"),
    "-addext",
    "basicConstraints=critical,CA:TRUE",
  );
  ssl("req", ...ec, "-subj", "/CN=127.0.0.1", "-keyout", f("server.key"), "-out", f("server.csr"));
  writeFileSync(f("ext.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  ssl(
    "x509",
    "-req",
    "-in",
    f("server.csr"),
    "-CA",
    f("ca.pem"),
    "-CAkey",
    f("ca.key"),
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    f("ext.cnf"),
    "-out",
    f("server.pem"),
  );
  return { ca: f("ca.pem"), cert: f("server.pem"), key: f("server.key") };
}

test("the Python device trusts a private CA given with --ca-file", { skip: skipTls }, async () => {
  const pki = privateCa(dir);
  const tls = await Harness.start({
    set: { tls: { cert_file: pki.cert, key_file: pki.key, allow_plaintext: true } },
  });
  try {
    const dev = await tls.endpoint();
    const b = await online(tls.info.ws_url, await tls.endpoint());
    const reply = await b.client.send(dev.id, "over TLS", { keep: true });
    const out = await device([
      ...["--url", `mqtts://${tls.address}`, "--ca-file", pki.ca],
      ...["--id", dev.id, "--password", dev.password, "--exit-after", "1"],
    ]).done;
    assert.match(out, new RegExp(`message ${reply.id} from ${b.client.endpointId}: over TLS`));
  } finally {
    await tls.stop();
  }
});

test("the mosquitto_rr quick check of docs/devices.md completes the handshake", {
  skip: skipMosquitto,
}, async () => {
  const dev = await h.endpoint();
  const { port } = parseTarget(h.address);
  const command = docBlock("sh", "mosquitto_rr")
    .replaceAll("door-1", dev.id)
    .replaceAll("'login password'", `'${dev.password}'`)
    .replaceAll("7443", String(port));
  const out = execFileSync("bash", ["-c", command], { encoding: "utf8", timeout: 30_000 });
  const resp = JSON.parse(out.trim().split("\n").pop()!) as Record<string, unknown>;
  assert.equal(resp.type, "resp");
  assert.equal(resp.ok, true, out);
  assert.match(String((resp.data as Record<string, unknown>).session_token), /^nst_/);
});
