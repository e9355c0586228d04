// What the PROXY protocol path costs per connection (issue 30 item 5): fresh HTTP connections,
// one `GET /healthz` each, to one `nixmsg serve` that trusts 127.0.0.1, over three paths in the
// same run, interleaved in rounds so that the machine's load hits them alike:
//   direct   the client connects to the server;
//   header   the client sends a PROXY v2 header itself first (the parsing cost alone);
//   haproxy  through Debian's HAProxy, `mode tcp`, `send-proxy-v2` (the header and one more hop).
//
//   deno run -A tests/bench/proxy_protocol.ts [requests per path, default 2000]
//
// Reported per path: connections per second (sequential, one at a time) and the p50 / p99 time
// from connect to the end of the response.
import { Buffer } from "node:buffer";
import { connect } from "node:net";
import { percentile, prepareHome, startChildServer } from "./_load_util.ts";
import { HAS_HAPROXY, startHaproxy } from "../helpers/haproxy.ts";

const PER_PATH = Number(Deno.args[0] ?? 2000);
const ROUND = 100;
const REQUEST = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
/** PROXY v2, TCP4, 127.0.0.2:40000 -> 127.0.0.1:7443. */
const HEADER = Buffer.concat([
  Buffer.from("\r\n\r\n\0\r\nQUIT\n"),
  Buffer.from("2111000c" + "7f000002" + "7f000001" + "9c401d13", "hex"),
]);

/** One request on a fresh connection; resolves with its time in ms. */
function once(port: number, header: boolean): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: "127.0.0.1" }, () => {
      s.write(header ? Buffer.concat([HEADER, Buffer.from(REQUEST)]) : REQUEST);
    });
    let got = "";
    s.on("data", (c: Buffer) => (got += c.toString()));
    s.on("error", reject);
    s.on("close", () => {
      if (!got.startsWith("HTTP/1.1 200")) return reject(new Error(`bad answer: ${got}`));
      resolve(performance.now() - t0);
    });
  });
}

if (!HAS_HAPROXY) throw new Error("haproxy is not installed (apt-get install haproxy)");
const loadavg = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
const home = await prepareHome({ trusted_proxies: ["127.0.0.1/32"] }, [], "unused-password-1");
const server = await startChildServer(home);
const haproxy = await startHaproxy(home.dir, server.port);
const paths = [
  { name: "direct", port: server.port, header: false, ms: [] as number[], wall: 0 },
  { name: "header", port: server.port, header: true, ms: [] as number[], wall: 0 },
  { name: "haproxy", port: haproxy.port, header: false, ms: [] as number[], wall: 0 },
];
const loadStart = loadavg();
try {
  for (const p of paths) for (let i = 0; i < 50; i++) await once(p.port, p.header); // warm-up
  for (let done = 0; done < PER_PATH; done += ROUND) {
    for (const p of paths) {
      const t0 = performance.now();
      for (let i = 0; i < Math.min(ROUND, PER_PATH - done); i++) {
        p.ms.push(await once(p.port, p.header));
      }
      p.wall += performance.now() - t0;
    }
  }
} finally {
  await haproxy.stop();
  await server.stop();
  await home.cleanup();
}
console.log(`PROXY protocol path, ${PER_PATH} fresh HTTP connections per path, sequential`);
for (const p of paths) {
  const sorted = [...p.ms].sort((a, b) => a - b);
  console.log(
    `  ${p.name.padEnd(8)} ${(p.ms.length / (p.wall / 1000)).toFixed(0).padStart(6)} conn/s` +
      `  p50 ${percentile(sorted, 50).toFixed(2)} ms  p99 ${percentile(sorted, 99).toFixed(2)} ms`,
  );
}
console.log(`  machine load average at start ${loadStart}, at end ${loadavg()} (2 cores)`);
