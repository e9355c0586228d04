// The attacker of the issue 28 edge tests, run as its own process so that its work does not
// delay the measuring client's timers: `deno run --allow-net edge_attacker.ts KIND PORT FROM N`.
//
// - `none`: does nothing (the measurement's same-run peer).
// - `http`: holds N partial HTTP requests, reopening each one the server cuts.
// - `mqtt_idle`: holds N MQTT connections that sent only the first byte of a CONNECT.
// - `guess`: N loops of password CONNECTs for random unknown ids.
// - `long_ids`: N failed CONNECTs with 60,000-character ids, 20 at a time, then exits.
// - `long_ids_loop`: the same in N loops, until stopped.
// - `short_ids`: the same with short invalid ids, for the baseline.
//
// Prints one JSON line of counts a second, and a last one when it ends (SIGTERM, or done).
import { connect, type Socket } from "node:net";
import { rawLogin } from "./edge_probe.ts";

const [kind, portText, from, nText] = Deno.args;
const port = Number(portText);
const n = Number(nText);
const counts: Record<string, number> = {};
const count = (k: string) => void (counts[k] = (counts[k] ?? 0) + 1);
let stopped = false;
const live = new Set<Socket>();

function hold(bytes: string | Uint8Array): void {
  const open = () => {
    if (stopped) return;
    count("opened");
    const s = connect({ port, host: "127.0.0.1", localAddress: from });
    live.add(s);
    s.on("error", () => {});
    s.on("connect", () => s.write(bytes));
    s.on("close", () => {
      live.delete(s);
      count("cut");
      if (!stopped) setTimeout(open, 0);
    });
  };
  for (let i = 0; i < n; i++) open();
}

async function guess(id: () => string, loops: number, total = Infinity): Promise<void> {
  let left = total;
  await Promise.all(Array.from({ length: loops }, async () => {
    while (!stopped && left-- > 0) {
      const code = await rawLogin(port, from, id(), "some-guess-123", 5000);
      count(code === null ? "none" : `0x${code.toString(16)}`);
    }
  }));
}

const print = () => console.log(JSON.stringify({ ...counts, live: live.size }));
const ticker = setInterval(print, 1000);
const end = () => {
  stopped = true;
  for (const s of live) s.destroy();
  clearInterval(ticker);
  print();
  Deno.exit(0);
};
Deno.addSignalListener("SIGTERM", end);

if (kind === "none") {
  // The same-run peer: the bystander's figures with nobody attacking.
} else if (kind === "http") hold("GET /healthz HTTP/1.1\r\nHost: x\r\n");
else if (kind === "mqtt_idle") hold(new Uint8Array([0x10]));
else if (kind === "guess") void guess(() => `u${crypto.randomUUID().slice(0, 12)}`, n);
else if (kind === "long_ids" || kind === "long_ids_loop") {
  // Each id is new, so nothing can be remembered for one id and reused for the next.
  const long = () => `${crypto.randomUUID()}${"x".repeat(60_000 - 36)}`;
  if (kind === "long_ids_loop") void guess(long, n);
  else {
    await guess(long, 20, n);
    end();
  }
} else if (kind === "short_ids") {
  // The same failure with a short id that is not valid either: the cost of the connection alone.
  await guess(() => `!${crypto.randomUUID().slice(0, 8)}`, 20, n);
  end();
} else {
  console.error(`Unknown attack ${kind}`);
  Deno.exit(2);
}
