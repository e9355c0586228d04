/**
 * Endpoint management (spec 8): list, create, get, update, delete, kick, password reset, unlock,
 * talk password, and the batch of disable / enable / delete. The CSV import is in
 * endpoint_import.ts.
 */
import { randomPassword } from "../auth/generate.ts";
import { validateNewEndpoint } from "../app/endpoint_rules.ts";
import { type ErrorCode, errorInfo, isErrorCode, isValidId } from "../protocol/mod.ts";
import { OpError } from "../store/op_error.ts";
import type { EndpointFilter } from "../store/queries/admin.ts";
import type { AdminDeps } from "./deps.ts";
import type { AdminRequest } from "./guards.ts";
import { endpointView } from "./views.ts";
import { type EndpointActions, endpointActions } from "./endpoint_actions.ts";
import {
  GENERATED_PASSWORD_LENGTH,
  generateEndpointId,
  maxDelayMs,
  REMARK_MAX,
} from "./endpoint_fields.ts";
import {
  bad,
  httpFail,
  ok,
  opFailure,
  optBool,
  optInt,
  optString,
  pageOf,
  pageQuery,
  queryBool,
  queryEnum,
  queryText,
  readJson,
  reqIdList,
  reqString,
  requireSome,
} from "./request.ts";

const NOT_FOUND = "端不存在";
/** Most ids in one batch request. */
const BATCH_MAX = 1000;
const BATCH_ACTIONS = ["disable", "enable", "delete"] as const;

function notFound(err: unknown): never {
  return opFailure(err, { not_found: NOT_FOUND });
}

/** The endpoint handlers. */
export function endpointHandlers(d: AdminDeps) {
  const { app, mqtt } = d;
  const writer = app.store;
  const actions: EndpointActions = endpointActions(d);
  const delayMax = () => maxDelayMs(app.config.limits.max_schedule_seconds);

  const item = async (id: string) => {
    const row = await app.store.query("admin.endpoint_by_id", { id });
    if (row === null) throw httpFail("not_found", NOT_FOUND);
    return endpointView(app, row);
  };

  /** GET /api/admin/endpoints: `q`, `source`, `enabled`; ordered by id; with `total`. */
  async function list(req: AdminRequest): Promise<void> {
    const url = req.ctx.url;
    const { cursor, limit } = pageQuery(url);
    const filter: EndpointFilter = {
      q: queryText(url, "q", 64),
      source: queryEnum(url, "source", ["admin", "self"] as const),
      enabled: queryBool(url, "enabled"),
    };
    const rows = await app.store.query("admin.endpoints_list", {
      filter,
      afterId: cursor,
      limit: limit + 1,
    });
    const page = pageOf(rows, limit, (r) => r.id);
    const total = await app.store.query("admin.endpoints_count", { filter });
    ok(req.ctx, {
      items: page.items.map((r) => endpointView(app, r)),
      next_cursor: page.next,
      total,
    });
  }

  /** POST /api/admin/endpoints: empty id or password = generated; the password shown once. */
  async function create(req: AdminRequest): Promise<void> {
    const body = await readJson(req.ctx, [
      "id",
      "name",
      "remark",
      "login_password",
      "talk_password",
      "default_delay_ms",
    ]);
    const text = (key: string) => {
      // Missing is empty (generated); null is not a string and is refused like any other type.
      const v = body[key] === undefined ? "" : body[key];
      if (typeof v !== "string") throw bad(`字段不合法：${key} 必须是字符串`);
      return v;
    };
    const fields = {
      id: text("id"),
      loginPassword: text("login_password"),
      name: text("name"),
      talkPassword: text("talk_password"),
    };
    const problem = validateNewEndpoint(fields);
    if (problem !== null) throw bad(problem);
    const remark = optString(body, "remark", { max: REMARK_MAX }) ?? "";
    const defaultDelayMs = optInt(body, "default_delay_ms", 0, delayMax()) ?? 0;
    const id = fields.id || await generateEndpointId(app.store);
    req.object = id;
    const generated = fields.loginPassword === ""
      ? randomPassword(GENERATED_PASSWORD_LENGTH)
      : null;
    const loginHash = await app.pool.hash(generated ?? fields.loginPassword);
    const talkHash = fields.talkPassword === "" ? null : await app.pool.hash(fields.talkPassword);
    await writer.run("endpoint.create", {
      id,
      name: fields.name,
      remark,
      source: "admin",
      loginHash,
      talkHash,
      defaultDelayMs,
    }).catch((err) => opFailure(err));
    const created = await item(id);
    ok(
      req.ctx,
      generated === null ? { item: created } : { item: created, login_password: generated },
    );
  }

  /** GET /api/admin/endpoints/{id}. */
  async function get(req: AdminRequest): Promise<void> {
    const id = req.ctx.params.id;
    const view = await item(id);
    ok(req.ctx, {
      item: view,
      groups: await app.store.query("admin.endpoint_group_count", { id }),
      // The per-endpoint lock only: no source IP is "" (spec 5).
      login_paused_until: await app.loginLocks.lockedUntilShared(id, ""),
    });
  }

  /** PATCH /api/admin/endpoints/{id}: plain edits first, then enable or disable (spec 7.6). */
  async function update(req: AdminRequest): Promise<void> {
    const body = await readJson(req.ctx, ["name", "remark", "default_delay_ms", "enabled"]);
    requireSome(body, ["name", "remark", "default_delay_ms", "enabled"]);
    const name = optString(body, "name", { max: 64 });
    const remark = optString(body, "remark", { max: REMARK_MAX });
    const defaultDelayMs = optInt(body, "default_delay_ms", 0, delayMax());
    const enabled = optBool(body, "enabled");
    const id = req.ctx.params.id;
    const plain = name !== undefined || remark !== undefined || defaultDelayMs !== undefined;
    if (!plain && enabled !== undefined) {
      req.action = enabled ? "endpoint.enable" : "endpoint.disable";
    }
    if (plain) {
      await writer.run("admin.endpoint_update", { id, name, remark, defaultDelayMs })
        .catch(notFound);
    }
    if (enabled === false) await actions.disable(id).catch(notFound);
    if (enabled === true) await actions.enable(id).catch(notFound);
    ok(req.ctx, { item: await item(id) });
  }

  /** DELETE /api/admin/endpoints/{id} (spec 7.6 删除端 X). */
  async function remove(req: AdminRequest): Promise<void> {
    await actions.remove(req.ctx.params.id).catch(notFound);
    ok(req.ctx, {});
  }

  /** POST /api/admin/endpoints/{id}/kick: disconnect only; the client may reconnect (6.8). */
  async function kick(req: AdminRequest): Promise<void> {
    const id = req.ctx.params.id;
    await item(id);
    ok(req.ctx, { kicked: await mqtt.kick(id) });
  }

  /** POST /api/admin/endpoints/{id}/reset-login-password: shown once (spec 8). */
  async function resetPassword(req: AdminRequest): Promise<void> {
    await readJson(req.ctx, []);
    const id = req.ctx.params.id;
    await item(id);
    const password = randomPassword(GENERATED_PASSWORD_LENGTH);
    const loginHash = await app.pool.hash(password);
    await actions.resetPassword(id, loginHash).catch(notFound);
    ok(req.ctx, { login_password: password });
  }

  /** POST /api/admin/endpoints/{id}/unlock: both login lockouts (spec 5, 8). */
  async function unlock(req: AdminRequest): Promise<void> {
    await readJson(req.ctx, []);
    const id = req.ctx.params.id;
    await item(id);
    await app.loginLocks.unlock(id); // issue 30: on every node of a cluster
    ok(req.ctx, {});
  }

  /** PUT /api/admin/endpoints/{id}/talk-password: "" clears; the version goes up (6.6). */
  async function talkPassword(req: AdminRequest): Promise<void> {
    const body = await readJson(req.ctx, ["talk_password"]);
    const pw = reqString(body, "talk_password", { max: 128 });
    const id = req.ctx.params.id;
    await item(id);
    const talkHash = pw === "" ? null : await app.pool.hash(pw);
    await writer.run("talk.set_password", { endpointId: id, talkHash }).catch(notFound);
    await app.talkLocks.clearTarget(id); // spec 5: a new talk password resets the per-target count
    ok(req.ctx, { item: await item(id) });
  }

  /** POST /api/admin/endpoints/batch: each id on its own; one failure does not stop others. */
  async function batch(req: AdminRequest): Promise<void> {
    const body = await readJson(req.ctx, ["action", "ids"]);
    const action = reqString(body, "action", { max: 16 });
    if (!(BATCH_ACTIONS as readonly string[]).includes(action)) {
      throw bad("字段不合法：action 必须是 disable、enable 或 delete");
    }
    const ids = reqIdList(body, "ids", BATCH_MAX, isValidId);
    req.action = `endpoint.batch_${action}`;
    req.object = auditList(ids);
    const run = action === "disable"
      ? actions.disable
      : action === "enable"
      ? actions.enable
      : actions.remove;
    const items = await Promise.all(ids.map(async (id) => {
      try {
        await run(id);
        return { id, ok: true };
      } catch (err) {
        const code: ErrorCode = err instanceof OpError && isErrorCode(err.code) ? err.code : "busy";
        if (code === "busy") app.log.error("batch action failed", { id, error: String(err) });
        const message = code === "not_found" ? NOT_FOUND : errorInfo(code).message;
        return { id, ok: false, error: { code, message } };
      }
    }));
    ok(req.ctx, { items });
  }

  return { list, create, get, update, remove, kick, resetPassword, unlock, talkPassword, batch };
}

/** At most 50 ids for an audit line, then `…+N` (docs/admin-api.md "Audit log"). */
export function auditList(ids: readonly string[]): string {
  const shown = ids.slice(0, 50).join(",");
  return ids.length > 50 ? `${shown}…+${ids.length - 50}` : shown;
}
