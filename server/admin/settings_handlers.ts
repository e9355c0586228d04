/**
 * The overview, the read-only settings and the registration settings (spec 8).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { randomPassword } from "../auth/generate.ts";
import { VERSION } from "../version.ts";
import type { AdminDeps } from "./deps.ts";
import type { AdminRequest } from "./guards.ts";
import { bad, ok, optBool, optString, readJson, requireSome } from "./request.ts";

/** spec 8: `generate: true` makes a 16-character code. */
const GENERATED_CODE_LENGTH = 16;
const CODE_RULE = { min: 8, max: 64 };

/** The address a listener really bound (`<data_dir>/<role>.addr`, spec 4.1), "" when unknown. */
function boundAddress(dataDir: string, role: "listen" | "admin"): string {
  try {
    return readFileSync(join(dataDir, `${role}.addr`), "utf8").trim();
  } catch {
    return "";
  }
}

/** The overview, settings and registration handlers. */
export function settingsHandlers(d: AdminDeps) {
  const { app } = d;
  const writer = app.store;
  // The routes are made while the server starts: this process's start, for GET /nodes.
  const startedAt = app.clock();

  /** GET /api/admin/overview: stored counts plus the live connection table. */
  async function overview(req: AdminRequest): Promise<void> {
    const counts = await app.store.query("admin.overview_counts", {});
    let online = 0;
    for (const conn of app.conns.all()) {
      if (conn.handshaken && app.conns.isCurrent(conn.endpointId, conn.code)) online++;
    }
    ok(req.ctx, {
      version: VERSION,
      server_time: app.clock(),
      ...counts,
      online,
      connections: { ws: app.broker.clientCount("ws"), tcp: app.broker.clientCount("tcp") },
    });
  }

  /**
   * GET /api/admin/nodes (issue 30): every node's lease in the store, expired ones too, and which
   * node answers. A single node without a cluster holds no lease: the list is empty.
   */
  async function nodes(req: AdminRequest): Promise<void> {
    const rows = await app.store.query("node.list", {});
    const now = app.clock();
    ok(req.ctx, {
      server_time: now,
      this_node: app.config.cluster.node_id,
      local: {
        id: app.config.cluster.node_id,
        address: boundAddress(app.config.data_dir, "listen"),
        version: VERSION,
        started_at: startedAt,
        connections: app.broker.clientCount("ws") + app.broker.clientCount("tcp"),
      },
      nodes: rows.map((n) => ({
        id: n.node_id,
        address: n.address,
        version: n.version,
        started_at: n.started_at,
        renewed_at: n.renewed_at,
        lease_until: n.lease_until,
        alive: n.lease_until > now,
        connections: n.connections,
      })),
    });
  }

  /** GET /api/admin/settings: the configuration without secrets (spec 12). */
  async function settings(req: AdminRequest): Promise<void> {
    const c = app.config;
    // issue 30: on a cluster the account lock may have been reached through another node.
    await app.adminLocks.refreshAccount("admin");
    ok(req.ctx, {
      listen: c.listen,
      admin_listen: c.admin_listen,
      // The real addresses: a configured port 0 becomes the port the system chose.
      listen_bound: boundAddress(c.data_dir, "listen"),
      admin_listen_bound: c.admin_listen === "" ? "" : boundAddress(c.data_dir, "admin"),
      tls: {
        enabled: c.tls.cert_file !== "",
        cert_file: c.tls.cert_file,
        key_file: c.tls.key_file,
        allow_plaintext: c.tls.allow_plaintext,
      },
      trusted_proxies: [...c.trusted_proxies],
      data_dir: c.data_dir,
      limits: { ...c.limits },
      session_idle_days: c.session_idle_days,
      record_retention_days: c.record_retention_days,
      idempotency_hours: c.idempotency_hours,
      receipt_retention_days: c.receipt_retention_days,
      audit_retention_days: c.audit_retention_days,
      sqlite_synchronous: c.sqlite_synchronous,
      metrics: { token_set: c.metrics.token !== "" },
      log: { level: c.log.level },
      // issue 28: the per-account lock of the admin password, for the console's notice.
      admin_lockout: {
        locked_until: app.adminLocks.accountLockedUntil("admin"),
        last_locked_at: app.adminLocks.lastAccountLock,
      },
    });
  }

  /** GET /api/admin/registration: `enabled`, `code`, `updated_at` (spec 8). */
  async function registration(req: AdminRequest): Promise<void> {
    ok(req.ctx, await app.store.query("admin.registration_settings", {}));
  }

  /**
   * PUT /api/admin/registration: `enabled`, `code` or `generate: true` (spec 8). Enabling needs a
   * code, or every registration would fail with `registration_code_invalid`.
   */
  async function updateRegistration(req: AdminRequest): Promise<void> {
    const body = await readJson(req.ctx, ["enabled", "code", "generate"]);
    requireSome(body, ["enabled", "code", "generate"]);
    const enabled = optBool(body, "enabled");
    let code = optString(body, "code", CODE_RULE);
    const generate = optBool(body, "generate");
    if (code !== undefined && code.trim() !== code) throw bad("安全码首尾不能有空格");
    if (generate === true) {
      if (code !== undefined) throw bad("code 和 generate 只能给一个");
      code = randomPassword(GENERATED_CODE_LENGTH);
    }
    if (
      enabled === true && code === undefined &&
      (await app.store.query("admin.registration_settings", {})).code === ""
    ) {
      throw bad("开启注册前先设置安全码");
    }
    if (enabled !== undefined || code !== undefined) {
      await writer.run("admin.registration_set", { enabled, code });
    }
    ok(req.ctx, await app.store.query("admin.registration_settings", {}));
  }

  return { overview, nodes, settings, registration, updateRegistration };
}
