// Tools for the edge tests of issue 28: raw MQTT CONNECTs from a chosen loopback address, and a
// bystander that measures whether another address is still served while an attack runs.
import { Buffer } from "node:buffer";
import { connect, type Socket } from "node:net";
import mqttPacket from "mqtt-packet";
import { TestClient } from "./client.ts";

/** How long a bystander's try may take to count as served (issue 28 "Done when"). */
export const SERVED_MS = 2000;

/** The bytes of an MQTT 5 CONNECT for `id` (as ClientID and Username) with `password`. */
export function connectBytes(id: string, password: string): Buffer {
  return mqttPacket.generate({
    cmd: "connect",
    protocolId: "MQTT",
    protocolVersion: 5,
    clean: true,
    keepalive: 60,
    clientId: id,
    username: id,
    password: Buffer.from(password),
  } as mqttPacket.IConnectPacket);
}

/**
 * Sends one CONNECT over raw TCP from `from` and resolves the CONNACK reason code, or null when
 * the server closed without one or `timeoutMs` passed. Never rejects.
 */
export function rawLogin(
  port: number,
  from: string,
  id: string,
  password: string,
  timeoutMs = 10_000,
): Promise<number | null> {
  return new Promise((resolve) => {
    let got = Buffer.alloc(0);
    const socket: Socket = connect({ port, host: "127.0.0.1", localAddress: from, noDelay: true });
    const done = (code: number | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(code);
    };
    const timer = setTimeout(() => done(null), timeoutMs);
    socket.on("error", () => done(null));
    socket.on("close", () => done(null));
    socket.on("connect", () => socket.write(connectBytes(id, password)));
    socket.on("data", (c: Buffer) => {
      got = Buffer.concat([got, c]);
      // CONNACK: 0x20, remaining length, flags, reason code (MQTT 5 §3.2).
      if (got.length >= 4 && got[0] === 0x20) done(got[3]);
    });
  });
}

/** A full WebSocket login (CONNECT and `hello`) from `from`; true when it succeeded. */
export async function wsLogin(
  port: number,
  from: string,
  id: string,
  pw: string,
): Promise<boolean> {
  let c: TestClient | null = null;
  try {
    c = await TestClient.connect(`ws://127.0.0.1:${port}/mqtt`, id, pw, {
      wsOptions: { localAddress: from },
      connectTimeout: SERVED_MS,
      reconnectPeriod: 0,
    });
    return c.connected;
  } catch {
    return false;
  } finally {
    await c?.close().catch(() => {});
  }
}

/** `GET path` from `from` on a fresh connection; the status, or 0 when it failed. */
export function httpStatus(port: number, path: string, from: string): Promise<number> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: "127.0.0.1", localAddress: from });
    let got = "";
    const done = (status: number) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(status);
    };
    const timer = setTimeout(() => done(0), 10_000);
    socket.on("error", () => done(0));
    socket.on("close", () => done(Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0)));
    socket.on(
      "connect",
      () => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
    );
    socket.on("data", (c: Buffer) => {
      got += c.toString("latin1");
      const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
      if (m !== null) done(Number(m[1]));
    });
  });
}

/** What a bystander saw: tries per kind and how many were served within {@linkcode SERVED_MS}. */
export interface BystanderReport {
  readonly tries: number;
  readonly healthz: number;
  readonly ws: number;
  readonly mqtt: number;
  /** Slowest served answer per kind, ms. */
  readonly slowest: { healthz: number; ws: number; mqtt: number };
}

/**
 * From `from`, `tries` rounds of `/healthz`, a WebSocket login and a raw MQTT login of `id`,
 * one after the other; each counts when it succeeded within {@linkcode SERVED_MS}.
 */
export async function bystander(
  port: number,
  from: string,
  id: string,
  pw: string,
  tries: number,
): Promise<BystanderReport> {
  const served = { healthz: 0, ws: 0, mqtt: 0 };
  const slowest = { healthz: 0, ws: 0, mqtt: 0 };
  const time = async (kind: keyof typeof served, run: () => Promise<boolean>) => {
    const t0 = performance.now();
    const ok = await run();
    const ms = performance.now() - t0;
    if (ok && ms <= SERVED_MS) {
      served[kind]++;
      slowest[kind] = Math.max(slowest[kind], Math.round(ms));
    }
  };
  for (let i = 0; i < tries; i++) {
    await time("healthz", async () => (await httpStatus(port, "/healthz", from)) === 200);
    await time("ws", () => wsLogin(port, from, id, pw));
    await time("mqtt", async () => (await rawLogin(port, from, id, pw, SERVED_MS + 500)) === 0);
  }
  return { tries, ...served, slowest };
}

/** True when every kind was served in at least `share` (0.95) of the tries. */
export function servedEnough(r: BystanderReport, share = 0.95): boolean {
  const need = Math.ceil(r.tries * share);
  return r.healthz >= need && r.ws >= need && r.mqtt >= need;
}

/** A running attacker process (tests/helpers/edge_attacker.ts). */
export interface Attacker {
  /** The counts it printed last. */
  last(): Record<string, number>;
  /** Resolves when it exits by itself (the `long_ids` attack). */
  readonly done: Promise<Record<string, number>>;
  /** Stops it and returns its final counts. */
  stop(): Promise<Record<string, number>>;
}

/** Starts `kind` against `port` from `from` with size `n` in its own process. */
export function startAttacker(kind: string, port: number, from: string, n: number): Attacker {
  const script = new URL("./edge_attacker.ts", import.meta.url).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--allow-net",
      "--allow-read",
      "--allow-env",
      script,
      kind,
      String(port),
      from,
      String(n),
    ],
    stdout: "piped",
    stderr: "inherit",
    stdin: "null",
  }).spawn();
  let last: Record<string, number> = {};
  const read = (async () => {
    let buf = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        last = JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
      }
    }
  })();
  const done = child.status.then(async () => {
    await read;
    return last;
  });
  return {
    last: () => last,
    done,
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* it has ended */ }
      return await done;
    },
  };
}
