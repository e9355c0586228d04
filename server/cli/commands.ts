import { join } from "node:path";
import { existsSync } from "node:fs";
import { ConfigError, DEFAULT_CONFIG, loadConfig, validateConfig } from "../config/config.ts";
import type { Config } from "../config/types.ts";
import { Logger } from "../log/log.ts";
import { startServer, StartupError } from "../app/server.ts";
import { dbPath, ensureDataDir } from "../app/paths.ts";
import { migrate } from "../store/migrations.ts";
import { openDb } from "../store/db.ts";
import { backupDatabase } from "../store/backup.ts";
import { type AuditEntry, recordAuditRow } from "../store/ops/audit.ts";
import { backupRefusal, openStore } from "../store/store_factory.ts";
import { storeCopy } from "./store_copy.ts";
import { setAdminPassword } from "../store/ops/admin.ts";
import { readSetting } from "../store/queries/settings.ts";
import { PasswordPool } from "../auth/password_pool.ts";
import { randomPassword } from "../auth/generate.ts";
import { adminPasswordProblem } from "../auth/admin_password.ts";
import { type ParsedArgs, UsageError } from "./args.ts";
import { readNewPassword } from "./prompt.ts";
import { healthcheck } from "./healthcheck.ts";
import { argon2SelfCheck } from "./self_check.ts";
import { versionLines } from "./version_info.ts";
import { installCrashGuard } from "../net/crash_guard.ts";

/** Where a command writes: stdout for results, stderr for diagnostics. */
export interface Io {
  out(line: string): void;
  err(line: string): void;
}

/** One CLI command: its help text and what it does. Returns the exit code. */
export interface Command {
  readonly usage: string;
  readonly summary: string;
  readonly help: string;
  run(args: ParsedArgs, io: Io): Promise<number>;
}

const ADMIN_PASSWORD_LENGTH = 20; // spec 8

/** `quickstart --listen` can also come from this environment variable. */
const LISTEN_ENV = "NIXMSG_LISTEN";

async function configOrExit(io: Io): Promise<Config | null> {
  try {
    const { config } = await loadConfig(Deno.env.toObject());
    return config;
  } catch (err) {
    io.err(`Invalid configuration:\n${(err as Error).message}`);
    return null;
  }
}

/** Opens the database for a one-off CLI write, migrating it first. */
async function openMigrated(config: Config): Promise<ReturnType<typeof openDb>> {
  await ensureDataDir(config.data_dir);
  const path = dbPath(config.data_dir);
  await migrate(path, { backupDir: join(config.data_dir, "backup") });
  return openDb(path, { synchronous: config.sqlite_synchronous });
}

/**
 * Stores a new admin password hash and ends every admin web session in one transaction, as the
 * API's password change does (spec 8): a leaked password or cookie stops working at once, even
 * while the server runs (it looks sessions up on every request). Returns the sessions ended.
 */
async function storeAdminPassword(
  config: Config,
  password: string,
  audit: AuditEntry | null,
): Promise<number> {
  const phc = await new PasswordPool({ size: 1 }).hash(password);
  if (config.store.kind !== "sqlite") {
    return await withStore(config, async (store) => {
      const r = await store.run("admin.password_set", { passwordHash: phc, keepSessionHash: "" });
      // A second write: the audit row follows the committed change, as the server's rows do.
      if (audit !== null) await store.run("audit.record", audit);
      return r.sessionsEnded;
    });
  }
  const db = await openMigrated(config);
  try {
    db.exec("BEGIN IMMEDIATE");
    try {
      const now = Date.now();
      // No session hash is "", so every session ends.
      const r = setAdminPassword(db, { passwordHash: phc, keepSessionHash: "" }, now);
      if (audit !== null) recordAuditRow(db, audit, now);
      db.exec("COMMIT");
      return r.sessionsEnded;
    } catch (err) {
      db.exec("ROLLBACK");
      throw err;
    }
  } finally {
    db.close();
  }
}

/** Runs `fn` on the configured store (PostgreSQL; SQLite uses its file directly). */
async function withStore<T>(
  config: Config,
  fn: (store: Awaited<ReturnType<typeof openStore>>) => Promise<T>,
): Promise<T> {
  const store = await openStore(config, { log: new Logger(config.log.level) });
  try {
    return await fn(store);
  } finally {
    await store.close(10_000);
  }
}

async function adminInitialized(config: Config): Promise<boolean> {
  if (config.store.kind !== "sqlite") {
    return await withStore(
      config,
      async (store) => (await store.query("settings.get", { key: "admin_password_hash" })) !== null,
    );
  }
  const db = await openMigrated(config);
  try {
    return readSetting(db, "admin_password_hash") !== null;
  } finally {
    db.close();
  }
}

/** A CLI action as an audit row (操作日志): actor `cli`, no address. */
function cliAudit(action: string, target: string, result: string): AuditEntry {
  return { actor: "cli", action, target, result, ip: "" };
}

/** Stores one CLI audit row in its own transaction (the server may be running: WAL, busy_timeout). */
async function storeCliAudit(config: Config, entry: AuditEntry): Promise<void> {
  if (config.store.kind !== "sqlite") {
    await withStore(config, async (store) => {
      await store.run("audit.record", entry);
    });
    return;
  }
  const db = await openMigrated(config);
  try {
    recordAuditRow(db, entry, Date.now());
  } finally {
    db.close();
  }
}

/** Creates the admin password: printed once, stored as argon2id (spec 8). */
async function adminInit(config: Config, io: Io): Promise<number> {
  if (await adminInitialized(config)) {
    io.err(
      "The admin password is already set for this database. Use `nixmsg admin set-password` to change it",
    );
    return 1;
  }
  const password = randomPassword(ADMIN_PASSWORD_LENGTH);
  await storeAdminPassword(config, password, cliAudit("admin.init", "", "ok"));
  io.out("Admin password created. It is shown only this once; store it now:");
  io.out("");
  io.out(`  user: admin`);
  io.out(`  password: ${password}`);
  io.out("");
  return 0;
}

/** Runs the server on `config` until SIGINT or SIGTERM; `serve` and `quickstart` end here. */
async function serveWith(config: Config, io: Io): Promise<number> {
  const selfCheck = await argon2SelfCheck(new PasswordPool({ size: 1 }));
  if (selfCheck) {
    io.err(selfCheck);
    return 1;
  }
  const log = new Logger(config.log.level);
  // issue 10: no error from one broken peer may end the process.
  const uninstall = installCrashGuard(log);
  // Listened for before serving: a SIGTERM right after "nixmsg serving" (or during start-up)
  // still shuts down in order (spec 7.8) instead of ending the process with status 143.
  const signal = stopSignal();
  // A stop while start-up waits for an unreachable database ends the wait.
  const cancel = new AbortController();
  signal.received.then(() => cancel.abort());
  try {
    const server = await startServer(config, log, { store: { signal: cancel.signal } });
    await signal.received;
    await server.close();
    return 0;
  } catch (err) {
    if (err instanceof StartupError) {
      io.err(err.message);
      // A stop asked for while start-up waited for the database is a clean stop.
      return cancel.signal.aborted ? 0 : 1;
    }
    log.error("startup failed", { error: (err as Error).message });
    io.err(`Cannot start: ${(err as Error).message}`);
    return 1;
  } finally {
    signal.cancel();
    uninstall();
  }
}

export const commands: Record<string, Command> = {
  serve: {
    usage: "nixmsg serve",
    summary: "Start the server",
    help: "Starts NixMsg with the configuration from NIXMSG_CONFIG (default ./config.yaml).\n" +
      "Refuses to start until `nixmsg admin init` has created the admin password.",
    async run(_args, io) {
      const config = await configOrExit(io);
      if (!config) return 1;
      return await serveWith(config, io);
    },
  },
  quickstart: {
    usage: "nixmsg quickstart [--listen HOST:PORT]",
    summary: "Create config.yaml and the admin password if missing, then serve",
    help: "For a first run: writes ./config.yaml from the built-in defaults when no config file\n" +
      "exists, creates the admin password (printed once) when the database has none, then\n" +
      "starts the server exactly like `nixmsg serve`.\n" +
      "The default listens on :7443, every interface, in plaintext, with the admin console.\n" +
      "  --listen HOST:PORT   where to listen instead, e.g. 127.0.0.1:8080 (also the\n" +
      `                       ${LISTEN_ENV} environment variable; the option wins). It goes\n` +
      "                       into a new config.yaml, and overrides an existing one's `listen`\n" +
      "                       for this run.",
    async run(args, io) {
      const listen = args.options.get("listen") ?? Deno.env.get(LISTEN_ENV) ?? "";
      const source = args.options.has("listen") ? "--listen" : LISTEN_ENV;
      if (listen !== "") {
        const problem = listenProblem(listen);
        if (problem !== null) throw new UsageError(`${source} ${listen}: ${problem}`);
      }
      const { path, found } = await loadConfig(Deno.env.toObject()).catch(() => ({
        path: "",
        found: true,
      }));
      if (!found && path) {
        const where = listen === "" ? DEFAULT_CONFIG.listen : listen;
        await Deno.writeTextFile(path, defaultConfigYaml(where));
        io.out(`Wrote ${path} with the default settings (plaintext on ${where}).`);
      }
      let config = await configOrExit(io);
      if (!config) return 1;
      if (listen !== "" && listen !== config.listen) {
        io.out(`Listening on ${listen} (${source}) instead of ${config.listen} from ${path}.`);
        try {
          config = validateConfig({ ...config, listen });
        } catch (err) {
          io.err(`Invalid configuration:\n${(err as Error).message}`);
          return 1;
        }
      }
      if (!(await adminInitialized(config))) {
        const code = await adminInit(config, io);
        if (code !== 0) return code;
      }
      return await serveWith(config, io);
    },
  },
  "admin init": {
    usage: "nixmsg admin init",
    summary: "Create the admin password (once)",
    help: "Generates a 20-character admin password, prints it once and stores only its hash.\n" +
      "Refuses on a database that already has one; use `nixmsg admin set-password` then.",
    async run(_args, io) {
      const config = await configOrExit(io);
      if (!config) return 1;
      return adminInit(config, io);
    },
  },
  "admin set-password": {
    usage: "nixmsg admin set-password [--generate]",
    summary: "Replace the admin password",
    help: "Reads the new admin password (12 to 128 characters) from the terminal without echo,\n" +
      "or the first line of standard input when it is not a terminal. Every admin web\n" +
      "session ends, also on a running server; API tokens stay valid.\n" +
      "  --generate   create a random 20-character password and print it once instead",
    async run(args, io) {
      const config = await configOrExit(io);
      if (!config) return 1;
      let password: string;
      if (args.flags.has("generate")) {
        password = randomPassword(ADMIN_PASSWORD_LENGTH);
      } else {
        const read = await readNewPassword(io);
        if (read === null) return 1;
        password = read;
      }
      const problem = adminPasswordProblem(password);
      if (problem !== null) {
        io.err(problem);
        return 1;
      }
      const ended = await storeAdminPassword(
        config,
        password,
        cliAudit("admin.set_password", "", "ok"),
      );
      if (args.flags.has("generate")) io.out(`New admin password (shown once): ${password}`);
      else io.out("Admin password changed.");
      io.out(`Admin web sessions ended: ${ended}.`);
      return 0;
    },
  },
  backup: {
    usage: "nixmsg backup --out FILE",
    summary: "Copy the live database to FILE (SQLite online backup)",
    help: "Writes a consistent copy of the database to FILE. Safe while `nixmsg serve` runs.\n" +
      "The copy holds undelivered message bodies: keep it as sensitive data.",
    async run(args, io) {
      const out = args.options.get("out");
      if (!out) throw new UsageError("backup needs --out FILE");
      const config = await configOrExit(io);
      if (!config) return 1;
      const refused = backupRefusal(config);
      if (refused !== null) {
        io.err(`Backup refused: ${refused.message}`);
        return 1;
      }
      try {
        await backupDatabase(dbPath(config.data_dir), out);
      } catch (err) {
        io.err(`Backup failed: ${(err as Error).message}`);
        // Only into a database that exists: a failed backup must not create one.
        if (existsSync(dbPath(config.data_dir))) {
          await storeCliAudit(config, cliAudit("backup", out, "error")).catch(() => undefined);
        }
        return 1;
      }
      // The row goes in after the copy, so the copy does not hold it.
      await storeCliAudit(config, cliAudit("backup", out, "ok"));
      io.out(`Backup written to ${out}`);
      return 0;
    },
  },
  "store copy": {
    usage: "nixmsg store copy --to URL",
    summary: "Copy the stopped SQLite database into an empty PostgreSQL one",
    help: "Copies every table of <data_dir>/nixmsg.db (endpoints, sessions, groups, messages,\n" +
      "deliveries, receipts, settings, tokens) into the empty database at URL, with a progress\n" +
      "line per table and a count check at the end (exit 1 when a count differs).\n" +
      "The server must be stopped. URL is postgres://… or postgresql://…, or file:PATH for a\n" +
      "new SQLite file. Then set store.kind: postgres and store.postgres_url.",
    async run(args, io) {
      const to = args.options.get("to");
      if (!to) throw new UsageError("store copy needs --to URL");
      const config = await configOrExit(io);
      if (!config) return 1;
      return await storeCopy(config, to, io);
    },
  },
  "check-config": {
    usage: "nixmsg check-config",
    summary: "Validate the configuration file",
    help: "Loads NIXMSG_CONFIG (default ./config.yaml), reports every bad key with its path and\n" +
      "the reason, and exits 1 when there is any.",
    async run(_args, io) {
      try {
        const { path, found } = await loadConfig(Deno.env.toObject());
        io.out(found ? `${path}: OK` : `${path} not found; the built-in defaults are valid`);
        return 0;
      } catch (err) {
        io.err(`Invalid configuration:\n${(err as Error).message}`);
        return 1;
      }
    },
  },
  healthcheck: {
    usage: "nixmsg healthcheck",
    summary: "GET /healthz on the local port; exit 0 when healthy",
    help:
      "For container health checks (the image has no curl). Uses <data_dir>/listen.addr when\n" +
      "present, otherwise the `listen` address from the configuration.",
    async run(_args, io) {
      const config = await configOrExit(io);
      if (!config) return 1;
      const result = await healthcheck(config);
      if (result.ok) io.out("healthy");
      else io.err(`unhealthy: ${result.reason}`);
      return result.ok ? 0 : 1;
    },
  },
  version: {
    usage: "nixmsg version",
    summary: "Print the version and the runtime's component versions",
    help: "Prints the NixMsg version, then the Deno, V8, SQLite and argon2 backend versions.",
    run(_args, io) {
      for (const line of versionLines()) io.out(line);
      return Promise.resolve(0);
    },
  },
};

/** The config.yaml that `quickstart` writes: defaults, plaintext on `listen`, data in ./data. */
function defaultConfigYaml(listen: string): string {
  return `# NixMsg configuration written by \`nixmsg quickstart\`.
# Every key and its default is documented in deploy/config.example.yaml.
listen: ${JSON.stringify(listen)}
data_dir: "./data"
log:
  level: info
`;
}

/** Why `listen` is not a valid listen address, or null. */
function listenProblem(listen: string): string | null {
  try {
    validateConfig({ listen });
    return null;
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => i.reason).join("; ");
    throw err;
  }
}

/** SIGINT or SIGTERM, listened for from the call on; `cancel` removes the listeners. */
function stopSignal(): { received: Promise<void>; cancel(): void } {
  let resolve!: () => void;
  const received = new Promise<void>((r) => (resolve = r));
  const cancel = () => {
    Deno.removeSignalListener("SIGINT", stop);
    Deno.removeSignalListener("SIGTERM", stop);
  };
  const stop = () => {
    cancel();
    resolve();
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  return { received, cancel };
}
