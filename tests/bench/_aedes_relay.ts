// The side-by-side baseline of messaging_load.ts: the same traffic shape relayed by bare aedes 2
// in its own process (aedes_relay_server.ts). Each sender publishes QoS 1 bodies to its
// receiver's topic; the receiver answers each with a QoS 1 "receipt" to the sender's topic, which
// ends the message (and, closed loop, sends the next). No durability, no requests, no acks.
import mqtt, { type MqttClient } from "mqtt";
import { type ProcSample, sampleProc, tuneBenchStream } from "./_load_util.ts";

/** The shape to relay: pairs of connections, messages in flight per sender, body, duration. */
export interface RelayShape {
  pairs: number;
  window: number;
  body: string;
  seconds: number;
  transport: "ws" | "tcp";
}

/** What one baseline run measured. */
export interface RelayResult {
  msgPerSec: number;
  /** Relay process CPU per completed message, all threads. */
  cpuUsPerMsg: number;
  completed: number;
  reordered: number;
}

async function connect(url: string, id: string): Promise<MqttClient> {
  const client = mqtt.connect(url, {
    clientId: id,
    protocolVersion: 5,
    clean: true,
    reconnectPeriod: 0,
    connectTimeout: 30_000,
    keepalive: 60,
  });
  tuneBenchStream(client, url);
  await new Promise<void>((resolve, reject) => {
    client.once("connect", () => resolve());
    client.once("error", reject);
  });
  client.on("error", () => {});
  return client;
}

/** Runs the relay process, drives `shape` through it for `shape.seconds` and stops it. */
export async function runAedesRelay(shape: RelayShape): Promise<RelayResult> {
  // permissions: not the shipped command: a bare aedes relay, the benchmark's peer, not NixMsg.
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./aedes_relay_server.ts", import.meta.url).pathname],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    // Bounded: the relay prints its ports at once or the read ends with the process.
    for (let i = 0; i < 100 && !text.includes("\n"); i++) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    const m = /port (\d+) (\d+)/.exec(text);
    if (!m) throw new Error(`aedes relay did not start: ${text}`);
    const url = shape.transport === "tcp"
      ? `mqtt://127.0.0.1:${m[2]}`
      : `ws://127.0.0.1:${m[1]}/mqtt`;
    const senders: MqttClient[] = [];
    const receivers: MqttClient[] = [];
    for (let p = 0; p < shape.pairs; p++) {
      senders.push(await connect(url, `bs${p}`));
      receivers.push(await connect(url, `br${p}`));
    }
    let completed = 0;
    let reordered = 0;
    let sending = true;
    const next = new Array<number>(shape.pairs).fill(0);
    const last = new Array<number>(shape.pairs).fill(-1);
    const send = (p: number) => {
      const n = next[p]++;
      senders[p].publish(`relay/r${p}`, `${n} ${shape.body}`, { qos: 1 });
    };
    for (let p = 0; p < shape.pairs; p++) {
      await receivers[p].subscribeAsync(`relay/r${p}`, { qos: 1 });
      await senders[p].subscribeAsync(`relay/s${p}`, { qos: 1 });
      receivers[p].on("message", (_t, payload) => {
        const s = payload.toString();
        const n = Number(s.slice(0, s.indexOf(" ")));
        if (n < last[p]) reordered++;
        last[p] = n;
        receivers[p].publish(`relay/s${p}`, String(n), { qos: 1 });
      });
      senders[p].on("message", () => {
        completed++;
        if (sending) send(p);
      });
    }
    const first: ProcSample = sampleProc(child.pid);
    const start = performance.now();
    for (let p = 0; p < shape.pairs; p++) for (let w = 0; w < shape.window; w++) send(p);
    await new Promise((r) => setTimeout(r, shape.seconds * 1000));
    const done = completed;
    const elapsed = performance.now() - start;
    const end = sampleProc(child.pid);
    sending = false;
    await Promise.all([...senders, ...receivers].map((c) => c.endAsync(true)));
    return {
      msgPerSec: done / (elapsed / 1000),
      cpuUsPerMsg: ((end.cpuMs - first.cpuMs) * 1000) / Math.max(1, done),
      completed: done,
      reordered,
    };
  } finally {
    child.kill();
    await child.status;
  }
}
