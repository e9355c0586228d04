// A real webhook receiver for the webhook tests (issue 34): an HTTP server on 127.0.0.1 that
// records every request, checks its Standard Webhooks signature on its own (not with the server's
// code), and answers as the test's `behave` says. It can go down and come back on the same port.
import { createHmac, timingSafeEqual } from "node:crypto";

/** One request the receiver got. */
export interface Hit {
  id: string;
  timestamp: number;
  /** True when `webhook-signature` holds the HMAC of id.timestamp.body with the secret. */
  signed: boolean;
  body: string;
  event: Record<string, unknown>;
  /** The status the receiver answered (0 when it hung up without one). */
  status: number;
}

/** What to answer: a status, or a status after a pause (ms). */
export type Answer = number | { status: number; delayMs: number };

/** A running receiver. */
export interface Receiver {
  readonly port: number;
  readonly url: string;
  readonly hits: Hit[];
  /** Requests received and not answered yet. */
  readonly inflight: number;
  /** Replaces the answer rule. */
  behave(fn: (hit: Hit, n: number) => Answer): void;
  /** Resolves once `pred` holds (checked on every hit); rejects after `timeoutMs`. */
  until(pred: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Hits whose answer was a 2xx, one per event id. */
  delivered(): Map<string, Hit>;
  /** Stops listening (connections are then refused) until {@linkcode Receiver.start}. */
  stop(): Promise<void>;
  start(): void;
  close(): Promise<void>;
}

function signedOk(secret: string, id: string, ts: string, body: string, header: string): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const want = Buffer.from(
    `v1,${createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest("base64")}`,
  );
  return header.split(" ").some((s) => {
    const got = Buffer.from(s);
    return got.length === want.length && timingSafeEqual(got, want);
  });
}

/** Starts a receiver that checks signatures with `secret` (settable later). */
export function startReceiver(secretRef: { secret: string }): Receiver {
  const hits: Hit[] = [];
  const watchers = new Set<() => void>();
  let rule: (hit: Hit, n: number) => Answer = () => 200;
  let server: Deno.HttpServer<Deno.NetAddr> | null = null;
  let port = 0;
  let inflight = 0;
  const notify = () => {
    for (const w of [...watchers]) w();
  };
  const handler = async (req: Request): Promise<Response> => {
    inflight++;
    notify();
    try {
      return await answer(req);
    } finally {
      inflight--;
    }
  };
  const answer = async (req: Request): Promise<Response> => {
    const body = await req.text();
    const id = req.headers.get("webhook-id") ?? "";
    const ts = req.headers.get("webhook-timestamp") ?? "";
    const hit: Hit = {
      id,
      timestamp: Number(ts),
      signed: signedOk(secretRef.secret, id, ts, body, req.headers.get("webhook-signature") ?? ""),
      body,
      event: JSON.parse(body),
      status: 0,
    };
    const answer = rule(hit, hits.filter((h) => h.id === id).length);
    const { status, delayMs } = typeof answer === "number"
      ? { status: answer, delayMs: 0 }
      : answer;
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    hit.status = status;
    hits.push(hit);
    notify();
    return new Response(status === 204 ? null : "ok", { status });
  };
  const start = () => {
    server = Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, handler);
    port = server.addr.port;
  };
  start();
  return {
    get port() {
      return port;
    },
    get url() {
      return `http://127.0.0.1:${port}/hook`;
    },
    hits,
    get inflight() {
      return inflight;
    },
    behave(fn) {
      rule = fn;
    },
    until(pred, what, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          watchers.delete(check);
          reject(new Error(`timed out waiting for ${what}`));
        }, timeoutMs);
        const check = () => {
          if (!pred()) return;
          clearTimeout(timer);
          watchers.delete(check);
          resolve();
        };
        watchers.add(check);
        check();
      });
    },
    delivered() {
      const out = new Map<string, Hit>();
      for (const h of hits) {
        if (h.status >= 200 && h.status < 300 && !out.has(h.id)) out.set(h.id, h);
      }
      return out;
    },
    async stop() {
      await server?.shutdown();
      server = null;
    },
    start,
    async close() {
      watchers.clear();
      await server?.shutdown();
      server = null;
    },
  };
}
