// Shared setup of the messaging tests over the wire: the endpoint password, `send` frame builders,
// frame filters and a harness that starts a test server and closes every client it connected.
import type { IClientOptions } from "mqtt";
import { type Frame, online, type TestClient } from "./client.ts";
import { startTestServer, type TestServer } from "./test_server.ts";
import { countFaults, QUIET_MS, reportFaults, scaledMs, settle, STALL_MS } from "./fault_counts.ts";

/** The login password of every endpoint the messaging tests create. */
export const PW = "device-password-1";

/** A frame or a frame's `data`, read loosely. */
export type Data = Record<string, unknown>;

/** `offline` options of a message kept for an hour while the receiver is offline (spec 6.2). */
export const KEEP = { offline: { keep: true, ttl_seconds: 3600 } };

/** A `send` request for a utf8 text message to endpoint `to`; `extra` adds or overrides fields. */
export function sendFrame(id: string, to: string, text: string, extra: Data = {}): Data {
  return {
    type: "send",
    id,
    to: { kind: "endpoint", id: to },
    body: { enc: "utf8", data: text },
    ...extra,
  };
}

/** {@linkcode sendFrame} with `delay_ms: 0` (dispatched at once) unless `extra` sets it. */
export function sendNowFrame(id: string, to: string, text: string, extra: Data = {}): Data {
  return sendFrame(id, to, text, { delay_ms: 0, ...extra });
}

/** The `msg` frames `c` has received so far, only those of message `id` when given. */
export function msgs(c: TestClient, id?: string): Frame[] {
  return c.frames.filter((f) => f.type === "msg" && (id === undefined || f.id === id));
}

/** The ids of the `msg` frames `c` has received so far, in arrival order. */
export function msgIds(c: TestClient): unknown[] {
  return msgs(c).map((f) => f.id);
}

/** The `receipt` frames `c` has received so far. */
export function receipts(c: TestClient): Frame[] {
  return c.frames.filter((f) => f.type === "receipt");
}

/** Resolves with the first `msg` frame of message `id` that `c` receives. */
export function waitMsg(c: TestClient, id: string, what: string = id): Promise<Frame> {
  return c.waitFrame((f) => f.type === "msg" && f.id === id, what);
}

/** Resolves with the first `receipt` frame for message `id` that `c` receives. */
export function waitReceipt(c: TestClient, id: string, what = "receipt"): Promise<Frame> {
  return c.waitFrame((f) => f.type === "receipt" && f.id === id, what);
}

/** A running test server and the clients a test connected to it. */
export interface Harness {
  t: TestServer;
  /** Creates endpoints `ids` with the password {@linkcode PW}. */
  endpoints(...ids: string[]): Promise<void>;
  /** Connects and handshakes `id` over WebSocket; the client is closed when the test ends. */
  online(id: string, password?: string): Promise<TestClient>;
  /**
   * Connects and handshakes `id` with {@linkcode PW} at `url` (`t.wsUrl` or `t.tcpUrl`), with
   * MQTT.js `opts` merged over the defaults; the client is closed when the test ends.
   */
  onlineAt(url: string, id: string, opts?: Partial<IClientOptions>): Promise<TestClient>;
  /** Like {@linkcode Harness.online}, and also returns the session token of the hello. */
  session(id: string, password?: string): Promise<{ client: TestClient; token: string | null }>;
  /** Closes `clients` when the test ends, too (for clients connected another way). */
  track(...clients: TestClient[]): void;
}

/**
 * Starts a test server with `overrides`, runs `fn`, then closes every client connected through
 * the harness (or tracked) and the server, whether `fn` passed or threw.
 */
export async function withServer(
  overrides: Record<string, unknown>,
  fn: (h: Harness) => Promise<void>,
): Promise<void> {
  const t = await startTestServer(overrides);
  const open: TestClient[] = [];
  const connect = async (
    url: string,
    id: string,
    password: string,
    opts?: Partial<IClientOptions>,
  ) => {
    const s = await online(url, id, password, opts);
    open.push(s.client);
    return s;
  };
  try {
    await fn({
      t,
      async endpoints(...ids) {
        for (const id of ids) await t.createEndpoint(id, PW);
      },
      online: async (id, password = PW) => (await connect(t.wsUrl, id, password)).client,
      onlineAt: async (url, id, opts) => (await connect(url, id, PW, opts)).client,
      session: (id, password = PW) => connect(t.wsUrl, id, password),
      track: (...clients) => void open.push(...clients),
    });
  } finally {
    for (const c of open) await c.close();
    await t.close();
  }
}

/** `msg` frames of message `id` of `from` that `c` got, from frame index `since`. */
function pushesOf(c: TestClient, from: string, id: string, since = 0): number {
  return c.frames.slice(since).filter((f) => f.type === "msg" && f.from === from && f.id === id)
    .length;
}

/**
 * Waits, bounded and never throwing, until `c` got a push of every id of `from`, or nothing has
 * moved for {@linkcode STALL_MS}; resolves with whether all came. For a fault test's steps before
 * its count: a message missing there is then reported by {@linkcode receiveAndAck} as `lost=N`
 * with its id, not as a timeout.
 */
export async function settlePushed(
  c: TestClient,
  from: string,
  ids: readonly string[],
): Promise<boolean> {
  const settled = await settle({
    done: () => ids.every((id) => pushesOf(c, from, id) > 0),
    subscribe: (f) => c.watch(f),
    timeoutMs: scaledMs(15_000),
    quietMs: 0,
    stallMs: STALL_MS,
  });
  return settled.done;
}

/**
 * A fault test's receiving end on a {@linkcode TestClient}: waits (bounded, never throwing) until
 * `c` got every id of `from`, acks each, then waits a quiet window after the last ack answer;
 * counts lost (never pushed), redelivered (pushed again before the ack) and duplicated (pushed
 * after its ack was answered), records them (tests/helpers/fault_counts.ts) and fails with
 * `lost=N` and the ids. Resolves with the ack answers, in the order of the ids received.
 */
export async function receiveAndAck(
  c: TestClient,
  from: string,
  ids: readonly string[],
  row: { key: string; fault: string; crashes: () => number; figures?: Record<string, number> },
): Promise<Frame[]> {
  const t0 = Date.now();
  await settlePushed(c, from, ids);
  const got = ids.filter((id) => pushesOf(c, from, id) > 0);
  const answers = await Promise.all(got.map((id) => c.request({ type: "ack", from, id })));
  const ackedAt = c.frames.length;
  await settle({
    done: () => true,
    subscribe: (f) => c.watch(f),
    timeoutMs: scaledMs(15_000),
    quietMs: QUIET_MS,
  });
  const seen = new Set(got);
  const after = (id: string) => pushesOf(c, from, id, ackedAt);
  reportFaults({
    key: row.key,
    fault: row.fault,
    ...countFaults(ids, [{
      has: (id) => seen.has(id),
      redelivered: got.reduce((n, id) => n + pushesOf(c, from, id) - after(id) - 1, 0),
      duplicates: got.reduce((n, id) => n + after(id), 0),
    }]),
    crashes: row.crashes(),
    ms: Date.now() - t0,
    figures: row.figures ?? {},
  });
  return answers;
}
