import type { Config } from "../config/types.ts";
import type { Logger } from "../log/log.ts";
import type { Store } from "../store/store.ts";
import { openStore, type OpenStoreOptions, StoreOpenError } from "../store/store_factory.ts";
import { DataDirLockedError, lockDataDir } from "../store/data_lock.ts";
import { type Listeners, startListeners } from "../net/listener.ts";
import { addressGroup } from "../net/ip.ts";
import { healthRoutes } from "../http/health.ts";
import { createRouter, type Route } from "../http/router.ts";
import { staticHandler } from "../http/static.ts";
import { createBroker } from "../broker/broker.ts";
import type { Broker } from "../broker/types.ts";
import { PasswordPool } from "../auth/password_pool.ts";
import { IpLockouts, LoginLockouts, TalkLockouts } from "../auth/lockout.ts";
import { RateLimiter } from "../auth/rate_limit.ts";
import { InboxTap } from "./inbox_tap.ts";
import { SecurityLog } from "../auth/security_log.ts";
import { ensureDataDir } from "./paths.ts";
import type { App, PresenceView } from "./app_context.ts";
import { Presence, storedOnline } from "./presence.ts";
import { talkHandlers } from "./handlers/talk.ts";
import { presenceHandlers } from "./handlers/presence.ts";
import { groupHandlers } from "./handlers/groups.ts";
import type { Messaging } from "./messaging/effects.ts";
import { MessagingRuntime } from "./messaging/runtime.ts";
import { WebhookDispatcher } from "../webhooks/dispatcher.ts";
import { messagingHandlers } from "./handlers/messaging.ts";
import { ConnectionTable } from "./connections.ts";
import { LoginService } from "./login.ts";
import { type HandlerTable, MqttApp } from "./mqtt_app.ts";
import { sessionHandlers } from "./handlers/session.ts";
import { registrationRoutes } from "./registration.ts";
import { adminRoutes } from "../admin/routes.ts";
import { metricsRoutes } from "../metrics/routes.ts";
import { instrumentRoutes } from "../metrics/instrument.ts";
import { observeAck, observeDuePush } from "../metrics/metrics.ts";
import { type MetricsHistory, startMetricsHistory } from "../metrics/history.ts";
import { connCodePrefix } from "../store/ops/recovery.ts";
import { NodeLeaseKeeper } from "../cluster/node_lease.ts";
import { ClusterNode } from "../cluster/cluster_node.ts";
import { NatsBus } from "../cluster/nats_bus.ts";
import { StoreCounters } from "../cluster/shared_counters.ts";
import { VERSION } from "../version.ts";

/** How often ended lockouts are looked for and logged. */
const LOCK_SWEEP_MS = 1000;
/** How long shutdown waits for running requests to publish their responses after the drain. */
const SETTLE_MS = 5000;

/** A running NixMsg server: the listeners and the store. */
export interface RunningServer {
  readonly config: Config;
  readonly listeners: Listeners;
  readonly store: Store;
  readonly app: App;
  readonly mqtt: MqttApp;
  readonly messaging: MessagingRuntime;
  /** The broker itself; `app.broker` is it behind the live inbox's tap. */
  readonly broker: Broker;
  /** This node's routing, when `cluster.nats_url` is set (issue 30); null on a single node. */
  readonly cluster: ClusterNode | null;
  /** Stops accepting, drains the write queue (spec 7.8), closes everything. */
  close(): Promise<void>;
}

/** Options for tests: an injected clock and a cheaper password hash. */
export interface ServerOptions {
  clock?: () => number;
  pool?: PasswordPool;
  /** The console's metrics history sampling period (default 10 s). */
  historyIntervalMs?: number;
  /** How the store is opened (e.g. `signal`: give up waiting for an unreachable database). */
  store?: Partial<OpenStoreOptions>;
  /** A cluster node's store poll period (ms); replaces `cluster.poll_ms`. */
  clusterPollMs?: number;
  /** A cluster node's lease length (ms); replaces `cluster.lease_seconds`. */
  clusterLeaseMs?: number;
}

/** Raised when `serve` cannot start; the CLI prints the message and exits 1. */
export class StartupError extends Error {}

/**
 * Starts the server in this process: open the store (migrated), recover (spec 7.8: before any
 * connection is accepted), then listen.
 */
export async function startServer(
  config: Config,
  log: Logger,
  opts: ServerOptions = {},
): Promise<RunningServer> {
  await ensureDataDir(config.data_dir);
  // One server per data directory: a second one would write the same database beside the
  // first writer and overwrite its listen.addr.
  let lock;
  try {
    lock = lockDataDir(config.data_dir);
  } catch (err) {
    if (err instanceof DataDirLockedError) throw new StartupError(err.message);
    throw err;
  }
  let server: RunningServer;
  try {
    server = await startLocked(config, log, opts);
  } catch (err) {
    lock.release();
    throw err;
  }
  const close = server.close;
  let closing: Promise<void> | null = null;
  return {
    ...server,
    close: () => closing ??= close().finally(() => lock.release()),
  };
}

async function startLocked(
  config: Config,
  log: Logger,
  opts: ServerOptions,
): Promise<RunningServer> {
  const clock = opts.clock ?? Date.now;
  let store: Store;
  try {
    store = await openStore(config, { ...opts.store, log, clock });
  } catch (err) {
    if (err instanceof StoreOpenError) throw new StartupError(err.message);
    throw err;
  }
  try {
    if ((await store.query("settings.get", { key: "admin_password_hash" })) === null) {
      throw new StartupError(
        "No admin password is set for this database. Run `nixmsg admin init` first",
      );
    }
  } catch (err) {
    await store.close(0);
    throw err;
  }
  store.onCommit((info) => {
    if (!info.ok) log.error("database commit failed", { ops: info.ops });
  });

  let broker: Broker | null = null;
  let listeners: Listeners | null = null;
  let history: MetricsHistory | null = null;
  let dispatcher: WebhookDispatcher | null = null;
  let cluster: ClusterParts | null = null;
  try {
    await store.run("context.configure", {
      graceMs: config.limits.grace_seconds * 1000,
      maxPendingPerSender: config.limits.max_pending_per_sender,
      maxPendingPerReceiver: config.limits.max_pending_per_receiver,
      recordRetentionDays: config.record_retention_days,
    });
    // issue 30: a cluster node recovers only its own connections' push marks.
    const nodeId = config.cluster.nats_url !== "" ? config.cluster.node_id : null;
    const recovered = await store.run("recovery.startup", nodeId === null ? {} : { nodeId });
    log.info("startup recovery", {
      deliveries: recovered.deliveries,
      endpoints: recovered.endpoints,
    });

    const pool = opts.pool ?? new PasswordPool({
      maxQueued: config.limits.max_hash_queue,
      maxQueuedPerOwner: config.limits.max_hash_queue_per_ip,
    });
    await pool.dummyHash(); // made before serving, so no probe pays for it (issue 18)
    const events = new SecurityLog(log, { store, log });
    const conns = new ConnectionTable();
    // issue 30 item 4: a cluster's lockouts count in the store, so every node sees every guess.
    const shared = nodeId !== null ? new StoreCounters(store, log, clock) : undefined;
    const app: App = {
      config,
      log,
      store,
      pool,
      loginLocks: new LoginLockouts({ clock, events, shared }),
      talkLocks: new TalkLockouts({ clock, events, shared }),
      registrationLocks: new IpLockouts({ clock, events, shared, kind: "registration" }),
      adminLocks: new IpLockouts({ clock, events, shared, kind: "admin", accountRule: true }),
      ...(shared ? { sharedCounters: shared } : {}),
      security: events,
      rate: new RateLimiter({ perSecond: config.limits.requests_per_second, clock }),
      conns,
      inbox: new InboxTap(conns, clock),
      broker: null as unknown as Broker,
      messaging: null as unknown as Messaging,
      presence: null as unknown as PresenceView,
      clock,
      addressKey: (ip) => addressGroup(ip, config.limits.ipv6_prefix_bits),
    };
    const handlers: HandlerTable = {
      ...sessionHandlers,
      ...messagingHandlers,
      ...talkHandlers,
      ...presenceHandlers,
      ...groupHandlers,
    };
    const mqtt = new MqttApp(app, new LoginService(app), handlers);
    mqtt.listen({
      handshaken: (conn) => app.inbox.connState(conn.endpointId, true),
      gone: (conn, wasCurrent) => {
        if (wasCurrent) app.inbox.connState(conn.endpointId, false);
      },
    });
    broker = await createBroker({
      maxClients: config.limits.max_clients,
      maxPacketSize: config.limits.max_frame_bytes,
      log,
      hooks: mqtt,
      ...(nodeId === null ? {} : { connCodePrefix: connCodePrefix(nodeId) }),
    });
    // Every downlink goes through the tap, so the live inbox sees what the device gets.
    app.broker = app.inbox.wrap(broker);
    const webhooks = new WebhookDispatcher(app);
    dispatcher = webhooks;
    app.webhooks = webhooks;
    const messaging = new MessagingRuntime(app, mqtt, {
      observeDuePush,
      observeAck,
      applied: (fx) => webhooks.notify(fx),
    });
    app.messaging = messaging;
    const presence = new Presence(app, mqtt);
    app.presence = presence;
    // Before any send can be dispatched: enabled webhooks count as connections (issue 34).
    await webhooks.start();
    history = startMetricsHistory(app, { intervalMs: opts.historyIntervalMs });

    const routes: Route[] = [
      ...healthRoutes({
        // spec 4.3, 7.8: ready means a real write and a real read succeed now.
        ready: () => store.ready(),
        acceptImpaired: () => listeners?.acceptImpaired() ?? false,
      }),
      ...registrationRoutes(app),
      ...adminRoutes(app, mqtt, history),
      ...metricsRoutes(app),
    ];
    const b = broker;
    listeners = await startListeners({
      config,
      log,
      // spec 2.4, 4.3: the console is served wherever the admin API is.
      http: createRouter(instrumentRoutes(routes), {
        log,
        fallbacks: { admin: staticHandler() },
      }),
      onMqtt: (conn) => b.handle(conn),
    });
    if (nodeId !== null) {
      cluster = await startCluster(config, log, opts, {
        nodeId,
        app,
        mqtt,
        messaging,
        presence,
        address: hostPort(listeners.listen),
      });
    }
    await messaging.start();
    log.info("nixmsg serving", {
      listen: hostPort(listeners.listen),
      admin_listen: listeners.admin ? hostPort(listeners.admin) : "",
    });
    return running(
      config,
      log,
      listeners,
      broker,
      store,
      app,
      mqtt,
      messaging,
      history,
      cluster,
    );
  } catch (err) {
    dispatcher?.stop();
    await cluster?.stop();
    history?.close();
    await listeners?.close();
    await broker?.close();
    await store.close(0);
    throw err;
  }
}

function running(
  config: Config,
  log: Logger,
  listeners: Listeners,
  broker: Broker,
  store: Store,
  app: App,
  mqtt: MqttApp,
  messaging: MessagingRuntime,
  history: MetricsHistory,
  cluster: ClusterParts | null,
): RunningServer {
  let closing: Promise<void> | null = null;
  // Lock ends are logged when they are due, not when someone next asks (issue 18).
  const sweeper = setInterval(() => {
    for (const l of [app.loginLocks, app.talkLocks, app.registrationLocks, app.adminLocks]) {
      l.sweep();
    }
  }, LOCK_SWEEP_MS);
  return {
    config,
    listeners,
    store,
    app,
    mqtt,
    messaging,
    broker,
    cluster: cluster?.node ?? null,
    close() {
      // spec 7.8, in this order: stop accepting; let queued writes commit (bounded); send the
      // `resp` of every committed request; DISCONNECT 0x8B to MQTT 5 clients; close the rest.
      closing ??= (async () => {
        clearInterval(sweeper);
        history.close();
        listeners.stopAccepting();
        mqtt.stop();
        messaging.stop();
        app.webhooks?.stop();
        // issue 30: no push loop claims any more; clear this node's marks and give its lease up
        // while the store still takes writes (queued behind every claim already queued).
        await cluster?.stop();
        await store.drain(config.timeouts.shutdown_drain_seconds * 1000);
        await mqtt.settle(SETTLE_MS);
        await broker.close();
        await listeners.close();
        await store.close(0);
        log.info("nixmsg stopped");
      })();
      return closing;
    },
  };
}

/** A running cluster node's parts (issue 30). */
interface ClusterParts {
  readonly node: ClusterNode;
  /** Stops polling and NATS, clears this node's push marks, gives the lease up. */
  stop(): Promise<void>;
}

/**
 * Joins the cluster (issue 30): takes this node's lease in the store (a node that cannot must not
 * serve), connects to NATS in the background, routes wake-ups and logins, and starts the poll.
 */
async function startCluster(
  config: Config,
  log: Logger,
  opts: ServerOptions,
  p: {
    nodeId: string;
    app: App;
    mqtt: MqttApp;
    messaging: MessagingRuntime;
    presence: Presence;
    address: string;
  },
): Promise<ClusterParts> {
  const { nodeId, app, mqtt, messaging, presence } = p;
  let credentials: Uint8Array | null = null;
  if (config.cluster.nats_credentials !== "") {
    try {
      credentials = await Deno.readFile(config.cluster.nats_credentials);
    } catch (err) {
      throw new StartupError(
        `Cannot read cluster.nats_credentials ${config.cluster.nats_credentials}: ${
          (err as Error).message
        }`,
      );
    }
  }
  const lease = await NodeLeaseKeeper.start({
    store: app.store,
    nodeId,
    address: p.address,
    version: VERSION,
    leaseMs: opts.clusterLeaseMs ?? config.cluster.lease_seconds * 1000,
    connections: () => app.broker.clientCount("ws") + app.broker.clientCount("tcp"),
    log,
    // The other nodes may now treat this one as dead and push its deliveries elsewhere: let the
    // clients go, so they reconnect to a node that holds its lease.
    onLost: () => {
      for (const conn of app.conns.all()) app.broker.disconnect(conn.code);
    },
  });
  const node = new ClusterNode({
    app,
    nodeId,
    waker: messaging,
    sessions: {
      fatalLocal: (e, r) => mqtt.fatalLocal(e, r),
      kickLocal: (e) => mqtt.kickLocal(e),
      postLocal: (ids, bytes) => {
        for (const id of ids) {
          const conn = app.conns.current(id);
          if (conn?.handshaken && !conn.closed) app.broker.post(conn.code, bytes, 0);
        }
      },
    },
    presence: {
      remoteChange: (e, online, at) => presence.remoteChange(e, online, at),
      reaped: (ids) => presence.reaped(ids),
    },
    log,
    pollMs: opts.clusterPollMs ?? config.cluster.poll_ms,
    reapMs: config.cluster.reap_seconds * 1000,
  });
  // Scheduled dispatch, cleanup and housekeeping on the node holding the duties only.
  messaging.duties = () => node.duties;
  presence.joinCluster({ publish: (e, online, at) => node.presenceChanged(e, online, at) });
  const bus = NatsBus.open({
    url: config.cluster.nats_url,
    token: config.cluster.nats_token,
    credentials,
    name: nodeId,
    log,
  }, node.handlers());
  messaging.remote = (d, r) => node.remoteWake(d, r);
  messaging.remoteRevoked = (notices) => node.revokeElsewhere(notices);
  mqtt.remote = { close: (e, reason) => node.closeElsewhere(e, reason) };
  app.remoteFrames = (ids, bytes) => node.postElsewhere(ids, bytes);
  mqtt.listen({
    handshaken: (conn) => {
      if (conn.onlineSince !== undefined) node.loggedIn(conn.endpointId, conn.onlineSince);
    },
  });
  node.start(bus);
  log.info("cluster node started", { node_id: nodeId, address: p.address });
  let stopping: Promise<void> | null = null;
  return {
    node,
    stop: () =>
      stopping ??= (async () => {
        messaging.remote = null;
        messaging.remoteRevoked = null;
        messaging.duties = () => false;
        mqtt.remote = null;
        app.remoteFrames = undefined;
        await node.stop();
        const held = [...app.conns.all()]
          .filter((c) => c.handshaken && !c.closed && app.conns.isCurrent(c.endpointId, c.code))
          .map((c) => c.endpointId);
        // Its connections are closed and wrote no disconnect (spec 7.8): release their marks and
        // take its endpoints offline now rather than at this node's next start, which may never
        // come; then the other nodes' watchers hear it.
        const released = await app.store.run("recovery.startup", { nodeId }).then(
          () => true,
          (err) => {
            log.warn("push marks not released; the node's next start or lease expiry does it", {
              error: (err as Error).message,
            });
            return false;
          },
        );
        if (released && held.length > 0) {
          // Only those the store took offline: one logged in elsewhere meanwhile stays online.
          const rows = await app.store.query("presence.times", { ids: held }).catch(() => []);
          const gone = rows.filter((r) => !storedOnline(r.online_since, r.offline_since));
          node.leaving(gone.map((r) => r.id), app.clock());
        }
        await bus.close();
        await lease.stop();
      })(),
  };
}

function hostPort(a: { host: string; port: number }): string {
  return a.host.includes(":") ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}
