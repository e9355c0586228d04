// The V8 inspector protocol, as the benchmarks use it: one session per target over its WebSocket
// (tests/bench/cpu_profile.ts, and messaging_load.ts --alloc).

/** One inspector target as `/json/list` describes it. */
export interface Target {
  title: string;
  url: string;
  webSocketDebuggerUrl: string;
}

/** One inspector session over its WebSocket: `call` sends a method and waits for its result. */
export class Session {
  #ws: WebSocket;
  #next = 1;
  #waiting = new Map<number, (r: unknown) => void>();
  readonly open: Promise<void>;
  /** Called with each event (a message without an id), e.g. heap snapshot chunks. */
  onEvent: ((method: string, params: Record<string, unknown>) => void) | null = null;

  constructor(url: string) {
    this.#ws = new WebSocket(url);
    this.open = new Promise((resolve, reject) => {
      this.#ws.onopen = () => resolve();
      this.#ws.onerror = () => reject(new Error(`inspector connection to ${url} failed`));
    });
    this.#ws.onmessage = (e) => {
      const m = JSON.parse(String(e.data)) as {
        id?: number;
        result?: unknown;
        error?: unknown;
        method?: string;
        params?: Record<string, unknown>;
      };
      if (m.id === undefined) {
        if (m.method !== undefined) this.onEvent?.(m.method, m.params ?? {});
        return;
      }
      const done = this.#waiting.get(m.id);
      this.#waiting.delete(m.id);
      done?.(m.error ? { error: m.error } : m.result);
    };
  }

  call<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.#next++;
    this.#ws.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve) => this.#waiting.set(id, (r) => resolve(r as T)));
  }

  close(): void {
    this.#ws.close();
  }
}

/** Waits (bounded) for the inspector at `hostPort` and returns its main-thread target. */
export async function mainTarget(hostPort: string, waitMs = 60_000): Promise<Target> {
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    try {
      const targets = await (await fetch(`http://${hostPort}/json/list`)).json() as Target[];
      // Workers are listed as well; the main thread's is the first.
      if (targets.length > 0) return targets[0];
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`no inspector at ${hostPort}`);
}

interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children?: SamplingNode[];
}

/**
 * V8's sampling heap profiler on one target: every allocation is counted, also those the
 * garbage collector has reclaimed since, so `stop` reports what the target allocated in between
 * (sampled every `intervalBytes`), with the functions that allocated most.
 */
export class AllocationSampler {
  #session: Session;

  private constructor(session: Session) {
    this.#session = session;
  }

  static async start(target: Target, intervalBytes = 4096): Promise<AllocationSampler> {
    const session = new Session(target.webSocketDebuggerUrl);
    await session.open;
    await session.call("HeapProfiler.enable");
    await session.call("HeapProfiler.startSampling", {
      samplingInterval: intervalBytes,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    return new AllocationSampler(session);
  }

  async stop(top = 10): Promise<{ bytes: number; sites: [string, number][] }> {
    const { profile } = await this.#session.call<{ profile: { head: SamplingNode } }>(
      "HeapProfiler.stopSampling",
    );
    this.#session.close();
    const bySite = new Map<string, number>();
    let bytes = 0;
    const stack: SamplingNode[] = [profile.head];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (n.selfSize > 0) {
        const { functionName, url, lineNumber } = n.callFrame;
        const short = url.replace(/^.*\/(server|registry\.npmjs\.org)\//, "$1/");
        const key = `${functionName || "(anonymous)"} ${short}:${lineNumber + 1}`;
        bySite.set(key, (bySite.get(key) ?? 0) + n.selfSize);
        bytes += n.selfSize;
      }
      for (const c of n.children ?? []) stack.push(c);
    }
    return { bytes, sites: [...bySite].sort((a, b) => b[1] - a[1]).slice(0, top) };
  }
}
