/**
 * A TCP proxy that misbehaves on purpose, for the weak-network tests (spec 13 "弱网"): it cuts
 * connections, stalls one or both directions for a while (what packet loss and retransmission
 * look like above TCP), adds per-chunk latency, and refuses connections. It stands in for
 * toxiproxy (not available here): `cut` is toxiproxy's reset (or, half-open, a peer that vanished
 * without a FIN), a stall followed by `cut` its `timeout` toxic, `latency` its latency toxic.
 * Bytes are never reordered or lost while a connection lives; a cut drops whatever was stalled
 * in it, as a real reset does.
 *
 * {@link runChaos} drives one with a seeded random schedule so that a run is reproducible in its
 * decisions (timings still depend on the machine).
 */
import net from "node:net";
import { listenLocal, parseTarget } from "./proxy.ts";

/** A direction through the proxy: `up` is client to server, `down` server to client. */
export type Direction = "up" | "down";

/** mulberry32: a small seeded PRNG with values in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A whole number in [lo, hi] from `rng`. */
export function between(rng: () => number, lo: number, hi: number): number {
  return lo + Math.floor(rng() * (hi - lo + 1));
}

/** One direction of one connection: chunks leave in order, each not before its release time. */
class Pipe {
  readonly #dst: net.Socket;
  readonly #queue: { at: number; buf: Buffer }[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #lastAt = 0;
  #dead = false;
  /** Called with every chunk as it is forwarded. */
  onForward: ((buf: Buffer) => void) | null = null;

  constructor(dst: net.Socket) {
    this.#dst = dst;
  }

  push(buf: Buffer, at: number): void {
    if (this.#dead) return;
    const when = Math.max(at, this.#lastAt); // never overtakes an earlier chunk
    this.#lastAt = when;
    this.#queue.push({ at: when, buf });
    this.#drain();
  }

  /** Everything queued may leave now (a stall was lifted early). */
  releaseAll(now: number): void {
    for (const q of this.#queue) q.at = Math.min(q.at, now);
    this.#lastAt = Math.min(this.#lastAt, now);
    this.#drain();
  }

  kill(): void {
    this.#dead = true;
    this.#queue.length = 0;
    clearTimeout(this.#timer);
  }

  #drain(): void {
    clearTimeout(this.#timer);
    const now = Date.now();
    while (this.#queue.length > 0 && this.#queue[0]!.at <= now) {
      const { buf } = this.#queue.shift()!;
      this.onForward?.(buf);
      this.#dst.write(buf);
    }
    if (this.#queue.length > 0) {
      this.#timer = setTimeout(() => this.#drain(), this.#queue[0]!.at - now);
    }
  }
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  up: Pipe;
  down: Pipe;
}

/** Counts of what a {@link ChaosProxy} did. */
export interface ChaosStats {
  accepted: number;
  refused: number;
  cuts: number;
  stalls: number;
  stalledMs: number;
}

/**
 * A proxy in front of the server (WebSocket or raw MQTT alike) whose faults the test controls.
 *
 * @example
 * ```ts
 * const p = await ChaosProxy.start(h.address);
 * p.stall(500, "down"); // the client hears nothing for 500 ms, then everything in order
 * p.cut(); // reset every open connection
 * ```
 */
export class ChaosProxy {
  readonly stats: ChaosStats = { accepted: 0, refused: 0, cuts: 0, stalls: 0, stalledMs: 0 };
  readonly #server: net.Server;
  readonly #target: { host: string; port: number };
  readonly #pairs = new Set<Pair>();
  readonly #stalledUntil: Record<Direction, number> = { up: 0, down: 0 };
  readonly #sniffers: Record<Direction, ((buf: Buffer) => void)[]> = { up: [], down: [] };
  readonly #orphans = new Set<net.Socket>();
  #refuse = false;
  #latency: () => number = () => 0;

  private constructor(server: net.Server, target: { host: string; port: number }) {
    this.#server = server;
    this.#target = target;
  }

  /** Starts a proxy on 127.0.0.1:0 forwarding to `target` ("host:port"). */
  static async start(target: string): Promise<ChaosProxy> {
    const server = net.createServer();
    const proxy = new ChaosProxy(server, parseTarget(target));
    await listenLocal(server, (s) => proxy.#accept(s));
    return proxy;
  }

  /** "127.0.0.1:port" of the proxy. */
  get address(): string {
    const a = this.#server.address() as net.AddressInfo;
    return `127.0.0.1:${a.port}`;
  }

  /** Open connections through the proxy. */
  get open(): number {
    return this.#pairs.size;
  }

  /** True while a stall holds `dir` (or either direction when omitted). */
  stalled(dir?: Direction): boolean {
    const now = Date.now();
    if (dir) return this.#stalledUntil[dir] > now;
    return this.#stalledUntil.up > now || this.#stalledUntil.down > now;
  }

  /** New connections are closed at once while true. */
  set refuse(value: boolean) {
    this.#refuse = value;
  }

  /** Extra delay in ms for each chunk (order is kept); `() => 0` turns it off. */
  set latency(fn: () => number) {
    this.#latency = fn;
  }

  /** Calls `fn` with every chunk forwarded in `dir` (not the lost ones), for counting frames. */
  sniff(dir: Direction, fn: (buf: Buffer) => void): void {
    this.#sniffers[dir].push(fn);
  }

  /**
   * Forwards nothing in `dir` (default both) for `ms`, on every connection, new ones included;
   * what arrives meanwhile is delivered afterwards, in order, unless a `cut` comes first.
   */
  stall(ms: number, dir: Direction | "both" = "both"): void {
    const until = Date.now() + ms;
    for (const d of dir === "both" ? (["up", "down"] as const) : [dir]) {
      this.#stalledUntil[d] = Math.max(this.#stalledUntil[d], until);
    }
    this.stats.stalls++;
    this.stats.stalledMs += ms;
  }

  /** Ends every stall and latency now; stalled bytes are forwarded at once. */
  calm(): void {
    this.#stalledUntil.up = 0;
    this.#stalledUntil.down = 0;
    this.#latency = () => 0;
    const now = Date.now();
    for (const p of this.#pairs) {
      p.up.releaseAll(now);
      p.down.releaseAll(now);
    }
  }

  /**
   * Breaks every open connection; bytes stalled in them are lost. Returns how many.
   *
   * - `reset`: both sides see the connection close at once.
   * - `half-open`: only the client's side closes. The server's side stays open and silent
   *   (what it sends is swallowed) until the server closes it: a peer that vanished without a
   *   FIN, which the server notices only by keep-alive or when the client logs in again.
   */
  cut(mode: "reset" | "half-open" = "reset"): number {
    const n = this.#pairs.size;
    for (const p of [...this.#pairs]) {
      if (mode === "half-open") this.#orphan(p);
      else this.#end(p);
    }
    if (n > 0) this.stats.cuts++;
    return n;
  }

  /** Server-side sockets left open by half-open cuts and not yet closed by the server. */
  get halfOpen(): number {
    return this.#orphans.size;
  }

  async close(): Promise<void> {
    this.calm();
    this.cut();
    for (const s of this.#orphans) s.destroy();
    this.#orphans.clear();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }

  #orphan(p: Pair): void {
    if (!this.#pairs.delete(p)) return;
    p.up.kill();
    p.down.kill();
    p.client.destroy();
    const s = p.upstream;
    s.removeAllListeners("data");
    s.removeAllListeners("close");
    s.removeAllListeners("error");
    this.#orphans.add(s);
    s.on("data", () => {}); // swallowed
    s.on("error", () => {});
    s.on("close", () => this.#orphans.delete(s));
  }

  #end(p: Pair): void {
    if (!this.#pairs.delete(p)) return;
    p.up.kill();
    p.down.kill();
    p.client.destroy();
    p.upstream.destroy();
  }

  #accept(client: net.Socket): void {
    if (this.#refuse) {
      this.stats.refused++;
      client.destroy();
      return;
    }
    this.stats.accepted++;
    client.setNoDelay(true);
    const upstream = net.connect(this.#target);
    upstream.setNoDelay(true);
    const pair: Pair = { client, upstream, up: new Pipe(upstream), down: new Pipe(client) };
    for (const dir of ["up", "down"] as const) {
      pair[dir].onForward = (buf) => {
        for (const fn of this.#sniffers[dir]) fn(buf);
      };
    }
    this.#pairs.add(pair);
    const end = () => this.#end(pair);
    client.on("data", (d) => pair.up.push(d, this.#releaseAt("up")));
    upstream.on("data", (d) => pair.down.push(d, this.#releaseAt("down")));
    client.on("close", end);
    upstream.on("close", end);
    client.on("error", end);
    upstream.on("error", end);
  }

  #releaseAt(dir: Direction): number {
    return Math.max(Date.now() + this.#latency(), this.#stalledUntil[dir]);
  }
}

/** Counts occurrences of `needle` in a byte stream fed in chunks (matches may span chunks). */
export function counter(needle: string): { feed: (buf: Buffer) => void; readonly count: number } {
  const pat = Buffer.from(needle);
  let tail = Buffer.alloc(0);
  let count = 0;
  return {
    feed(buf: Buffer) {
      const data = Buffer.concat([tail, buf]);
      let i = data.indexOf(pat);
      let last = -1;
      while (i >= 0) {
        count++;
        last = i;
        i = data.indexOf(pat, i + pat.length);
      }
      const keepFrom = Math.max(data.length - (pat.length - 1), last < 0 ? 0 : last + pat.length);
      tail = data.subarray(keepFrom);
    },
    get count() {
      return count;
    },
  };
}

/** The shape of a chaos phase on one proxy. */
export interface ChaosPlan {
  /** Decisions are made every `tickMs[0]`–`tickMs[1]` ms. */
  tickMs: [number, number];
  /** At most this many cuts; a cut counts only when it closed a connection. */
  cuts: number;
  /** Chance of a cut at a tick (when a connection is open and no long stall runs). */
  pCut: number;
  /**
   * Chance that a cut comes at the end of a stall of one or both directions, so that what was
   * stalled is lost: the pushes in flight, or the acks and responses (toxiproxy's `timeout`).
   */
  pStallThenCut: number;
  /** Chance of starting a stall (without a cut) at a tick when none is running. */
  pStall: number;
  /** Stall length range, ms (stalls before a cut too). */
  stallMs: [number, number];
  /** Long stalls of one direction (e.g. longer than the server's ack timeout); never cut. */
  longStalls?: { count: number; ms: [number, number]; dir: Direction };
  /** Chance that a cut leaves the server's side half-open (see {@link ChaosProxy.cut}). */
  pHalfOpen?: number;
  /** Per-chunk latency range while the phase runs, ms. */
  latencyMs?: [number, number];
}

/** One thing the chaos driver did, for the failure message. */
export interface ChaosEvent {
  atMs: number;
  what: string;
}

/** How a cut breaks the connection (see {@link ChaosProxy.cut}). */
export type CutMode = "reset" | "half-open";

function randomDir(rng: () => number): Direction | "both" {
  const r = rng();
  return r < 0.4 ? "both" : r < 0.7 ? "down" : "up";
}

/**
 * Disrupts one proxy: `run` follows a random {@link ChaosPlan} until told to stop, `inject` adds
 * a scripted disruption at a moment the test chooses (for paths that must be exercised in every
 * run). Every random choice comes from `rng`, so the same seed gives the same sequence of
 * decisions (what they hit still depends on timing).
 *
 * @example
 * ```ts
 * const chaos = new Chaos(proxy, plan, prng(42));
 * const done = chaos.run(() => Date.now() > end);
 * chaos.inject("ack lost", 300, "up", "reset"); // stall the acks, then cut: they are lost
 * const log = await done;
 * ```
 */
export class Chaos {
  readonly log: ChaosEvent[] = [];
  /** Cuts made by `inject`. */
  scriptedCuts = 0;
  readonly #proxy: ChaosProxy;
  readonly #plan: ChaosPlan;
  readonly #rng: () => number;
  readonly #t0 = Date.now();
  #cutsLeft: number;
  #longStalls: number;
  /** Random cuts wait until a long or scripted stall is over. */
  #busyUntil = 0;
  #pendingCut: { timer: ReturnType<typeof setTimeout>; fire: () => void } | null = null;

  constructor(proxy: ChaosProxy, plan: ChaosPlan, rng: () => number) {
    this.#proxy = proxy;
    this.#plan = plan;
    this.#rng = rng;
    this.#cutsLeft = plan.cuts;
    this.#longStalls = plan.longStalls?.count ?? 0;
  }

  /**
   * Stalls `dir` for `ms`, then (unless `then` is null) cuts, dropping what was stalled. Random
   * cuts keep off until it is over.
   */
  inject(what: string, ms: number, dir: Direction | "both", then: CutMode | null): void {
    this.#proxy.stall(ms, dir);
    this.#busyUntil = Math.max(this.#busyUntil, Date.now() + ms);
    this.#note(`${what}: stall ${dir} ${ms} ms${then ? `, then ${then} cut` : ""}`);
    if (then === null) return;
    setTimeout(() => {
      const n = this.#proxy.cut(then);
      if (n > 0) this.scriptedCuts++;
      this.#note(`${what}: ${n > 0 ? `${then} cut` : "nothing to cut"}`);
    }, Math.max(0, ms - 1));
  }

  /** Follows the random plan until `until()` returns true, then calms the proxy. */
  async run(until: () => boolean): Promise<ChaosEvent[]> {
    const plan = this.#plan;
    const rng = this.#rng;
    const proxy = this.#proxy;
    if (plan.latencyMs) {
      // Its own generator: how many chunks flow must not shift the schedule's decisions.
      const [lo, hi] = plan.latencyMs;
      const latencyRng = prng(Math.floor(rng() * 2 ** 32));
      proxy.latency = () => between(latencyRng, lo, hi);
    }
    while (!until()) {
      await new Promise((r) => setTimeout(r, between(rng, plan.tickMs[0], plan.tickMs[1])));
      if (until()) break;
      const roll = rng();
      const quiet = this.#pendingCut === null && Date.now() >= this.#busyUntil;
      if (this.#cutsLeft > 0 && proxy.open > 0 && quiet && roll < plan.pCut) {
        const mode: CutMode = rng() < (plan.pHalfOpen ?? 0) ? "half-open" : "reset";
        if (rng() < plan.pStallThenCut) {
          const ms = between(rng, plan.stallMs[0], plan.stallMs[1]);
          const dir = randomDir(rng);
          proxy.stall(ms, dir);
          this.#note(`stall ${dir} ${ms} ms, then cut`);
          const fire = () => {
            this.#pendingCut = null;
            this.#cut("end of stall", mode);
          };
          this.#pendingCut = { timer: setTimeout(fire, ms - 1), fire };
        } else {
          this.#cut("cut", mode);
        }
        continue;
      }
      if (proxy.stalled()) continue;
      if (this.#longStalls > 0 && plan.longStalls && proxy.open > 0 && rng() < 0.15) {
        this.#longStalls--;
        const ms = between(rng, plan.longStalls.ms[0], plan.longStalls.ms[1]);
        proxy.stall(ms, plan.longStalls.dir);
        this.#busyUntil = Math.max(this.#busyUntil, Date.now() + ms);
        this.#note(`long stall ${plan.longStalls.dir} ${ms} ms`);
        continue;
      }
      if (rng() < plan.pStall) {
        const ms = between(rng, plan.stallMs[0], plan.stallMs[1]);
        const dir = randomDir(rng);
        proxy.stall(ms, dir);
        this.#note(`stall ${dir} ${ms} ms`);
      }
    }
    if (this.#pendingCut) {
      clearTimeout(this.#pendingCut.timer);
      this.#pendingCut.fire();
    }
    proxy.calm();
    this.#note("calm");
    return this.log;
  }

  #cut(why: string, mode: CutMode): void {
    const n = this.#proxy.cut(mode);
    if (n > 0) this.#cutsLeft--;
    this.#note(`${why}: ${n > 0 ? `${mode} cut` : "nothing to cut"}`);
  }

  #note(what: string): void {
    this.log.push({ atMs: Date.now() - this.#t0, what });
  }
}
