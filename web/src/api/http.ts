/**
 * A thin `fetch` wrapper for the admin API (docs/admin-api.md). It unwraps the
 * `{ ok, data } | { ok, error }` envelope, sends `X-Nixmsg-Request: 1` on every state-changing
 * request (spec 8) and reports a 401 to the handler set with {@linkcode onUnauthorized}.
 */

/** An error answer of the admin API, or a network failure (`code` "network"). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly data: unknown;
  /** Seconds from `Retry-After` on a 429, else null. */
  readonly retryAfter: number | null;

  constructor(
    status: number,
    code: string,
    message: string,
    data: unknown = undefined,
    retryAfter: number | null = null,
  ) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.data = data;
    this.retryAfter = retryAfter;
  }
}

/** Query values; undefined and "" are left out. */
export type Query = Record<string, string | number | boolean | undefined>;

/** Options of {@linkcode request}. */
export interface RequestOptions {
  readonly query?: Query;
  readonly body?: unknown;
  /**
   * Whether a 401 means "the session is gone" (the default). Login and the password change answer
   * 401 for a wrong password; they pass false and handle it themselves.
   */
  readonly logoutOn401?: boolean;
  /** Set on the one repeat after a new login; a second 401 is then final. */
  readonly retried?: boolean;
}

let unauthorized: () => Promise<boolean> = () => Promise.resolve(false);

/**
 * Sets what happens when a request learns that the session is gone. The handler resolves true
 * once the admin has logged in again (the request is repeated) or false when they gave up.
 */
export function onUnauthorized(handler: () => Promise<boolean>): void {
  unauthorized = handler;
}

/** Asks the handler set with {@linkcode onUnauthorized} for a new login. */
export function sessionExpired(): Promise<boolean> {
  return unauthorized();
}

/** Builds `/api/admin/<path>?<query>`. */
export function apiUrl(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === "") continue;
    params.set(k, String(v));
  }
  const qs = params.toString();
  return `/api/admin/${path}${qs === "" ? "" : `?${qs}`}`;
}

/** The headers of a state-changing request (spec 8). */
export function changeHeaders(extra: Record<string, string> = {}): Record<string, string> {
  return { "X-Nixmsg-Request": "1", ...extra };
}

interface Envelope {
  ok?: boolean;
  data?: unknown;
  error?: { code?: string; message?: string; data?: unknown };
}

/** Turns a non-2xx response into an {@linkcode ApiError}, reading its JSON error if any. */
export async function errorOf(res: Response): Promise<ApiError> {
  let env: Envelope = {};
  try {
    env = (await res.json()) as Envelope;
  } catch {
    // Not JSON (a proxy page): fall back to the status.
  }
  const retry = res.headers.get("Retry-After");
  return new ApiError(
    res.status,
    env.error?.code ?? `http_${res.status}`,
    env.error?.message ?? `HTTP ${res.status}`,
    env.error?.data,
    retry === null ? null : Number(retry),
  );
}

/** Sends one admin API request and returns its `data`. */
export async function request<T>(
  method: string,
  path: string,
  opts: RequestOptions = {},
): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (method !== "GET" && method !== "HEAD") Object.assign(headers, changeHeaders());
  let body: string | undefined;
  if (opts.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(opts.body);
  }
  let res: Response;
  try {
    res = await fetch(apiUrl(path, opts.query), { method, headers, body });
  } catch {
    throw new ApiError(0, "network", "无法连接服务器");
  }
  if (!res.ok) {
    const err = await errorOf(res);
    // A 401 is answered before anything is done, so repeating the request is safe.
    if (res.status === 401 && opts.logoutOn401 !== false && opts.retried !== true) {
      if (await unauthorized()) return request<T>(method, path, { ...opts, retried: true });
    }
    throw err;
  }
  const env = (await res.json()) as Envelope;
  return env.data as T;
}

/** Shorthands for {@linkcode request}. */
export const http = {
  get: <T>(path: string, query?: Query) => request<T>("GET", path, { query }),
  post: <T>(path: string, body: unknown = {}) => request<T>("POST", path, { body }),
  put: <T>(path: string, body: unknown) => request<T>("PUT", path, { body }),
  patch: <T>(path: string, body: unknown) => request<T>("PATCH", path, { body }),
  del: <T>(path: string) => request<T>("DELETE", path),
};

/** `encodeURIComponent` for a path segment (ids may contain `.`, `-`, `_`). */
export function seg(id: string | number): string {
  return encodeURIComponent(String(id));
}
