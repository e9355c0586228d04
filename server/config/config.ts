/**
 * Loading and validating the server configuration (spec 11.1).
 *
 * The YAML file is read once at start-up, merged over the defaults, checked key by key and frozen.
 * Every problem is collected, so `nixmsg check-config` can show them all in one run.
 */
import { isIP } from "node:net";
import { LineCounter, parseDocument } from "yaml";
import type {
  ClusterConfig,
  Config,
  LimitsConfig,
  LogLevel,
  SqliteSynchronous,
  StoreConfig,
  StoreKindConfig,
  TimeoutsConfig,
  TlsConfig,
  WebhooksConfig,
  WriterConfig,
} from "./types.ts";

/** One problem in a configuration: the key path (`limits.max_body_bytes`, `trusted_proxies[1]`). */
export interface ConfigIssue {
  path: string;
  reason: string;
}

/** A configuration that cannot be used. `message` lists every issue, one per line. */
export class ConfigError extends Error {
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[]) {
    super(issues.map(formatIssue).join("\n"));
    this.name = "ConfigError";
    this.issues = Object.freeze(issues.map((i) => Object.freeze({ ...i })));
  }
}

function formatIssue(issue: ConfigIssue): string {
  return issue.path === "" ? issue.reason : `${issue.path}: ${issue.reason}`;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** The spec 11.1 defaults plus our documented extra keys. Deep-frozen. */
export const DEFAULT_CONFIG: Config = deepFreeze({
  listen: ":7443",
  admin_listen: "",
  tls: { cert_file: "", key_file: "", allow_plaintext: false, reload_check_seconds: 3600 },
  trusted_proxies: [],
  data_dir: "./data",
  limits: {
    max_body_bytes: 262144,
    max_meta_bytes: 4096,
    max_frame_bytes: 786432,
    max_ttl_seconds: 2592000,
    max_schedule_seconds: 31536000,
    max_group_members: 1000,
    grace_seconds: 60,
    ack_timeout_seconds: 300,
    delivery_window: 32,
    receipt_window: 64,
    requests_per_second: 50,
    max_pending_per_sender: 10000,
    max_pending_per_receiver: 10000,
    max_clients: 2000,
    max_queued_bytes: 8388608,
    max_http_connections: 1000,
    max_connections: 0,
    max_connections_per_ip: 0,
    ipv6_prefix_bits: 64,
    max_http_connections_per_ip: 0,
    max_unauthenticated_per_ip: 0,
    max_hash_queue: 64,
    max_hash_queue_per_ip: 8,
    max_conn_rate: 2000,
    max_conn_rate_per_ip: 500,
    registrations_per_ip_per_minute: 10,
  },
  timeouts: {
    first_byte_seconds: 10,
    hello_seconds: 30,
    auth_seconds: 3,
    shutdown_drain_seconds: 10,
    http_headers_seconds: 10,
    http_body_seconds: 30,
  },
  writer: { max_batch: 256, max_wait_ms: 0 },
  store: { kind: "sqlite", postgres_url: "" },
  cluster: {
    node_id: "",
    nats_url: "",
    nats_credentials: "",
    nats_token: "",
    lease_seconds: 15,
    poll_ms: 1000,
    reap_seconds: 5,
  },
  webhooks: {
    allow: [],
    concurrency: 4,
    connect_timeout_seconds: 5,
    response_timeout_seconds: 10,
    max_response_bytes: 4096,
    retry_initial_ms: 1000,
    retry_max_seconds: 300,
  },
  session_idle_days: 30,
  record_retention_days: 7,
  idempotency_hours: 24,
  receipt_retention_days: 7,
  audit_retention_days: 90,
  sqlite_synchronous: "FULL",
  metrics: { token: "" },
  log: { level: "info" },
});

interface IntRule {
  min: number;
  max?: number;
  /** Replaces the generic "must be at most N" reason. */
  maxReason?: string;
}

// spec 11.1: max_body_bytes may only be lowered; the other bounds keep the server usable.
const LIMIT_RULES: { readonly [K in keyof LimitsConfig]: IntRule } = {
  max_body_bytes: {
    min: 1,
    max: 262144,
    maxReason: "must be at most 262144 (the spec only allows lowering it)",
  },
  max_meta_bytes: { min: 1, max: 4096 },
  max_frame_bytes: { min: 1024, max: 786432 },
  max_ttl_seconds: { min: 1 },
  max_schedule_seconds: { min: 1 },
  max_group_members: { min: 2 },
  grace_seconds: { min: 0 },
  ack_timeout_seconds: { min: 1 },
  delivery_window: { min: 1, max: 1024 },
  receipt_window: { min: 1, max: 1024 },
  requests_per_second: { min: 1 },
  max_pending_per_sender: { min: 0 }, // 0 = unlimited (spec 11.1)
  max_pending_per_receiver: { min: 0 },
  max_clients: { min: 1 },
  // Above the largest frame (max_frame_bytes is at most 786432), so one big push always fits.
  max_queued_bytes: { min: 1048576 },
  max_http_connections: { min: 1 },
  max_connections: { min: 0 }, // 0 = open-files limit minus headroom (issue 18)
  max_connections_per_ip: { min: 0 }, // 0 = a quarter of max_connections
  ipv6_prefix_bits: { min: 16, max: 128 },
  max_http_connections_per_ip: { min: 0 }, // 0 = a tenth of max_http_connections
  max_unauthenticated_per_ip: { min: 0 }, // 0 = half of max_connections_per_ip
  max_hash_queue: { min: 1 },
  max_hash_queue_per_ip: { min: 1 },
  max_conn_rate: { min: 1 },
  max_conn_rate_per_ip: { min: 1 },
  registrations_per_ip_per_minute: { min: 1 },
};

const WRITER_RULES: { readonly [K in keyof WriterConfig]: IntRule } = {
  max_batch: { min: 1, max: 10000 },
  max_wait_ms: { min: 0, max: 1000 },
};

const TOP_INT_RULES = {
  session_idle_days: { min: 0 }, // 0 = tokens never expire (spec 11.1)
  record_retention_days: { min: 0 }, // 0 = keep no record after completion
  idempotency_hours: { min: 1 },
  receipt_retention_days: { min: 0 },
  audit_retention_days: { min: 0 },
} as const satisfies { readonly [K in keyof Config]?: IntRule };

// setTimeout/setInterval fire at once for delays above 2^31-1 ms, so timer seconds stop here.
const MAX_TIMER_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

const SYNC_VALUES: readonly SqliteSynchronous[] = ["FULL", "NORMAL"];
const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];
const STORE_KINDS: readonly StoreKindConfig[] = ["sqlite", "postgres"];

/** The environment variable that replaces `store.postgres_url` (issue 29). */
export const POSTGRES_URL_ENV = "NIXMSG_POSTGRES_URL";

/**
 * A database URL with its password replaced by `***`, for logs and error messages. A text that
 * is not a URL gives "(not a URL)": it may hold a password in a form we cannot find.
 *
 * @example
 * ```ts
 * redactUrl("postgres://nixmsg:s3cret@db:5432/nixmsg"); // "postgres://nixmsg:***@db:5432/nixmsg"
 * ```
 */
export function redactUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "(not a URL)";
  }
  if (u.password !== "") u.password = "***";
  for (const key of [...u.searchParams.keys()]) {
    if (key.toLowerCase() === "password") u.searchParams.set(key, "***");
  }
  return u.href;
}

function readStore(sec: Section, env: Record<string, string | undefined>): StoreConfig {
  const d = DEFAULT_CONFIG.store;
  const kind = sec.choice("kind", d.kind, STORE_KINDS);
  const fromEnv = env[POSTGRES_URL_ENV];
  const useEnv = fromEnv !== undefined && fromEnv !== "";
  const url = useEnv ? fromEnv : sec.str("postgres_url", d.postgres_url);
  const key = useEnv ? `postgres_url (from ${POSTGRES_URL_ENV})` : "postgres_url";
  if (url !== "") {
    let protocol = "";
    try {
      protocol = new URL(url).protocol;
    } catch {
      // reported below
    }
    if (protocol !== "postgres:" && protocol !== "postgresql:") {
      sec.issue(
        key,
        `${
          redactUrl(url)
        } is not a valid database URL: it must start with postgres:// or postgresql://`,
      );
    }
  } else if (kind === "postgres") {
    sec.issue(
      "postgres_url",
      `must be set when store.kind is postgres (or set ${POSTGRES_URL_ENV})`,
    );
  }
  return { kind, postgres_url: url };
}

/** The environment variables that replace the `cluster` keys (issue 30). */
export const CLUSTER_ENV = Object.freeze(
  {
    node_id: "NIXMSG_NODE_ID",
    nats_url: "NIXMSG_NATS_URL",
    nats_credentials: "NIXMSG_NATS_CREDENTIALS",
    nats_token: "NIXMSG_NATS_TOKEN",
    lease_seconds: "NIXMSG_CLUSTER_LEASE_SECONDS",
    poll_ms: "NIXMSG_CLUSTER_POLL_MS",
    reap_seconds: "NIXMSG_CLUSTER_REAP_SECONDS",
  } as const satisfies Record<keyof ClusterConfig, string>,
);

/** Every environment variable that replaces a configuration value. */
export const CONFIG_VALUE_ENV: readonly string[] = Object.freeze([
  POSTGRES_URL_ENV,
  ...Object.values(CLUSTER_ENV),
]);

/**
 * A node id goes into NATS subjects and the nodes table: letters, digits, `_` and `-` only (a
 * `.` would split a subject token), at most 64.
 */
const NODE_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const NATS_PROTOCOLS = ["nats:", "tls:"];

type ClusterPeriodKey = "lease_seconds" | "poll_ms" | "reap_seconds";
type ClusterTextKey = Exclude<keyof ClusterConfig, ClusterPeriodKey>;
/** The store poll: at least 10 ms (tests), at most an hour (a lost notice waits that long). */
const POLL_MS_RULE: IntRule = { min: 10, max: 3_600_000 };

function readCluster(
  sec: Section,
  env: Record<string, string | undefined>,
  store: StoreConfig,
): ClusterConfig {
  const d = DEFAULT_CONFIG.cluster;
  /** The value of `key` and the name issues use for it: the environment wins when set. */
  const value = (key: ClusterTextKey): [string, string] => {
    const fromEnv = env[CLUSTER_ENV[key]];
    if (fromEnv !== undefined && fromEnv !== "") {
      return [fromEnv, `${key} (from ${CLUSTER_ENV[key]})`];
    }
    return [sec.str(key, d[key]), key];
  };
  /** A number of `key` (config or environment, which wins), checked by `check`. */
  const period = (key: ClusterPeriodKey, check: (v: unknown) => Checked<number>): number => {
    const fromEnv = env[CLUSTER_ENV[key]];
    if (fromEnv === undefined || fromEnv === "") return sec.read(key, d[key], check);
    const n = fromEnv.trim() === "" ? NaN : Number(fromEnv);
    const r = check(Number.isNaN(n) ? fromEnv : n);
    if (typeof r === "object") return r.ok;
    sec.issue(`${key} (from ${CLUSTER_ENV[key]})`, r);
    return d[key];
  };
  const lease_seconds = period("lease_seconds", checkSeconds);
  const poll_ms = period("poll_ms", (v) => checkInt(v, POLL_MS_RULE));
  const reap_seconds = period("reap_seconds", checkSeconds);
  // The lease must outlast the checks that act on it: a node renews every third of its lease,
  // and a live node must not be taken for dead between two polls or two reaps of the others.
  if (lease_seconds * 1000 <= poll_ms) {
    sec.issue(
      "lease_seconds",
      `must be longer than cluster.poll_ms (${lease_seconds} s is not more than ${poll_ms} ms)`,
    );
  }
  if (lease_seconds <= reap_seconds) {
    sec.issue(
      "lease_seconds",
      `must be longer than cluster.reap_seconds (${lease_seconds} s is not more than ${reap_seconds} s)`,
    );
  }
  const [node_id, idKey] = value("node_id");
  const [nats_url, urlKey] = value("nats_url");
  const [nats_credentials] = value("nats_credentials");
  const [nats_token] = value("nats_token");

  for (const entry of nats_url === "" ? [] : nats_url.split(",")) {
    const text = entry.trim();
    let u: URL | null = null;
    try {
      u = new URL(text);
    } catch {
      // reported below
    }
    if (u === null || !NATS_PROTOCOLS.includes(u.protocol) || u.hostname === "") {
      sec.issue(
        urlKey,
        `${
          redactUrl(text)
        } is not a NATS server URL: it must be nats://host:port or tls://host:port`,
      );
    }
  }
  if (node_id !== "" && !NODE_ID.test(node_id)) {
    sec.issue(
      idKey,
      "must be 1 to 64 letters, digits, '_' or '-', starting with a letter or digit",
    );
  }
  if (nats_url !== "") {
    if (node_id === "") {
      sec.issue(
        "node_id",
        `must be set when cluster.nats_url is set (or set ${CLUSTER_ENV.node_id})`,
      );
    }
    if (store.kind !== "postgres") {
      sec.issue(
        urlKey,
        "needs store.kind postgres: the nodes of a cluster share one PostgreSQL store",
      );
    }
  }
  if (nats_credentials !== "" && nats_token !== "") {
    sec.issue("nats_token", "set either cluster.nats_credentials or cluster.nats_token, not both");
  }
  return {
    node_id,
    nats_url,
    nats_credentials,
    nats_token,
    lease_seconds,
    poll_ms,
    reap_seconds,
  };
}

/** A checked value, or the reason it was refused. */
type Checked<T> = { ok: T } | string;

function checkInt(v: unknown, rule: IntRule): Checked<number> {
  if (typeof v !== "number" || !Number.isInteger(v)) return "must be an integer";
  if (v < rule.min) return rule.min === 0 ? "must not be negative" : `must be at least ${rule.min}`;
  const max = rule.max ?? Number.MAX_SAFE_INTEGER;
  return v > max ? rule.maxReason ?? `must be at most ${max}` : { ok: v };
}

/** Positive seconds; fractions are allowed so tests can use short timers. */
function checkSeconds(v: unknown): Checked<number> {
  if (typeof v !== "number" || !Number.isFinite(v)) return "must be a number";
  if (v <= 0) return "must be greater than 0";
  return v > MAX_TIMER_SECONDS
    ? `must be at most ${MAX_TIMER_SECONDS} (about 24 days, the timer limit)`
    : { ok: v };
}

/** Collects issues while reading one raw mapping; absent or refused keys keep their defaults. */
class Section {
  readonly #src: Record<string, unknown> = {};
  readonly #path: string;
  readonly #issues: ConfigIssue[];

  constructor(raw: unknown, path: string, known: readonly string[], issues: ConfigIssue[]) {
    this.#path = path;
    this.#issues = issues;
    // A section whose keys are all commented out parses as null: treat it as empty.
    if (raw === undefined || raw === null) return;
    if (!isPlainObject(raw)) {
      this.issue(
        "",
        path === "" ? "The configuration must be a YAML mapping" : "must be a mapping",
      );
      return;
    }
    for (const key of Object.keys(raw)) if (!known.includes(key)) this.issue(key, "unknown key");
    this.#src = raw;
  }

  /** The raw value, or undefined when the key is absent. */
  raw(key: string): unknown {
    return Object.hasOwn(this.#src, key) ? this.#src[key] : undefined;
  }

  issue(key: string, reason: string): void {
    const path = key === "" ? this.#path : this.#path === "" ? key : `${this.#path}.${key}`;
    this.#issues.push({ path, reason });
  }

  read<T>(key: string, def: T, check: (v: unknown) => Checked<T>): T {
    if (!Object.hasOwn(this.#src, key)) return def;
    const r = check(this.#src[key]);
    if (typeof r === "object") return r.ok;
    this.issue(key, r);
    return def;
  }

  int(key: string, def: number, rule: IntRule): number {
    return this.read(key, def, (v) => checkInt(v, rule));
  }

  seconds(key: string, def: number): number {
    return this.read(key, def, checkSeconds);
  }

  str(key: string, def: string): string {
    return this.read(key, def, (v) => typeof v === "string" ? { ok: v } : "must be a string");
  }

  bool(key: string, def: boolean): boolean {
    return this.read(key, def, (v) => typeof v === "boolean" ? { ok: v } : "must be true or false");
  }

  /** A string from a fixed set, matched case-insensitively and returned in the set's spelling. */
  choice<T extends string>(key: string, def: T, values: readonly T[]): T {
    return this.read(key, def, (v) => {
      const found = values.find((c) =>
        typeof v === "string" && c.toLowerCase() === v.toLowerCase()
      );
      return found === undefined ? `must be one of ${values.join(", ")}` : { ok: found };
    });
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

interface HostPort {
  host: string;
  port: number;
}

const HOSTNAME =
  /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/;
const LISTEN_FORMAT = 'must be "host:port", ":port" or "[ipv6]:port"';

/** Splits a listen address (spec 4.1); returns the reason when it is malformed. */
function parseListen(s: string): HostPort | string {
  const m = /^(?:\[([^\]]*)\]|([^:[\]]*)):(\d+)$/.exec(s);
  if (m === null) return LISTEN_FORMAT;
  const port = Number(m[3]);
  if (m[3].length > 5 || port > 65535) return "must have a port from 0 to 65535";
  if (m[1] !== undefined) {
    return isIP(m[1]) === 6 && !m[1].includes("%")
      ? { host: m[1].toLowerCase(), port }
      : "must have an IPv6 address inside [ ]";
  }
  const host = m[2];
  if (host !== "" && isIP(host) !== 4 && !HOSTNAME.test(host)) {
    return "must have a host name or IP address before the port";
  }
  return { host: host.toLowerCase(), port };
}

const WILDCARD_HOSTS = new Set(["", "0.0.0.0", "::"]);

/** Fixed ports clash when the hosts match or either host is a wildcard. Port 0 never clashes. */
function listenersClash(a: HostPort, b: HostPort): boolean {
  if (a.port === 0 || a.port !== b.port) return false;
  return a.host === b.host || WILDCARD_HOSTS.has(a.host) || WILDCARD_HOSTS.has(b.host);
}

/** Checks one trusted proxy entry (spec 4.5); returns it as a CIDR, or the reason it is bad. */
function normalizeCidr(entry: string): { cidr: string } | { reason: string } {
  const bad = { reason: "must be an IP address or CIDR range, such as 10.0.0.0/8 or ::1/128" };
  const parts = entry.split("/");
  if (parts.length > 2 || parts[0].includes("%")) return bad;
  const family = isIP(parts[0]);
  if (family === 0) return bad;
  const bits = family === 4 ? 32 : 128;
  if (parts.length === 1) return { cidr: `${parts[0]}/${bits}` };
  if (!/^\d{1,3}$/.test(parts[1])) return bad;
  if (Number(parts[1]) > bits) return { reason: `must have a prefix length of at most ${bits}` };
  return { cidr: `${parts[0]}/${Number(parts[1])}` };
}

const WEBHOOK_INT_RULES: {
  readonly [K in Exclude<keyof WebhooksConfig, "allow">]: IntRule;
} = {
  concurrency: { min: 1, max: 256 },
  connect_timeout_seconds: { min: 1, max: 300 },
  response_timeout_seconds: { min: 1, max: 300 },
  max_response_bytes: { min: 0, max: 1048576 },
  retry_initial_ms: { min: 10, max: 3_600_000 },
  retry_max_seconds: { min: 1, max: 86400 },
};

function readWebhooks(sec: Section, issues: ConfigIssue[]): WebhooksConfig {
  const d = DEFAULT_CONFIG.webhooks;
  const raw = sec.raw("allow");
  const allow: string[] = [];
  if (raw !== undefined && raw !== null && !Array.isArray(raw)) {
    sec.issue("allow", "must be a list");
  } else {
    for (const [i, entry] of (raw ?? []).entries()) {
      const path = `webhooks.allow[${i}]`;
      if (typeof entry !== "string" || entry.trim() === "") {
        issues.push({ path, reason: "must be a host name, IP address or CIDR range" });
        continue;
      }
      const text = entry.trim().toLowerCase();
      if (isIP(text.split("/")[0]) !== 0) {
        const r = normalizeCidr(text);
        if ("reason" in r) issues.push({ path, reason: r.reason });
        else allow.push(r.cidr);
      } else if (HOSTNAME.test(text)) allow.push(text);
      else issues.push({ path, reason: "must be a host name, IP address or CIDR range" });
    }
  }
  const ints = readInts(sec, WEBHOOK_INT_RULES, d);
  return { allow, ...ints };
}

function readTrustedProxies(raw: unknown, issues: ConfigIssue[]): string[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    issues.push({ path: "trusted_proxies", reason: "must be a list" });
    return [];
  }
  const out: string[] = [];
  raw.forEach((entry: unknown, i: number) => {
    const path = `trusted_proxies[${i}]`;
    if (typeof entry !== "string") {
      issues.push({ path, reason: "must be a string" });
      return;
    }
    const r = normalizeCidr(entry);
    if ("reason" in r) issues.push({ path, reason: r.reason });
    else out.push(r.cidr);
  });
  return out;
}

function readInts<K extends string>(
  sec: Section,
  rules: { readonly [P in K]: IntRule },
  defaults: { readonly [P in NoInfer<K>]: number },
): Record<K, number> {
  const out = {} as Record<K, number>;
  for (const key of Object.keys(rules) as K[]) out[key] = sec.int(key, defaults[key], rules[key]);
  return out;
}

function readTimeouts(sec: Section): TimeoutsConfig {
  const d = DEFAULT_CONFIG.timeouts;
  const out = {} as Record<keyof TimeoutsConfig, number>;
  for (const k of Object.keys(d) as (keyof TimeoutsConfig)[]) out[k] = sec.seconds(k, d[k]);
  return out;
}

function readTls(sec: Section): TlsConfig {
  const d = DEFAULT_CONFIG.tls;
  const tls: TlsConfig = {
    cert_file: sec.str("cert_file", d.cert_file),
    key_file: sec.str("key_file", d.key_file),
    allow_plaintext: sec.bool("allow_plaintext", d.allow_plaintext),
    reload_check_seconds: sec.seconds("reload_check_seconds", d.reload_check_seconds),
  };
  // spec 4.2: a certificate needs its key and the reverse; neither means plaintext only.
  if (tls.cert_file !== "" && tls.key_file === "") {
    sec.issue("key_file", "must be set when cert_file is set");
  }
  if (tls.key_file !== "" && tls.cert_file === "") {
    sec.issue("cert_file", "must be set when key_file is set");
  }
  return tls;
}

function readListeners(top: Section): { listen: string; admin_listen: string } {
  const d = DEFAULT_CONFIG;
  const listen = top.str("listen", d.listen);
  const admin = top.str("admin_listen", d.admin_listen);
  const main = parseListen(listen);
  if (typeof main === "string") top.issue("listen", main);
  // spec 4.1: an empty admin_listen serves the console on listen.
  const second = admin === "" ? null : parseListen(admin);
  if (typeof second === "string") top.issue("admin_listen", second);
  if (typeof main !== "string" && second !== null && typeof second !== "string") {
    if (listenersClash(main, second)) top.issue("admin_listen", "must differ from listen");
  }
  return { listen, admin_listen: admin };
}

/**
 * Merges `raw` (the parsed YAML, or null for an empty file) over {@linkcode DEFAULT_CONFIG},
 * checks every key and returns a deep-frozen Config. Bare proxy IPs come back as /32 or /128,
 * `sqlite_synchronous` in upper case and `log.level` in lower case.
 *
 * @throws {ConfigError} listing every problem found
 * @example
 * ```ts
 * const config = validateConfig({ limits: { max_body_bytes: 65536 } });
 * config.limits.max_body_bytes; // 65536; every other key keeps its default
 * ```
 */
export function validateConfig(
  raw: unknown,
  env: Record<string, string | undefined> = {},
): Config {
  const issues: ConfigIssue[] = [];
  const d = DEFAULT_CONFIG;
  const top = new Section(raw, "", Object.keys(d), issues);
  const sub = (key: keyof Config) =>
    new Section(top.raw(key), key, Object.keys(d[key] as object), issues);

  const listeners = readListeners(top);
  const tls = readTls(sub("tls"));
  const trusted_proxies = readTrustedProxies(top.raw("trusted_proxies"), issues);
  const data_dir = top.str("data_dir", d.data_dir);
  if (data_dir === "") top.issue("data_dir", "must not be empty");
  const store = readStore(sub("store"), env);

  const config: Config = {
    ...listeners,
    tls,
    trusted_proxies,
    data_dir,
    limits: readInts(sub("limits"), LIMIT_RULES, d.limits),
    timeouts: readTimeouts(sub("timeouts")),
    writer: readInts(sub("writer"), WRITER_RULES, d.writer),
    store,
    cluster: readCluster(sub("cluster"), env, store),
    webhooks: readWebhooks(sub("webhooks"), issues),
    ...readInts(top, TOP_INT_RULES, d),
    sqlite_synchronous: top.choice("sqlite_synchronous", d.sqlite_synchronous, SYNC_VALUES),
    metrics: { token: sub("metrics").str("token", d.metrics.token) },
    log: { level: sub("log").choice("level", d.log.level, LOG_LEVELS) },
  };
  if (issues.length > 0) throw new ConfigError(issues);
  return deepFreeze(config);
}

/**
 * Parses YAML text and validates it. An empty file (or one with only comments) gives the defaults.
 *
 * @throws {ConfigError} for YAML syntax errors (path "", with line and column) or invalid values
 * @example
 * ```ts
 * const config = parseConfig("listen: \":8443\"\nlog:\n  level: debug\n");
 * ```
 */
export function parseConfig(
  yamlText: string,
  env: Record<string, string | undefined> = {},
): Config {
  const lines = new LineCounter();
  const doc = parseDocument(yamlText, { lineCounter: lines, prettyErrors: false });
  if (doc.errors.length > 0) {
    throw new ConfigError(doc.errors.map((e) => {
      const { line, col } = lines.linePos(e.pos[0]);
      return {
        path: "",
        reason: `YAML syntax error at line ${line}, column ${col}: ${safe(e.message)}`,
      };
    }));
  }
  let raw: unknown;
  try {
    raw = doc.toJS();
  } catch (e) {
    // For example an alias to an anchor that does not exist.
    throw new ConfigError([{ path: "", reason: `YAML error: ${safe((e as Error).message)}` }]);
  }
  return validateConfig(raw, env);
}

// The parser quotes the offending token; it could be part of metrics.token (spec 12).
function safe(message: string): string {
  return message.replace(/:\s*".*"\s*$/s, "");
}

/** The config file: `NIXMSG_CONFIG` when set and non-empty, else `./config.yaml` (spec 11.1). */
export function resolveConfigPath(
  env: Record<string, string | undefined>,
): { path: string; explicit: boolean } {
  const fromEnv = env.NIXMSG_CONFIG;
  return fromEnv !== undefined && fromEnv !== ""
    ? { path: fromEnv, explicit: true }
    : { path: "./config.yaml", explicit: false };
}

/**
 * Reads and validates the config file named by {@linkcode resolveConfigPath}.
 * A missing `./config.yaml` gives the defaults with `found: false`; a missing file named by
 * `NIXMSG_CONFIG` is an error, since the operator asked for that file.
 *
 * @param env defaults to the process environment (only `NIXMSG_CONFIG` and `NIXMSG_POSTGRES_URL`
 *   are read)
 * @throws {ConfigError} when the file cannot be read or is invalid
 * @example
 * ```ts
 * const { config, path, found } = await loadConfig();
 * ```
 */
export async function loadConfig(
  env?: Record<string, string | undefined>,
): Promise<{ config: Config; path: string; found: boolean }> {
  const { path, explicit } = resolveConfigPath(
    env ?? { NIXMSG_CONFIG: Deno.env.get("NIXMSG_CONFIG") },
  );
  const valueEnv = Object.fromEntries(
    CONFIG_VALUE_ENV.map((name) => [name, env === undefined ? Deno.env.get(name) : env[name]]),
  );
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound && !explicit) {
      const fromEnv = CONFIG_VALUE_ENV.some((name) => (valueEnv[name] ?? "") !== "");
      const config = fromEnv ? validateConfig(null, valueEnv) : DEFAULT_CONFIG;
      return { config, path, found: false };
    }
    const reason = e instanceof Deno.errors.NotFound
      ? `Config file ${path} (from NIXMSG_CONFIG) does not exist`
      : `Cannot read config file ${path}: ${(e as Error).message}`;
    throw new ConfigError([{ path: "", reason }]);
  }
  return { config: parseConfig(text, valueEnv), path, found: true };
}
