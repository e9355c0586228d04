/**
 * API tokens (spec 8): list, create (the token is shown once), rename, enable, disable, delete.
 * Only a web session may call these; the guard on the route line enforces it.
 */
import { newApiToken, sha256Hex } from "../auth/tokens.ts";
import { randomId } from "../auth/generate.ts";
import type { TokenCursor } from "../store/queries/admin.ts";
import type { AdminDeps } from "./deps.ts";
import type { AdminRequest } from "./guards.ts";
import { tokenView } from "./views.ts";
import {
  bad,
  httpFail,
  type JsonObject,
  ok,
  opFailure,
  optBool,
  optString,
  pageOf,
  pageQuery,
  readJson,
  requireSome,
} from "./request.ts";

const NAME_RULE = { min: 1, max: 64 };
const NAME_TAKEN = "已有同名的令牌";

function parseCursor(raw: string): TokenCursor | null {
  if (raw === "") return null;
  const m = /^(\d{1,16})\.(.+)$/.exec(raw);
  if (m === null) throw bad("cursor 无效");
  return { createdAt: Number(m[1]), id: m[2] };
}

function tokenName(body: JsonObject): string | undefined {
  const name = optString(body, "name", NAME_RULE)?.trim();
  if (name === "") throw bad("字段不合法：name 不能为空");
  return name;
}

/** The token handlers. */
export function tokenHandlers(d: AdminDeps) {
  const { app, auth } = d;
  const writer = app.store;

  const view = async (id: string) => {
    const row = await app.store.query("admin.token_by_id", { id });
    if (row === null) throw httpFail("not_found", "令牌不存在");
    return tokenView(row, auth.lastUsed(row));
  };

  /** GET /api/admin/tokens: newest first. */
  async function list(req: AdminRequest): Promise<void> {
    const { cursor, limit } = pageQuery(req.ctx.url);
    const rows = await app.store.query("admin.tokens_list", {
      after: parseCursor(cursor),
      limit: limit + 1,
    });
    const page = pageOf(rows, limit, (r) => `${r.created_at}.${r.id}`);
    ok(req.ctx, {
      items: page.items.map((r) => tokenView(r, auth.lastUsed(r))),
      next_cursor: page.next,
    });
  }

  /** POST /api/admin/tokens: the token itself is in this response only (spec 8). */
  async function create(req: AdminRequest): Promise<void> {
    const body = await readJson(req.ctx, ["name"]);
    const name = tokenName(body);
    if (name === undefined) throw bad("缺少字段：name");
    const token = newApiToken();
    const id = randomId("t", 8);
    req.object = id;
    await writer.run("admin.token_create", { id, name, tokenHash: sha256Hex(token) })
      .catch((err) => opFailure(err, { conflict: NAME_TAKEN }));
    ok(req.ctx, { token, item: await view(id) });
  }

  /** PATCH /api/admin/tokens/{id}: rename, enable, disable; effective on the next request. */
  async function update(req: AdminRequest): Promise<void> {
    const body = await readJson(req.ctx, ["name", "enabled"]);
    requireSome(body, ["name", "enabled"]);
    const name = tokenName(body);
    const enabled = optBool(body, "enabled");
    const id = req.ctx.params.id;
    await writer.run("admin.token_update", { id, name, enabled })
      .catch((err) => opFailure(err, { not_found: "令牌不存在", conflict: NAME_TAKEN }));
    ok(req.ctx, { item: await view(id) });
  }

  /** DELETE /api/admin/tokens/{id}. */
  async function remove(req: AdminRequest): Promise<void> {
    const id = req.ctx.params.id;
    await writer.run("admin.token_delete", { id })
      .catch((err) => opFailure(err, { not_found: "令牌不存在" }));
    auth.forget(id);
    ok(req.ctx, {});
  }

  return { list, create, update, remove };
}
