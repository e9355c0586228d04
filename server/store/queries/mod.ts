// The read query registry (issue 29): every read the server makes, by name, next to `ops`
// (./ops/mod.ts) for the writes. The SQLite store runs these functions on its read connection;
// the PostgreSQL store implements each name with the same args and result. Each entry adapts a
// plain function of this folder to one args object; those functions and their tests stay as they
// are. Results are plain data; `online` flags come from the connection table, so queries whose
// answer shows them return the stored part and the caller adds `online`.
import type { DatabaseSync } from "node:sqlite";
import {
  adminSessionExpiry,
  apiTokenByHash,
  apiTokenById,
  countEndpoints,
  endpointById,
  endpointExists,
  type EndpointFilter,
  endpointGroupCount,
  existingEndpoints,
  listApiTokens,
  listEndpoints,
  overviewCounts,
  registrationSettings,
  type TokenCursor,
} from "./admin.ts";
import {
  countGroups,
  type GroupFilter,
  groupMembers,
  groupRecord,
  listGroups,
  listMessages,
  type MessageFilter,
  messageRecipients,
  messageRecord,
} from "./admin_records.ts";
import { directoryPage, presenceTimes } from "./directory.ts";
import { loginRow, selfRow } from "./endpoints.ts";
import { groupPage, listMyGroups } from "./groups.ts";
import { anyPendingDelivery, sendKeyExists } from "./messages.ts";
import { latencyAtRanks, windowCounts } from "./metrics.ts";
import { listNodes } from "./nodes.ts";
import { lockoutState, type LockoutStateArgs } from "./lockouts.ts";
import { clusterLogins, waitingWork } from "./cluster.ts";
import { type AuditFilter, listAudit } from "./audit.ts";
import { readSetting, type SettingKey } from "./settings.ts";
import { frameSource, messageStatus, nextDueAt, pendingReceipts } from "./status.ts";
import { grantState } from "../ops/talk.ts";
import { dueWebhooks, listWebhooks, webhookBacklog, webhookById } from "../ops/webhooks.ts";

type Db = DatabaseSync;
type None = Record<string, never>;

/** Every read query, by name. */
export const queries = {
  // settings, login, self (spec 5, 6.6, 6.9, 8)
  "settings.get": (db: Db, a: { key: SettingKey }) => readSetting(db, a.key),
  "endpoint.login_row": (db: Db, a: { id: string }) => loginRow(db, a.id),
  "endpoint.self_row": (db: Db, a: { id: string }) => selfRow(db, a.id),
  "endpoint.exists": (db: Db, a: { id: string }) => endpointExists(db, a.id),
  "endpoint.existing": (db: Db, a: { ids: readonly string[] }) => existingEndpoints(db, a.ids),

  // messaging (spec 6.2-6.4, 7.4, 7.5)
  "talk.grant_state": (db: Db, a: { senderId: string; targetId: string }) =>
    grantState(db, a.senderId, a.targetId),
  "message.send_key_exists": (db: Db, a: { senderId: string; id: string }) =>
    sendKeyExists(db, a.senderId, a.id),
  "message.status": (db: Db, a: { senderId: string; id: string; cursor: string; limit: number }) =>
    messageStatus(db, a.senderId, a.id, a.cursor, a.limit),
  "message.frame_source": (db: Db, a: { seq: number }) => frameSource(db, a.seq),
  "message.any_pending": (db: Db, a: { seq: number }) => anyPendingDelivery(db, a.seq),
  "message.next_due_at": (db: Db, _a: None) => nextDueAt(db),
  "receipt.pending": (db: Db, a: { senderId: string; afterReceiptId: number; limit: number }) =>
    pendingReceipts(db, a.senderId, a.afterReceiptId, a.limit),
  // a cluster node's bounded poll (issue 30)
  "cluster.waiting": (db: Db, a: { ids: readonly string[]; now: number }) =>
    waitingWork(db, a.ids, a.now),
  "cluster.logins": (db: Db, a: { ids: readonly string[] }) => clusterLogins(db, a.ids),

  // webhooks (issue 34)
  "webhook.get": (db: Db, a: { endpointId: string }) => webhookById(db, a.endpointId),
  "webhook.list": (db: Db, _a: None) => listWebhooks(db),
  "webhook.due": (db: Db, a: { now: number }) => dueWebhooks(db, a.now),
  "webhook.backlog": (db: Db, _a: None) => webhookBacklog(db),

  // presence, directory, groups (spec 6.5, 6.7); `online` is added by the caller
  "presence.times": (db: Db, a: { ids: readonly string[] }) => presenceTimes(db, a.ids),
  "directory.list": (db: Db, a: { cursor: string; limit: number; query: string }) =>
    directoryPage(db, a.cursor, a.limit, a.query),
  "group.list_mine": (db: Db, a: { endpointId: string; cursor: string; limit: number }) =>
    listMyGroups(db, a.endpointId, a.cursor, a.limit),
  "group.get": (
    db: Db,
    a: { callerId: string; groupId: string; cursor: string; limit: number },
  ) => groupPage(db, a.callerId, a.groupId, a.cursor, a.limit),

  // admin API (spec 8)
  "admin.session_expiry": (db: Db, a: { tokenHash: string }) => adminSessionExpiry(db, a.tokenHash),
  "admin.token_by_hash": (db: Db, a: { tokenHash: string }) => apiTokenByHash(db, a.tokenHash),
  "admin.token_by_id": (db: Db, a: { id: string }) => apiTokenById(db, a.id),
  "admin.tokens_list": (db: Db, a: { after: TokenCursor | null; limit: number }) =>
    listApiTokens(db, a.after, a.limit),
  "admin.endpoints_list": (db: Db, a: { filter: EndpointFilter; afterId: string; limit: number }) =>
    listEndpoints(db, a.filter, a.afterId, a.limit),
  "admin.endpoints_count": (db: Db, a: { filter: EndpointFilter }) => countEndpoints(db, a.filter),
  "admin.endpoint_by_id": (db: Db, a: { id: string }) => endpointById(db, a.id),
  "admin.endpoint_group_count": (db: Db, a: { id: string }) => endpointGroupCount(db, a.id),
  "admin.overview_counts": (db: Db, _a: None) => overviewCounts(db),
  "admin.registration_settings": (db: Db, _a: None) => registrationSettings(db),
  "admin.messages_list": (
    db: Db,
    a: { filter: MessageFilter; beforeSeq: number | null; limit: number },
  ) => listMessages(db, a.filter, a.beforeSeq, a.limit),
  "admin.message_record": (db: Db, a: { seq: number }) => messageRecord(db, a.seq),
  "admin.message_recipients": (db: Db, a: { seq: number; afterId: string; limit: number }) =>
    messageRecipients(db, a.seq, a.afterId, a.limit),
  "admin.groups_list": (db: Db, a: { filter: GroupFilter; afterId: string; limit: number }) =>
    listGroups(db, a.filter, a.afterId, a.limit),
  "admin.groups_count": (db: Db, a: { filter: GroupFilter }) => countGroups(db, a.filter),
  "admin.group_record": (db: Db, a: { id: string }) => groupRecord(db, a.id),
  "admin.group_members": (db: Db, a: { groupId: string; afterId: string; limit: number }) =>
    groupMembers(db, a.groupId, a.afterId, a.limit),

  // the console's metrics history (server/metrics/history.ts)
  "metrics.window_counts": (db: Db, a: { from: number; to: number }) =>
    windowCounts(db, a.from, a.to),
  "metrics.latency_at_ranks": (
    db: Db,
    a: { from: number; to: number; ranks: readonly number[] },
  ) => latencyAtRanks(db, a.from, a.to, a.ranks),

  // node leases (issue 30)
  "node.list": (db: Db, _a: None) => listNodes(db),

  // the lockouts' shared failure counters (issue 30 item 4)
  "lockout.state": (db: Db, a: LockoutStateArgs) => lockoutState(db, a),

  // the audit log (spec 14 M4 操作日志)
  "audit.list": (db: Db, a: { filter: AuditFilter; beforeId: number | null; limit: number }) =>
    listAudit(db, a.filter, a.beforeId, a.limit),
};

/** The type of {@link queries}; what `Store.query` accepts. */
export type Queries = typeof queries;
