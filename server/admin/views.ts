/**
 * The JSON shapes of the admin API (docs/admin-api.md). Rows never carry hashes or bodies; these
 * functions pick the documented fields and turn SQLite integers into booleans. Each returns the
 * type of its schema in schemas.ts, the one declaration the OpenAPI document also publishes.
 */
import type { App } from "../app/app_context.ts";
import type { EndpointRow, TokenRow } from "../store/queries/admin.ts";
import type { GroupRecord, MessageRecord, RecipientRow } from "../store/queries/admin_records.ts";
import type {
  EndpointView,
  GroupView,
  MessageRecordView,
  RecipientRecordView,
  TokenView,
} from "./schemas.ts";

/** Whether the endpoint's current connection has completed `hello` (spec 6.1), on this node. */
export function isOnline(app: App, endpointId: string): boolean {
  return app.conns.current(endpointId)?.handshaken === true;
}

/** Online on this node, or on a cluster node also logged in on another one (issue 30). */
function onlineOf(app: App, r: EndpointRow): boolean {
  // Unit tests build an App without presence.
  return app.presence?.onlineWith(r.id, r.online_since, r.offline_since) ??
    isOnline(app, r.id);
}

/** An endpoint object. */
export function endpointView(app: App, r: EndpointRow): EndpointView {
  return {
    id: r.id,
    name: r.name,
    remark: r.remark,
    source: r.source,
    enabled: r.enabled === 1,
    online: onlineOf(app, r),
    online_since: r.online_since,
    offline_since: r.offline_since,
    created_at: r.created_at,
    default_delay_ms: r.default_delay_ms,
    talk_password_set: r.talk_password_set === 1,
    session_active: r.session_active === 1,
  };
}

/** An API token object; `lastUsedAt` merges in-memory use (spec 8). */
export function tokenView(r: TokenRow, lastUsedAt: number | null): TokenView {
  return {
    id: r.id,
    name: r.name,
    enabled: r.enabled === 1,
    created_at: r.created_at,
    last_used_at: lastUsedAt,
  };
}

/** A group object. */
export function groupView(g: GroupRecord): GroupView {
  return {
    id: g.id,
    name: g.name,
    owner_id: g.owner_id,
    members: g.members,
    created_at: g.created_at,
  };
}

/** A message record: never the body, never meta (spec 8). */
export function messageView(m: MessageRecord): MessageRecordView {
  return {
    seq: m.seq,
    id: m.id,
    sender_id: m.sender_id,
    dest_kind: m.dest_kind,
    dest_id: m.dest_id,
    content_type: m.content_type,
    state: m.state,
    reason: m.reason,
    send_at: m.send_at,
    created_at: m.created_at,
    keep: m.keep === 1,
    ttl_seconds: m.ttl_seconds,
    receipt: m.receipt === 1,
    counts: { ...m.counts },
  };
}

/** One recipient line of a message record. */
export function recipientView(r: RecipientRow): RecipientRecordView {
  return {
    endpoint_id: r.endpoint_id,
    state: r.state,
    reason: r.reason,
    send_at: r.send_at,
    expire_at: r.expire_at,
    pushed_at: r.pushed_at,
    attempts: r.attempts,
    updated_at: r.updated_at,
  };
}
