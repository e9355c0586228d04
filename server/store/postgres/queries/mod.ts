// The PostgreSQL read queries: one async query for every name of server/store/queries/mod.ts,
// same args and result. The type of `pgQueries` makes the compiler prove it.
import type { QueryImplementations } from "../../store.ts";
import { listNodes } from "./nodes.ts";
import { lockoutState } from "./lockouts.ts";
import { clusterLogins, waitingWork } from "./cluster.ts";
import { listAudit } from "./audit.ts";
import { dueWebhooks, listWebhooks, webhookBacklog, webhookById } from "../ops/webhooks.ts";
import type { PgReader } from "../op.ts";
import { grantState } from "../ops/talk.ts";
import {
  adminSessionExpiry,
  apiTokenByHash,
  apiTokenById,
  countEndpoints,
  endpointById,
  endpointExists,
  endpointGroupCount,
  existingEndpoints,
  listApiTokens,
  listEndpoints,
  overviewCounts,
  registrationSettings,
} from "./admin.ts";
import {
  countGroups,
  groupMembers,
  groupRecord,
  listGroups,
  listMessages,
  messageRecipients,
  messageRecord,
} from "./admin_records.ts";
import { directoryPage, presenceTimes } from "./directory.ts";
import { loginRow, selfRow } from "./endpoints.ts";
import { groupPage, listMyGroups } from "./groups.ts";
import { anyPendingDelivery, sendKeyExists } from "./messages.ts";
import { latencyAtRanks, windowCounts } from "./metrics.ts";
import { readSetting } from "./settings.ts";
import { frameSource, messageStatus, nextDueAt, pendingReceipts } from "./status.ts";

/** The PostgreSQL twin of `Queries`, checked against each SQLite signature. */
export type PgQueries = QueryImplementations<PgReader>;

/** Every PostgreSQL read query, by name. */
export const pgQueries: PgQueries = {
  "settings.get": (r, a) => readSetting(r, a.key),
  "endpoint.login_row": (r, a) => loginRow(r, a.id),
  "endpoint.self_row": (r, a) => selfRow(r, a.id),
  "endpoint.exists": (r, a) => endpointExists(r, a.id),
  "endpoint.existing": (r, a) => existingEndpoints(r, a.ids),

  "talk.grant_state": (r, a) => grantState(r, a.senderId, a.targetId),
  "message.send_key_exists": (r, a) => sendKeyExists(r, a.senderId, a.id),
  "message.status": (r, a) => messageStatus(r, a.senderId, a.id, a.cursor, a.limit),
  "message.frame_source": (r, a) => frameSource(r, a.seq),
  "message.any_pending": (r, a) => anyPendingDelivery(r, a.seq),
  "message.next_due_at": (r, _a) => nextDueAt(r),
  "receipt.pending": (r, a) => pendingReceipts(r, a.senderId, a.afterReceiptId, a.limit),
  "cluster.waiting": (r, a) => waitingWork(r, a.ids, a.now),
  "cluster.logins": (r, a) => clusterLogins(r, a.ids),

  "presence.times": (r, a) => presenceTimes(r, a.ids),
  "directory.list": (r, a) => directoryPage(r, a.cursor, a.limit, a.query),
  "group.list_mine": (r, a) => listMyGroups(r, a.endpointId, a.cursor, a.limit),
  "group.get": (r, a) => groupPage(r, a.callerId, a.groupId, a.cursor, a.limit),

  "admin.session_expiry": (r, a) => adminSessionExpiry(r, a.tokenHash),
  "admin.token_by_hash": (r, a) => apiTokenByHash(r, a.tokenHash),
  "admin.token_by_id": (r, a) => apiTokenById(r, a.id),
  "admin.tokens_list": (r, a) => listApiTokens(r, a.after, a.limit),
  "admin.endpoints_list": (r, a) => listEndpoints(r, a.filter, a.afterId, a.limit),
  "admin.endpoints_count": (r, a) => countEndpoints(r, a.filter),
  "admin.endpoint_by_id": (r, a) => endpointById(r, a.id),
  "admin.endpoint_group_count": (r, a) => endpointGroupCount(r, a.id),
  "admin.overview_counts": (r, _a) => overviewCounts(r),
  "admin.registration_settings": (r, _a) => registrationSettings(r),
  "admin.messages_list": (r, a) => listMessages(r, a.filter, a.beforeSeq, a.limit),
  "admin.message_record": (r, a) => messageRecord(r, a.seq),
  "admin.message_recipients": (r, a) => messageRecipients(r, a.seq, a.afterId, a.limit),
  "admin.groups_list": (r, a) => listGroups(r, a.filter, a.afterId, a.limit),
  "admin.groups_count": (r, a) => countGroups(r, a.filter),
  "admin.group_record": (r, a) => groupRecord(r, a.id),
  "admin.group_members": (r, a) => groupMembers(r, a.groupId, a.afterId, a.limit),

  "metrics.window_counts": (r, a) => windowCounts(r, a.from, a.to),
  "metrics.latency_at_ranks": (r, a) => latencyAtRanks(r, a.from, a.to, a.ranks),

  "node.list": (r, _a) => listNodes(r),
  "lockout.state": (r, a) => lockoutState(r, a),

  "audit.list": (r, a) => listAudit(r, a.filter, a.beforeId, a.limit),

  "webhook.get": (r, a) => webhookById(r, a.endpointId),
  "webhook.list": (r, _a) => listWebhooks(r),
  "webhook.due": (r, a) => dueWebhooks(r, a.now),
  "webhook.backlog": (r, _a) => webhookBacklog(r),
};
