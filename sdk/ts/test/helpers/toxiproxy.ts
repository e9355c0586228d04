/**
 * Weak networks made with toxiproxy (github.com/Shopify/toxiproxy v2.5.0). The conformance harness
 * starts toxiproxy and creates a proxy in front of its server (`toxiproxy_start`); this module
 * drives that proxy over toxiproxy's HTTP API, and {@link ToxicDriver} cycles toxics on it.
 *
 * Toxics (toxiproxy's README): `latency` (latency, jitter ms), `bandwidth` (rate KB/s), `slicer`
 * (average_size, size_variation bytes, delay µs), `reset_peer` (timeout ms: close on the next
 * data), `timeout` (timeout ms: drop everything, then close; 0 = drop and never close, a
 * half-open connection), `limit_data` (bytes: close after that many). `upstream` is client →
 * server, `downstream` server → client. A toxic acts on every connection of the proxy, new ones
 * too, until it is removed.
 */
import type { ConnectionEvent } from "@nixevol/nixmsg";
import type { Events } from "./events.ts";
import type { Harness } from "./harness.ts";

export type Stream = "upstream" | "downstream";

/** A toxic to add; `name` is generated when omitted. */
export interface ToxicSpec {
  type: "latency" | "bandwidth" | "slicer" | "reset_peer" | "timeout" | "limit_data";
  stream: Stream;
  attributes: Record<string, number>;
  name?: string;
}

/** What `toxiproxy_start` answers. */
interface ProxyInfo {
  name: string;
  api_url: string;
  address: string;
  ws_url: string;
  tcp_url: string;
}

/** One toxiproxy proxy in front of a harness's server. */
export class ToxiProxy {
  readonly name: string;
  /** "127.0.0.1:port" the proxy listens on. */
  readonly address: string;
  readonly wsUrl: string;
  readonly tcpUrl: string;
  /** Toxics added so far, by type (for the report). */
  readonly added = new Map<string, number>();
  readonly #api: string;
  #seq = 0;

  private constructor(info: ProxyInfo) {
    this.name = info.name;
    this.address = info.address;
    this.wsUrl = info.ws_url;
    this.tcpUrl = info.tcp_url;
    this.#api = `${info.api_url}/proxies/${info.name}`;
  }

  /** Creates a proxy in front of `h`'s server (starting toxiproxy with the first one). */
  static async start(h: Harness): Promise<ToxiProxy> {
    return new ToxiProxy(await h.command<ProxyInfo>({ cmd: "toxiproxy_start" }));
  }

  /** Adds a toxic; resolves with its name once toxiproxy applied it to every connection. */
  async add(spec: ToxicSpec): Promise<string> {
    const name = spec.name ?? `${spec.type}_${spec.stream}_${++this.#seq}`;
    await this.#call("POST", "/toxics", {
      name,
      type: spec.type,
      stream: spec.stream,
      toxicity: 1,
      attributes: spec.attributes,
    });
    this.added.set(spec.type, (this.added.get(spec.type) ?? 0) + 1);
    return name;
  }

  async update(name: string, attributes: Record<string, number>): Promise<void> {
    await this.#call("POST", `/toxics/${name}`, { attributes });
  }

  /** Removes a toxic (removing a `timeout` toxic closes the connections it held). */
  async remove(name: string): Promise<void> {
    await this.#call("DELETE", `/toxics/${name}`);
  }

  /** Removes every toxic. */
  async clear(): Promise<void> {
    const list = await this.#call("GET", "/toxics") as { name: string }[];
    for (const t of list) await this.remove(t.name);
  }

  async #call(method: string, path: string, body?: unknown): Promise<unknown> {
    const res = await fetch(`${this.#api}${path}`, {
      method,
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`toxiproxy ${method} ${path}: HTTP ${res.status} ${text}`);
    return text === "" ? {} : JSON.parse(text);
  }
}

/** A small seeded PRNG (mulberry32): the same seed gives the same sequence. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An integer in [lo, hi]. */
export function between(rng: () => number, lo: number, hi: number): number {
  return lo + Math.floor(rng() * (hi - lo + 1));
}

/** Toxics that degrade the network for a while without closing anything. */
export type Weather = "latency" | "bandwidth" | "slicer";
const WEATHER: Weather[] = ["latency", "bandwidth", "slicer"];

/** Toxics that end the connection: on both streams, or one as given. */
export type Killer =
  | { type: "reset_peer"; stream: Stream }
  | { type: "limit_data"; stream: Stream }
  /** Drops what flows in `stream` for `ms`, then closes (a stall whose data is lost). */
  | { type: "timeout"; stream: Stream | "both"; ms: number }
  /** Drops everything, closes nothing: both ends keep a dead connection (keep-alive ends it). */
  | { type: "half-open" };

/** The shape of the disruption on one proxy. */
export interface Plan {
  /** Each weather spell lasts this long, ms; the kinds take turns in a seeded order. */
  spellMs: [number, number];
  /** Killers at random moments of the phase, one at a time. */
  killers: Killer[];
}

/** One thing the driver did, for the report. */
export interface DriverEvent {
  atMs: number;
  what: string;
}

/**
 * Disrupts one proxy with toxics: `run` cycles weather (latency with jitter, bandwidth, slicer)
 * in both directions and fires the plan's killers at random moments until told to stop;
 * `inject` adds a scripted disruption at a moment the test chooses. A killer's toxic stays until
 * the client reports `reconnecting` (bounded), then is removed before the SDK's first reconnect
 * attempt (≥ 0.7 s later), so that only the connection it was meant for dies.
 */
export class ToxicDriver {
  readonly log: DriverEvent[] = [];
  /** Killers that ended a connection. */
  cuts = 0;
  /** Killers that found nothing to end within their bound. */
  misses = 0;
  readonly #proxy: ToxiProxy;
  readonly #states: Events<ConnectionEvent>;
  readonly #rng: () => number;
  readonly #t0 = Date.now();
  readonly #pending = new Set<Promise<void>>();
  /** Running injected killers: random killers wait for them. */
  #injected = 0;

  /** `states` are the connection events of the client behind the proxy. */
  constructor(proxy: ToxiProxy, states: Events<ConnectionEvent>, rng: () => number) {
    this.#proxy = proxy;
    this.#states = states;
    this.#rng = rng;
  }

  /** Adds `toxics` for `ms`, then removes them (no connection is closed). */
  inject(what: string, toxics: ToxicSpec[], ms: number): void {
    this.#track(this.#spell(what, toxics, ms));
  }

  /** Fires a killer now; random killers keep off until it is over. */
  injectKiller(what: string, k: Killer, maxMs = 10_000): void {
    this.#injected++;
    this.#track(this.#kill(what, k, maxMs).finally(() => this.#injected--));
  }

  /** Follows `plan` until `until()` is true, waits for injected disruptions, removes all. */
  async run(plan: Plan, phaseMs: number, until: () => boolean): Promise<DriverEvent[]> {
    const rng = this.#rng;
    // Each kind of weather in turn, in a seeded order; killers at seeded moments.
    const order = [...WEATHER].sort(() => rng() - 0.5);
    const latest = Math.max(300, phaseMs - 1000);
    const at = plan.killers.map(() => between(rng, 300, latest)).sort((x, y) => x - y);
    const killers = [...plan.killers];
    for (let i = 0; !until() && i < 10_000; i++) {
      const kind = order[i % order.length]!;
      await this.#spell(kind, weather(kind, rng), between(rng, plan.spellMs[0], plan.spellMs[1]));
      while (
        !until() && killers.length > 0 && Date.now() - this.#t0 >= at[0]! && this.#injected === 0
      ) {
        at.shift();
        const k = killers.shift()!;
        await this.#kill(k.type, k, 10_000);
      }
    }
    await Promise.all([...this.#pending]);
    await this.#proxy.clear();
    this.#note("calm");
    return this.log;
  }

  #track(p: Promise<void>): void {
    const q = p.catch((err) => this.#note(`error: ${err}`)).finally(() => this.#pending.delete(q));
    this.#pending.add(q);
  }

  async #spell(what: string, toxics: ToxicSpec[], ms: number): Promise<void> {
    const names = await Promise.all(toxics.map((t) => this.#proxy.add(t)));
    this.#note(`${what} ${ms} ms ${JSON.stringify(toxics.map((t) => t.attributes))}`);
    await new Promise((r) => setTimeout(r, ms));
    await Promise.all(names.map((n) => this.#proxy.remove(n)));
  }

  /** Adds the killer's toxics and removes them once the client lost its connection. */
  async #kill(what: string, k: Killer, maxMs: number): Promise<void> {
    const lost = this.#states.count((e) => e.state === "reconnecting");
    const gone = this.#states.waitCount(
      lost + 1,
      (e) => e.state === "reconnecting",
      "reconnecting",
      maxMs,
    ).then(() => true, () => false);
    const names = await Promise.all(killerToxics(k, this.#rng).map((t) => this.#proxy.add(t)));
    this.#note(`${what}: ${JSON.stringify(k)}`);
    const hit = await gone;
    await Promise.all(names.map((n) => this.#proxy.remove(n)));
    if (hit) this.cuts++;
    else this.misses++;
    this.#note(`${what}: ${hit ? "connection lost" : `nothing ended within ${maxMs} ms`}`);
  }

  #note(what: string): void {
    this.log.push({ atMs: Date.now() - this.#t0, what });
  }
}

function both(type: ToxicSpec["type"], attributes: Record<string, number>): ToxicSpec[] {
  return [
    { type, stream: "upstream", attributes },
    { type, stream: "downstream", attributes },
  ];
}

/** The toxics of one weather spell, in both directions. */
export function weather(kind: Weather, rng: () => number): ToxicSpec[] {
  switch (kind) {
    case "latency":
      return both("latency", { latency: between(rng, 20, 150), jitter: between(rng, 10, 80) });
    case "bandwidth":
      return both("bandwidth", { rate: between(rng, 8, 64) });
    case "slicer": {
      const size = between(rng, 8, 64);
      return both("slicer", {
        average_size: size,
        size_variation: Math.floor(size / 2),
        delay: between(rng, 200, 3000),
      });
    }
  }
}

function killerToxics(k: Killer, rng: () => number): ToxicSpec[] {
  switch (k.type) {
    case "reset_peer":
      return [{
        type: "reset_peer",
        stream: k.stream,
        attributes: { timeout: between(rng, 0, 200) },
      }];
    case "limit_data":
      return [{
        type: "limit_data",
        stream: k.stream,
        attributes: { bytes: between(rng, 200, 3000) },
      }];
    case "timeout":
      return k.stream === "both"
        ? both("timeout", { timeout: k.ms })
        : [{ type: "timeout", stream: k.stream, attributes: { timeout: k.ms } }];
    case "half-open":
      return both("timeout", { timeout: 0 });
  }
}
