/**
 * Prometheus metrics (spec 4.3): counts and durations only, never ids, names or bodies (spec 12).
 *
 * Process-wide series (latencies, error and request counters) are module-level, so any layer can
 * report with a plain function call: {@linkcode observeDuePush}, {@linkcode observeAck},
 * {@linkcode countError}, {@linkcode countHttp}. Series that read one server's state (connections,
 * database counts, writer, argon2 pool) belong to {@linkcode createServerMetrics}.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { App } from "../app/app_context.ts";
import { isErrorCode } from "../protocol/mod.ts";
import { VERSION } from "../version.ts";

/** Seconds; from a few ms (an online push) to the 5-minute ack timeout (spec 6.3). */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** Seconds; a group commit with fsync takes about a millisecond (DESIGN, verified). */
const COMMIT_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
/** Ops per commit, up to the 256 of spec 7.2. */
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256];

const shared = new Registry();

const duePush = new Histogram({
  name: "nixmsg_due_push_latency_seconds",
  help: "From a delivery's send time to its first push",
  buckets: LATENCY_BUCKETS,
  registers: [shared],
});
const ackLatency = new Histogram({
  name: "nixmsg_ack_latency_seconds",
  help: "From a push to the recipient's ack",
  buckets: LATENCY_BUCKETS,
  registers: [shared],
});
const errors = new Counter({
  name: "nixmsg_errors_total",
  help: "Error answers by spec 6.10 code, HTTP and MQTT resp",
  labelNames: ["code"] as const,
  registers: [shared],
});
const httpRequests = new Counter({
  name: "nixmsg_http_requests_total",
  help: "Routed HTTP requests by scope and status class",
  labelNames: ["scope", "status"] as const,
  registers: [shared],
});

const authFailures = new Counter({
  name: "nixmsg_auth_failures_total",
  help: "Failed or refused secret checks by kind (login, talk, admin, registration, " +
    "session_token) and reason",
  labelNames: ["kind", "reason"] as const,
  registers: [shared],
});
const lockoutEvents = new Counter({
  name: "nixmsg_lockout_events_total",
  help: "Lockout starts and ends by kind, rule and event (start, end)",
  labelNames: ["kind", "rule", "event"] as const,
  registers: [shared],
});

/** Counts one failed or refused secret check (issue 18). Labels are fixed words, never ids. */
export function countAuthFailure(kind: string, reason: string): void {
  authFailures.inc({ kind, reason });
}

/** Counts one lock start or end (issue 18). */
export function countLockout(kind: string, rule: string, event: "start" | "end"): void {
  lockoutEvents.inc({ kind, rule, event });
}

const connectionsClosed = new Counter({
  name: "nixmsg_connections_closed_total",
  help: "Connections the listener closed to protect the server, by reason",
  labelNames: ["reason"] as const,
  registers: [shared],
});

/** Why the listener closed a connection on its own (bounded label values). */
export type ClosedConnectionReason =
  | "slow_consumer"
  | "http_deadline"
  | "http_cap"
  | "total_cap"
  | "ip_cap"
  | "http_ip_cap"
  | "unauthenticated_ip_cap"
  | "auth_deadline"
  | "conn_rate"
  | "conn_rate_ip"
  | "connect_size";

/** Counts one connection the listener closed to protect the server (issues 10 and 18). */
export function countClosedConnection(reason: ClosedConnectionReason): void {
  connectionsClosed.inc({ reason });
}

const churnGcs = new Counter({
  name: "nixmsg_churn_gc_total",
  help: "Full garbage collections run after bursts of closed connections (issue 28)",
  registers: [shared],
});

/** Counts one churn GC (server/net/churn_gc.ts). */
export function countChurnGc(): void {
  churnGcs.inc();
}

const openConnections = new Gauge({
  name: "nixmsg_open_connections",
  help: "TCP connections open on the listeners, every protocol",
  registers: [shared],
});
const acceptImpaired = new Gauge({
  name: "nixmsg_accept_impaired",
  help: "1 while a listener cannot accept connections (for example out of file descriptors)",
  labelNames: ["listener"] as const,
  registers: [shared],
});
const acceptOutages = new Counter({
  name: "nixmsg_accept_outages_total",
  help: "Times a listener stopped accepting connections",
  labelNames: ["listener"] as const,
  registers: [shared],
});

/** Sets the number of open TCP connections (issue 18). */
export function setOpenConnections(n: number): void {
  openConnections.set(n);
}

/** Marks a listener (`listen` or `admin`) as impaired or accepting again; counts each outage. */
export function setAcceptImpaired(listener: string, impaired: boolean): void {
  acceptImpaired.set({ listener }, impaired ? 1 : 0);
  if (impaired) acceptOutages.inc({ listener });
}

const readyGauge = new Gauge({
  name: "nixmsg_store_ready",
  help: "1 while the last readiness verdict on the database was ready, else 0",
  registers: [shared],
});
const notReady = new Counter({
  name: "nixmsg_store_not_ready_total",
  help: "Times the database became not ready, by reason (commit_failed, probe_failed)",
  labelNames: ["reason"] as const,
  registers: [shared],
});
readyGauge.set(1);

/** Marks the database ready or not (issue 28); a change to not ready is counted with `reason`. */
export function setStoreReady(ready: boolean, reason?: "commit_failed" | "probe_failed"): void {
  readyGauge.set(ready ? 1 : 0);
  if (!ready && reason !== undefined) notReady.inc({ reason });
}

/** Records the time from a delivery's due time to its first push, in ms (spec 4.3). */
export function observeDuePush(ms: number): void {
  duePush.observe(Math.max(0, ms) / 1000);
}

/** Records the time from a push to its ack, in ms (spec 4.3). */
export function observeAck(ms: number): void {
  ackLatency.observe(Math.max(0, ms) / 1000);
}

const webhookAttempts = new Counter({
  name: "nixmsg_webhook_attempts_total",
  help: "Webhook POSTs by event kind (msg, receipt, revoked, test) and result (ok, http_4xx, " +
    "http_5xx, http_3xx, timeout, connect_timeout, refused, reset, address_refused, dns, tls, error)",
  labelNames: ["kind", "result"] as const,
  registers: [shared],
});
const webhookLatency = new Histogram({
  name: "nixmsg_webhook_latency_seconds",
  help: "Duration of each webhook POST, from the request to its answer or failure",
  buckets: LATENCY_BUCKETS,
  registers: [shared],
});
const WEBHOOK_RESULTS = new Set([
  "ok",
  "timeout",
  "connect_timeout",
  "refused",
  "reset",
  "address_refused",
  "dns",
  "tls",
]);

/** Counts one webhook POST and its duration; results fold into bounded labels. */
export function countWebhookAttempt(kind: string, error: string, status: number, ms: number): void {
  let result = error === "" ? "ok" : WEBHOOK_RESULTS.has(error) ? error : "error";
  if (error !== "" && status >= 300 && status < 600) result = `http_${Math.floor(status / 100)}xx`;
  webhookAttempts.inc({ kind, result });
  webhookLatency.observe(Math.max(0, ms) / 1000);
}

/** Counts one error answer. Codes outside the catalogue count as `other` (bounded labels). */
export function countError(code: string): void {
  errors.inc({ code: isErrorCode(code) ? code : "other" });
}

/** Counts one routed HTTP request by scope and status class (`2xx`…`5xx`). */
export function countHttp(scope: string, status: number): void {
  const cls = status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : "5xx";
  httpRequests.inc({ scope, status: cls });
}

/** One server's metrics, rendered on scrape. */
export interface ServerMetrics {
  /** The Prometheus text exposition of every series. */
  render(): Promise<string>;
  /** The Content-Type of {@link render}'s output. */
  readonly contentType: string;
  /** Stops listening to the writer. */
  close(): void;
}

/**
 * The series that read one server's state, merged with the process-wide ones. Database counts
 * are read on the main thread's read connection at scrape time.
 */
export function createServerMetrics(app: App): ServerMetrics {
  const own = new Registry();
  const registers = [own];
  new Gauge({
    name: "nixmsg_info",
    help: "Always 1; the version label tells the server version",
    labelNames: ["version"] as const,
    registers,
    collect() {
      this.set({ version: VERSION }, 1);
    },
  });
  new Gauge({
    name: "nixmsg_connections",
    help: "MQTT connections by transport",
    labelNames: ["transport"] as const,
    registers,
    collect() {
      for (const t of ["ws", "tcp"] as const) this.set({ transport: t }, app.broker.clientCount(t));
    },
  });
  const endpoints = new Gauge({ name: "nixmsg_endpoints", help: "Endpoints", registers });
  const pending = new Gauge({
    name: "nixmsg_pending_deliveries",
    help: "Deliveries in state pending",
    registers,
  });
  const scheduled = new Gauge({
    name: "nixmsg_scheduled_messages",
    help: "Messages in state scheduled",
    registers,
  });
  const webhookBacklog = new Gauge({
    name: "nixmsg_webhook_backlog",
    help: "Events owed to enabled webhooks: pending deliveries (msg) and unacked receipts",
    labelNames: ["kind"] as const,
    registers,
  });
  new Gauge({
    name: "nixmsg_writer_queue_length",
    help: "Write ops queued or in flight",
    registers,
    collect() {
      this.set(app.store.queueLength);
    },
  });
  const commitSeconds = new Histogram({
    name: "nixmsg_writer_commit_duration_seconds",
    help: "Duration of each group commit",
    buckets: COMMIT_BUCKETS,
    registers,
  });
  const commitOps = new Histogram({
    name: "nixmsg_writer_commit_ops",
    help: "Ops per group commit",
    buckets: BATCH_BUCKETS,
    registers,
  });
  const commits = new Counter({
    name: "nixmsg_writer_commits_total",
    help: "Group commits by result",
    labelNames: ["result"] as const,
    registers,
  });
  new Gauge({
    name: "nixmsg_password_hash_queue",
    help: "argon2 computations waiting for the pool",
    registers,
    collect() {
      this.set(app.pool.queued);
    },
  });
  new Counter({
    name: "nixmsg_password_verifications_total",
    help: "argon2 password checks run",
    registers,
    collect() {
      this.reset();
      this.inc(app.pool.verifications);
    },
  });
  new Gauge({
    name: "nixmsg_password_hash_active",
    help: "argon2 computations running",
    registers,
    collect() {
      this.set(app.pool.active);
    },
  });
  const unsubscribe = app.store.onCommit((info) => {
    commits.inc({ result: info.ok ? "ok" : "failed" });
    if (!info.ok) return;
    commitSeconds.observe(info.ms / 1000);
    commitOps.observe(info.ops);
  });
  const registry = Registry.merge([shared, own]);
  return {
    contentType: registry.contentType,
    async render() {
      try {
        const c = await app.store.query("admin.overview_counts", {});
        endpoints.set(c.endpoints);
        pending.set(c.pending_deliveries);
        scheduled.set(c.scheduled_messages);
        const b = await app.store.query("webhook.backlog", {});
        webhookBacklog.set({ kind: "msg" }, b.msgs);
        webhookBacklog.set({ kind: "receipt" }, b.receipts);
      } catch (err) {
        // The other series still tell something; /readyz reports the database.
        app.log.warn("metrics: database counts failed", { error: (err as Error).message });
      }
      return await registry.metrics();
    },
    close: unsubscribe,
  };
}
