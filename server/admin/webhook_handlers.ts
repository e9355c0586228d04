/**
 * An endpoint's webhook (issue 34, docs/admin-api.md "Webhooks"): get, create or change, delete,
 * send a test event. The secret is made by the server and shown once, in the answer that made it.
 */
import type { WebhookAttempt } from "../webhooks/dispatcher.ts";
import {
  hostOf,
  parseWebhookUrl,
  resolveChecked,
  WebhookAddressError,
} from "../webhooks/address_policy.ts";
import { newWebhookSecret } from "../webhooks/signature.ts";
import type { WebhookRow } from "../store/ops/webhooks.ts";
import type { AdminDeps } from "./deps.ts";
import type { AdminRequest } from "./guards.ts";
import type { WebhookAttemptView, WebhookView } from "./schemas.ts";
import { bad, httpFail, ok, opFailure, optBool, readJson, reqString } from "./request.ts";

const NO_ENDPOINT = "端不存在";
const NO_WEBHOOK = "该端没有设置网络钩子";
/** Longest webhook URL accepted. */
export const WEBHOOK_URL_MAX = 2048;

/** What the API shows of a stored webhook: never the secret. */
export function webhookView(row: WebhookRow): WebhookView {
  return {
    endpoint_id: row.endpointId,
    url: row.url,
    enabled: row.enabled,
    secret_hint: `${row.secret.slice(0, 6)}…${row.secret.slice(-4)}`,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}

function attemptView(a: WebhookAttempt): WebhookAttemptView {
  return {
    at: a.at,
    kind: a.kind,
    event_id: a.eventId,
    ok: a.ok,
    status: a.status,
    error: a.error,
    ms: a.ms,
  };
}

/** The webhook handlers. */
export function webhookHandlers(d: AdminDeps) {
  const { app } = d;

  const endpointExists = async (id: string) => {
    if (!(await app.store.query("endpoint.exists", { id }))) {
      throw httpFail("not_found", NO_ENDPOINT);
    }
  };
  const stored = async (id: string) => {
    await endpointExists(id);
    const row = await app.store.query("webhook.get", { endpointId: id });
    if (row === null) throw httpFail("not_found", NO_WEBHOOK);
    return row;
  };
  const recent = (id: string) => (app.webhooks?.recent(id) ?? []).map(attemptView);

  /** GET /api/admin/endpoints/:id/webhook: `item` is null while the endpoint has none. */
  async function get(req: AdminRequest): Promise<void> {
    const id = req.ctx.params.id;
    await endpointExists(id);
    const row = await app.store.query("webhook.get", { endpointId: id });
    ok(req.ctx, { item: row === null ? null : webhookView(row), recent: recent(id) });
  }

  /**
   * PUT /api/admin/endpoints/:id/webhook {url, enabled?, rotate_secret?}: creates the webhook
   * (with a new secret) or changes it. The URL must pass the SSRF rule now, with DNS.
   */
  async function put(req: AdminRequest): Promise<void> {
    const body = await readJson(req.ctx, ["url", "enabled", "rotate_secret"]);
    const text = reqString(body, "url", { max: WEBHOOK_URL_MAX });
    const enabled = optBool(body, "enabled") ?? true;
    const rotate = optBool(body, "rotate_secret") ?? false;
    const id = req.ctx.params.id;
    await endpointExists(id);
    try {
      const url = parseWebhookUrl(text);
      if (app.webhooks !== undefined) {
        const timeoutMs = app.config.webhooks.connect_timeout_seconds * 1000;
        await resolveChecked(hostOf(url), app.webhooks.allow, timeoutMs);
      }
    } catch (err) {
      if (err instanceof WebhookAddressError) throw bad(`字段不合法：url ${err.message}`);
      throw err;
    }
    const existing = await app.store.query("webhook.get", { endpointId: id });
    const secret = existing === null || rotate ? newWebhookSecret() : undefined;
    await app.store.run("webhook.put", { endpointId: id, url: text, enabled, secret }).catch((
      err,
    ) => opFailure(err, { not_found: NO_ENDPOINT }));
    await app.webhooks?.refresh();
    const row = await stored(id);
    ok(req.ctx, { item: webhookView(row), ...(secret === undefined ? {} : { secret }) });
  }

  /** DELETE /api/admin/endpoints/:id/webhook */
  async function remove(req: AdminRequest): Promise<void> {
    const id = req.ctx.params.id;
    await stored(id);
    await app.store.run("webhook.delete", { endpointId: id });
    await app.webhooks?.refresh();
    ok(req.ctx, {});
  }

  /** POST /api/admin/endpoints/:id/webhook/test: one `test` event now; answers how it went. */
  async function test(req: AdminRequest): Promise<void> {
    const id = req.ctx.params.id;
    const row = await stored(id);
    if (app.webhooks === undefined) throw httpFail("busy");
    let attempt: WebhookAttempt;
    try {
      attempt = await app.webhooks.sendTest(row);
    } catch (err) {
      if (err instanceof WebhookAddressError) throw bad(`字段不合法：url ${err.message}`);
      throw err;
    }
    ok(req.ctx, { attempt: attemptView(attempt) });
  }

  return { get, put, remove, test };
}
