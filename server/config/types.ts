/** The typed, frozen server configuration (spec 11.1). Keys mirror the YAML file. */
export interface TlsConfig {
  readonly cert_file: string;
  readonly key_file: string;
  readonly allow_plaintext: boolean;
  /** How often the cert files' mtime is checked, in seconds (spec 4.2: hourly). */
  readonly reload_check_seconds: number;
}

export interface LimitsConfig {
  readonly max_body_bytes: number;
  readonly max_meta_bytes: number;
  readonly max_frame_bytes: number;
  readonly max_ttl_seconds: number;
  readonly max_schedule_seconds: number;
  readonly max_group_members: number;
  readonly grace_seconds: number;
  readonly ack_timeout_seconds: number;
  readonly delivery_window: number;
  readonly receipt_window: number;
  readonly requests_per_second: number;
  readonly max_pending_per_sender: number;
  readonly max_pending_per_receiver: number;
  /** Maximum simultaneous MQTT clients (spec 5 MaximumClients). */
  readonly max_clients: number;
  /** Most bytes queued for one connection that is not reading; past it, it is closed. */
  readonly max_queued_bytes: number;
  /** Most connections speaking HTTP at once on each listener (WebSockets leave the count). */
  readonly max_http_connections: number;
  /** Most TCP connections open at once; 0 derives it from the open-files limit. */
  readonly max_connections: number;
  /** Most connections from one client address; 0 means a quarter of max_connections. */
  readonly max_connections_per_ip: number;
  /** IPv6 addresses count per network of this many bits for every per-address rule (issue 28). */
  readonly ipv6_prefix_bits: number;
  /** HTTP connections one address may have in progress; 0 means a tenth of max_http_connections. */
  readonly max_http_connections_per_ip: number;
  /** MQTT connections (TCP or WebSocket) one address may hold before login; 0: half the per-IP cap. */
  readonly max_unauthenticated_per_ip: number;
  /** Password checks that may wait for the argon2 pool; more are refused at once with busy. */
  readonly max_hash_queue: number;
  /** Password checks one address may have waiting for the argon2 pool. */
  readonly max_hash_queue_per_ip: number;
  /** New connections per second on each listener, bursts up to twice this (EMQX max_conn_rate). */
  readonly max_conn_rate: number;
  /** New connections per second from one address, bursts up to twice this. */
  readonly max_conn_rate_per_ip: number;
  /** Successful self-registrations per minute from one address (spec 6.9), bursts up to this. */
  readonly registrations_per_ip_per_minute: number;
}

export interface TimeoutsConfig {
  /** Close a connection that sends no first byte within this many seconds (spec 4.2). */
  readonly first_byte_seconds: number;
  /** Disconnect a client that has not completed `hello` within this many seconds (spec 6.1). */
  readonly hello_seconds: number;
  /** Close an MQTT connection that has not logged in (CONNACK) within this many seconds. */
  readonly auth_seconds: number;
  /** How long shutdown waits for the write queue to drain (spec 7.8). */
  readonly shutdown_drain_seconds: number;
  /** An HTTP request's headers must arrive within this long (from connect or the last response). */
  readonly http_headers_seconds: number;
  /** An HTTP request's body must arrive within this long after its headers. */
  readonly http_body_seconds: number;
}

export interface WriterConfig {
  /** Most ops merged into one transaction (spec 7.2). */
  readonly max_batch: number;
  /** Extra wait, in ms, for an idle writer to fill a batch; 0 commits at once (group commit). */
  readonly max_wait_ms: number;
}

/** Where the server keeps its data (issue 29): the embedded SQLite file or a PostgreSQL server. */
export interface StoreConfig {
  readonly kind: StoreKindConfig;
  /** `postgres://` or `postgresql://` URL; NIXMSG_POSTGRES_URL replaces it. Never logged as is. */
  readonly postgres_url: string;
}

export type StoreKindConfig = "sqlite" | "postgres";

/**
 * Several nodes behind one address (issue 30): each node's id, and the NATS server that routes
 * between them. Empty `nats_url`: a single node, as before. Each key can come from the
 * environment (NIXMSG_NODE_ID, NIXMSG_NATS_URL, NIXMSG_NATS_CREDENTIALS, NIXMSG_NATS_TOKEN,
 * NIXMSG_CLUSTER_LEASE_SECONDS, NIXMSG_CLUSTER_POLL_MS, NIXMSG_CLUSTER_REAP_SECONDS).
 */
export interface ClusterConfig {
  /** This node's id, unique in the cluster; required with `nats_url`. */
  readonly node_id: string;
  /** `nats://` or `tls://` URLs, comma-separated; empty means no cluster. Never logged as is. */
  readonly nats_url: string;
  /** Path of a NATS `.creds` file (JWT and NKey seed); exclusive with `nats_token`. */
  readonly nats_credentials: string;
  /** A NATS token; exclusive with `nats_credentials`. A secret: never logged or printed. */
  readonly nats_token: string;
  /**
   * How long a node's lease in the store lasts (renewed every third of it); a dead node's
   * deliveries and duties move on after it ran out. Longer than `poll_ms` and `reap_seconds`.
   */
  readonly lease_seconds: number;
  /** How often a node polls the store for work and admin closes NATS may have lost. */
  readonly poll_ms: number;
  /** How often a node looks for dead nodes (leases run out) to release their claims. */
  readonly reap_seconds: number;
}

/**
 * Webhooks (issue 34): an endpoint's messages and receipts POSTed to an HTTP URL. `allow` lists
 * the hosts and networks a webhook may reach although they are private, loopback or link-local
 * (SSRF rule: those are refused unless listed). Entries are exact host names (lower case) or
 * IP addresses / CIDR ranges (kept as CIDR text).
 */
export interface WebhooksConfig {
  readonly allow: readonly string[];
  /** Requests in flight per webhook. */
  readonly concurrency: number;
  /** TCP (and TLS) connect timeout. */
  readonly connect_timeout_seconds: number;
  /** From the request sent to the whole answer read. */
  readonly response_timeout_seconds: number;
  /** Most bytes of an answer's body read (the rest is discarded). */
  readonly max_response_bytes: number;
  /** First retry pause; doubles per failed attempt. */
  readonly retry_initial_ms: number;
  /** Longest retry pause. */
  readonly retry_max_seconds: number;
}

export type LogLevel = "debug" | "info" | "warn" | "error";
export type SqliteSynchronous = "FULL" | "NORMAL";

export interface Config {
  readonly listen: string;
  readonly admin_listen: string;
  readonly tls: TlsConfig;
  readonly trusted_proxies: readonly string[];
  readonly data_dir: string;
  readonly limits: LimitsConfig;
  readonly timeouts: TimeoutsConfig;
  readonly writer: WriterConfig;
  readonly store: StoreConfig;
  readonly cluster: ClusterConfig;
  readonly webhooks: WebhooksConfig;
  readonly session_idle_days: number;
  readonly record_retention_days: number;
  readonly idempotency_hours: number;
  readonly receipt_retention_days: number;
  /** How long audit rows (操作日志) are kept; 0 keeps none past the next housekeeping. */
  readonly audit_retention_days: number;
  readonly sqlite_synchronous: SqliteSynchronous;
  readonly metrics: { readonly token: string };
  readonly log: { readonly level: LogLevel };
}
