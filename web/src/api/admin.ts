/** One typed function per admin API route (docs/admin-api.md). */
import { http, type Query, request, seg } from "./http.ts";
import type {
  BatchAction,
  BatchResult,
  Body,
  EndpointCreate,
  EndpointDetail,
  EndpointPatch,
  Me,
  MetricsHistory,
  Nodes,
  Ok,
  Overview,
  Settings,
  Webhook,
  WebhookAttempt,
} from "./types.ts";

/** Cursor and page size of a list request. */
export interface PageQuery {
  cursor: string;
  limit: number;
}

export const session = {
  login: (password: string) =>
    request<Ok<"postApiAdminLogin">>("POST", "login", {
      body: { username: "admin", password } satisfies Body<"postApiAdminLogin">,
      logoutOn401: false,
    }),
  logout: () => http.post<Ok<"postApiAdminLogout">>("logout"),
  /** A 401 here just means "not logged in": the caller decides where to go. */
  me: () => request<Me>("GET", "me", { logoutOn401: false }),
  changePassword: (oldPassword: string, newPassword: string) =>
    request<Ok<"postApiAdminPassword">>("POST", "password", {
      body: {
        old_password: oldPassword,
        new_password: newPassword,
      } satisfies Body<"postApiAdminPassword">,
      logoutOn401: false,
    }),
};

export const overview = () => http.get<Overview>("overview");
export const settings = () => http.get<Settings>("settings");
export const nodes = () => http.get<Nodes>("nodes");
/** The live figures; `since` (Unix ms) asks only for newer samples. */
export const metricsHistory = (since?: number) =>
  http.get<MetricsHistory>("metrics/history", { since });

export const tokens = {
  list: (p: PageQuery) => http.get<Ok<"getApiAdminTokens">>("tokens", { ...p }),
  create: (name: string) => http.post<Ok<"postApiAdminTokens">>("tokens", { name }),
  update: (id: string, patch: Body<"patchApiAdminTokensId">) =>
    http.patch<Ok<"patchApiAdminTokensId">>(`tokens/${seg(id)}`, patch),
  remove: (id: string) => http.del<Ok<"deleteApiAdminTokensId">>(`tokens/${seg(id)}`),
};

/** Filters of the endpoint list. */
export interface EndpointFilter {
  q?: string;
  source?: "admin" | "self";
  enabled?: boolean;
}

export const endpoints = {
  list: (f: EndpointFilter, p: PageQuery) =>
    http.get<Ok<"getApiAdminEndpoints">>("endpoints", { ...f, ...p } as Query),
  get: (id: string) => http.get<EndpointDetail>(`endpoints/${seg(id)}`),
  create: (body: Partial<EndpointCreate>) =>
    http.post<Ok<"postApiAdminEndpoints">>("endpoints", body),
  update: (id: string, patch: EndpointPatch) =>
    http.patch<Ok<"patchApiAdminEndpointsId">>(`endpoints/${seg(id)}`, patch),
  remove: (id: string) => http.del<Ok<"deleteApiAdminEndpointsId">>(`endpoints/${seg(id)}`),
  batch: (action: BatchAction, ids: string[]) =>
    http.post<BatchResult>("endpoints/batch", { action, ids }),
  kick: (id: string) => http.post<Ok<"postApiAdminEndpointsIdKick">>(`endpoints/${seg(id)}/kick`),
  resetLoginPassword: (id: string) =>
    http.post<Ok<"postApiAdminEndpointsIdResetLoginPassword">>(
      `endpoints/${seg(id)}/reset-login-password`,
    ),
  unlock: (id: string) =>
    http.post<Ok<"postApiAdminEndpointsIdUnlock">>(`endpoints/${seg(id)}/unlock`),
  setTalkPassword: (id: string, talkPassword: string) =>
    http.put<Ok<"putApiAdminEndpointsIdTalkPassword">>(`endpoints/${seg(id)}/talk-password`, {
      talk_password: talkPassword,
    }),
};

export const webhooks = {
  get: (id: string) =>
    http.get<{ item: Webhook; recent: WebhookAttempt[] }>(`endpoints/${seg(id)}/webhook`),
  put: (id: string, body: { url: string; enabled?: boolean; rotate_secret?: boolean }) =>
    http.put<{ item: Webhook; secret?: string }>(`endpoints/${seg(id)}/webhook`, body),
  remove: (id: string) => http.del<Record<string, never>>(`endpoints/${seg(id)}/webhook`),
  test: (id: string) => http.post<{ attempt: WebhookAttempt }>(`endpoints/${seg(id)}/webhook/test`),
};

export const registration = {
  get: () => http.get<Ok<"getApiAdminRegistration">>("registration"),
  update: (body: Body<"putApiAdminRegistration">) =>
    http.put<Ok<"putApiAdminRegistration">>("registration", body),
};

/** Filters of the group list. */
export interface GroupFilter {
  q?: string;
  member?: string;
}

export const groups = {
  list: (f: GroupFilter, p: PageQuery) =>
    http.get<Ok<"getApiAdminGroups">>("groups", { ...f, ...p }),
  get: (id: string, p: PageQuery) =>
    http.get<Ok<"getApiAdminGroupsId">>(`groups/${seg(id)}`, { ...p }),
  create: (body: Body<"postApiAdminGroups">) => http.post<Ok<"postApiAdminGroups">>("groups", body),
  rename: (id: string, name: string) =>
    http.patch<Ok<"patchApiAdminGroupsId">>(`groups/${seg(id)}`, { name }),
  dissolve: (id: string) => http.del<Ok<"deleteApiAdminGroupsId">>(`groups/${seg(id)}`),
  addMembers: (id: string, members: string[]) =>
    http.post<Ok<"postApiAdminGroupsIdMembers">>(`groups/${seg(id)}/members`, {
      members,
    }),
  removeMember: (id: string, endpointId: string) =>
    http.del<Ok<"deleteApiAdminGroupsIdMembersEndpointId">>(
      `groups/${seg(id)}/members/${seg(endpointId)}`,
    ),
  transfer: (id: string, endpointId: string) =>
    http.post<Ok<"postApiAdminGroupsIdTransfer">>(`groups/${seg(id)}/transfer`, {
      endpoint_id: endpointId,
    }),
};

/** Filters of the message record list (docs/admin-api.md, Messages). */
export interface MessageFilter {
  sender?: string;
  dest?: string;
  dest_kind?: "endpoint" | "group";
  recipient?: string;
  id?: string;
  /** Comma-separated states. */
  state?: string;
  from?: number;
  to?: number;
}

/** Filters of the audit log (docs/admin-api.md, Audit log). */
export interface AuditFilter {
  from?: number;
  to?: number;
  actor?: string;
  /** An action, or a family such as `endpoint`. */
  action?: string;
  target?: string;
  result?: string;
}

export const audit = {
  list: (f: AuditFilter, p: PageQuery) => http.get<Ok<"getApiAdminAudit">>("audit", { ...f, ...p }),
};

export const messages = {
  list: (f: MessageFilter, p: PageQuery) =>
    http.get<Ok<"getApiAdminMessages">>("messages", { ...f, ...p }),
  get: (seq: number, p: PageQuery) =>
    http.get<Ok<"getApiAdminMessagesSeq">>(`messages/${seg(seq)}`, { ...p }),
};
