/**
 * The admin API route table (spec 8; docs/admin-api.md is the contract). One flat list with the
 * guard on each line (STYLE): `open` (no auth), `admin` (cookie or API token), `session` (cookie
 * only). A second argument names the audit action of a state-changing route.
 */
import type { App } from "../app/app_context.ts";
import type { MqttApp } from "../app/mqtt_app.ts";
import type { Route, RouteHandler } from "../http/types.ts";
import { AdminAuth } from "./auth.ts";
import type { AdminDeps } from "./deps.ts";
import { createGuards } from "./guards.ts";
import { sessionHandlers } from "./session_handlers.ts";
import { tokenHandlers } from "./token_handlers.ts";
import { settingsHandlers } from "./settings_handlers.ts";
import { endpointHandlers } from "./endpoint_handlers.ts";
import { importHandler } from "./endpoint_import.ts";
import { groupHandlers } from "./group_handlers.ts";
import { messageHandlers } from "./message_handlers.ts";
import { sendHandlers } from "./send_handlers.ts";
import { openApiHandler } from "./openapi_route.ts";
import { historyHandler } from "./history_handlers.ts";
import { auditHandlers } from "./audit_handlers.ts";
import { inboxHandlers } from "./inbox_handlers.ts";
import { webhookHandlers } from "./webhook_handlers.ts";
import type { MetricsHistory } from "../metrics/history.ts";

function route(method: string, path: string, handler: RouteHandler): Route {
  return { method, path, scope: "admin", handler };
}

/**
 * Builds every `/api/admin/` route. They belong to the `admin` scope, so with `admin_listen`
 * set they exist only there (spec 4.3).
 *
 * @example
 * const routes = [...healthRoutes(opts), ...registrationRoutes(app), ...adminRoutes(app, mqtt)];
 */
export function adminRoutes(app: App, mqtt: MqttApp, history?: MetricsHistory): Route[] {
  const d: AdminDeps = { app, mqtt, auth: new AdminAuth(app) };
  const { open, admin, session } = createGuards(app, d.auth);
  const s = sessionHandlers(d);
  const t = tokenHandlers(d);
  const o = settingsHandlers(d);
  const e = endpointHandlers(d);
  const g = groupHandlers(d);
  const m = messageHandlers(d);
  const x = sendHandlers(d);
  const a = auditHandlers(d);
  const i = inboxHandlers(d);
  const w = webhookHandlers(d);
  const A = "/api/admin";
  return [
    route("POST", `${A}/login`, open(s.login, "admin.login")),
    route("POST", `${A}/logout`, open(s.logout, "admin.logout")),
    route("GET", `${A}/me`, admin(s.me)),
    route("POST", `${A}/password`, session(s.changePassword, "admin.password")),
    route("GET", `${A}/overview`, admin(o.overview)),
    route("GET", `${A}/settings`, admin(o.settings)),
    route("GET", `${A}/nodes`, admin(o.nodes)),
    ...(history ? [route("GET", `${A}/metrics/history`, admin(historyHandler(history)))] : []),

    route("GET", `${A}/tokens`, session(t.list)),
    route("POST", `${A}/tokens`, session(t.create, "token.create")),
    route("PATCH", `${A}/tokens/:id`, session(t.update, "token.update")),
    route("DELETE", `${A}/tokens/:id`, session(t.remove, "token.delete")),

    route("GET", `${A}/endpoints`, admin(e.list)),
    route("POST", `${A}/endpoints`, admin(e.create, "endpoint.create")),
    route("POST", `${A}/endpoints/import`, admin(importHandler(d), "endpoint.import")),
    route("POST", `${A}/endpoints/batch`, admin(e.batch, "endpoint.batch")),
    route("GET", `${A}/endpoints/:id`, admin(e.get)),
    route("PATCH", `${A}/endpoints/:id`, admin(e.update, "endpoint.update")),
    route("DELETE", `${A}/endpoints/:id`, admin(e.remove, "endpoint.delete")),
    route("POST", `${A}/endpoints/:id/kick`, admin(e.kick, "endpoint.kick")),
    route(
      "POST",
      `${A}/endpoints/:id/reset-login-password`,
      admin(e.resetPassword, "endpoint.reset_login_password"),
    ),
    route("POST", `${A}/endpoints/:id/unlock`, admin(e.unlock, "endpoint.unlock")),
    route("GET", `${A}/endpoints/:id/inbox`, admin(i.stream)),
    route("GET", `${A}/endpoints/:id/inbox/:stream/:n`, admin(i.body, "endpoint.inbox_body")),
    route("POST", `${A}/endpoints/:id/messages`, admin(x.send, "message.send")),
    route("GET", `${A}/endpoints/:id/messages/:msgId`, admin(x.status)),
    route(
      "POST",
      `${A}/endpoints/:id/messages/:msgId/recall`,
      admin(x.recall, "message.recall"),
    ),
    route("GET", `${A}/endpoints/:id/webhook`, admin(w.get)),
    route("PUT", `${A}/endpoints/:id/webhook`, admin(w.put, "endpoint.webhook_put")),
    route("DELETE", `${A}/endpoints/:id/webhook`, admin(w.remove, "endpoint.webhook_delete")),
    route("POST", `${A}/endpoints/:id/webhook/test`, admin(w.test, "endpoint.webhook_test")),
    route(
      "PUT",
      `${A}/endpoints/:id/talk-password`,
      admin(e.talkPassword, "endpoint.talk_password"),
    ),

    route("GET", `${A}/registration`, admin(o.registration)),
    route("PUT", `${A}/registration`, admin(o.updateRegistration, "registration.update")),

    route("GET", `${A}/groups`, admin(g.list)),
    route("POST", `${A}/groups`, admin(g.create, "group.create")),
    route("GET", `${A}/groups/:id`, admin(g.get)),
    route("PATCH", `${A}/groups/:id`, admin(g.rename, "group.rename")),
    route("DELETE", `${A}/groups/:id`, admin(g.dissolve, "group.dissolve")),
    route("POST", `${A}/groups/:id/members`, admin(g.add, "group.add")),
    route("DELETE", `${A}/groups/:id/members/:endpointId`, admin(g.removeMember, "group.remove")),
    route("POST", `${A}/groups/:id/transfer`, admin(g.transfer, "group.transfer")),

    route("GET", `${A}/messages`, admin(m.list)),
    route("GET", `${A}/messages/:seq`, admin(m.get)),
    route("GET", `${A}/audit`, admin(a.list)),
    route("GET", `${A}/openapi.json`, open(openApiHandler())),
  ];
}
