import { join } from "node:path";
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/log.ts";
import { migrate } from "../store/migrations.ts";
import { openReader } from "../store/reader.ts";
import { Writer } from "../store/writer.ts";
import { type Listeners, startListeners } from "../net/listener.ts";
import { healthRoutes } from "../http/health.ts";
import { createRouter, type Route } from "../http/router.ts";
import type { MqttConn } from "../net/types.ts";
import { dbPath, ensureDataDir } from "./paths.ts";
import { readSetting } from "./settings.ts";

/** A running NixMsg server: the listeners, the writer and the read connection. */
export interface RunningServer {
  readonly config: Config;
  readonly listeners: Listeners;
  readonly writer: Writer;
  /** Stops accepting, drains the write queue (spec 7.8), closes everything. */
  close(): Promise<void>;
}

/** Raised when `serve` cannot start; the CLI prints the message and exits 1. */
export class StartupError extends Error {}

/**
 * Starts the server in this process: migrate, open the writer, then listen (spec 7.8 order:
 * recovery runs before connections are accepted).
 */
export async function startServer(config: Config, log: Logger): Promise<RunningServer> {
  await ensureDataDir(config.data_dir);
  const path = dbPath(config.data_dir);
  const mig = migrate(path, { backupDir: join(config.data_dir, "backup"), log });
  if (mig.from !== mig.to) log.info("database migrated", { from: mig.from, to: mig.to });

  const reader = openReader(path);
  if (readSetting(reader, "admin_password_hash") === null) {
    reader.close();
    throw new StartupError(
      "No admin password is set for this database. Run `nixmsg admin init` first",
    );
  }

  const writer = await Writer.start({
    path,
    synchronous: config.sqlite_synchronous,
    maxBatch: config.writer.max_batch,
    maxWaitMs: config.writer.max_wait_ms,
  });
  writer.onCommit((info) => {
    if (!info.ok) log.error("database commit failed", { ops: info.ops });
  });

  const routes: Route[] = [...healthRoutes({ ready: () => writer.healthy })];
  const onMqtt = (conn: MqttConn) => {
    // Placeholder until the MQTT connection layer lands: MQTT is sniffed but not served yet.
    if (conn.transport === "tcp") conn.stream.destroy();
    else conn.ws.close(1013, "MQTT not available");
  };

  let listeners: Listeners;
  try {
    listeners = await startListeners({ config, log, http: createRouter(routes, { log }), onMqtt });
  } catch (err) {
    await writer.close(0);
    reader.close();
    throw err;
  }
  log.info("nixmsg serving", {
    listen: hostPort(listeners.listen),
    admin_listen: listeners.admin ? hostPort(listeners.admin) : "",
  });

  let closing: Promise<void> | null = null;
  return {
    config,
    listeners,
    writer,
    close() {
      closing ??= (async () => {
        await listeners.close();
        await writer.close(config.timeouts.shutdown_drain_seconds * 1000);
        reader.close();
        log.info("nixmsg stopped");
      })();
      return closing;
    },
  };
}

function hostPort(a: { host: string; port: number }): string {
  return a.host.includes(":") ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}
