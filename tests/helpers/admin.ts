// Helpers for the admin API tests (docs/admin-api.md): an in-process server with a known admin
// password and captured log lines, and a small HTTP client that keeps the session cookie and
// checks every answer against the OpenAPI document.
import { Logger } from "../../server/log/log.ts";
import { PasswordPool } from "../../server/auth/password_pool.ts";
import {
  startTestServer,
  TEST_POOL_PARAMS,
  type TestServer,
  type TestServerOptions,
} from "./test_server.ts";
import { checkReply } from "./openapi_check.ts";

/** The admin password of {@linkcode startAdminServer}. */
export const ADMIN_PASSWORD = "admin-password-0123";

/** A test server whose admin password is {@linkcode ADMIN_PASSWORD}. */
export interface AdminTestServer extends TestServer {
  /** Every JSON log line so far (audit lines included). */
  logs: Record<string, unknown>[];
  /** Where the admin API is served: `admin_listen` when set, else `listen`. */
  adminUrl: string;
  /** Resolves with the first log line (past or future) matching `pred`. */
  waitLog(pred: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
}

/** Starts a test server with `overrides`, a known admin password and log capture. */
export async function startAdminServer(
  overrides: Record<string, unknown> = {},
  opts: Omit<TestServerOptions, "log"> = {},
): Promise<AdminTestServer> {
  const logs: Record<string, unknown>[] = [];
  const watchers = new Set<() => void>();
  const log = new Logger("info", {}, (line) => {
    logs.push(JSON.parse(line));
    for (const w of [...watchers]) w();
  });
  const waitLog = (pred: (line: Record<string, unknown>) => boolean) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => {
        watchers.delete(check);
        reject(new Error("timed out waiting for a log line"));
      }, 8000);
      const check = () => {
        const found = logs.find(pred);
        if (found === undefined) return;
        clearTimeout(timer);
        watchers.delete(check);
        resolve(found);
      };
      watchers.add(check);
      check();
    });
  const t = await startTestServer(overrides, { ...opts, log });
  const hash = await new PasswordPool({ params: TEST_POOL_PARAMS }).hash(ADMIN_PASSWORD);
  await t.setSetting("admin_password_hash", hash);
  const admin = t.server.listeners.admin;
  const adminUrl = admin === null ? t.httpUrl : `http://127.0.0.1:${admin.port}`;
  return Object.assign(t, { logs, adminUrl, waitLog });
}

/** A finished HTTP exchange; the body is always read. */
export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body, or null when it is not JSON. */
  json: Record<string, unknown> | null;
  /** `json.data` as a record (empty when absent). */
  data: Record<string, unknown>;
  /** `json.error.code`, or "" when none. */
  code: string;
}

/** Options of one {@linkcode AdminClient.call}. */
export interface CallOptions {
  /** A JSON value, or a string sent as is. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Send `X-Nixmsg-Request: 1`; default true. */
  requestHeader?: boolean;
  /** Send the session cookie; default true. */
  cookie?: boolean;
}

/** An admin API client: a session cookie after `login`, or a bearer token. */
export class AdminClient {
  readonly base: string;
  cookie: string | null = null;
  token: string | null = null;

  constructor(base: string, token: string | null = null) {
    this.base = base;
    this.token = token;
  }

  /** Logs in with the admin password; throws unless it works. */
  async login(password = ADMIN_PASSWORD): Promise<Reply> {
    const r = await this.call("POST", "/api/admin/login", {
      body: { username: "admin", password },
    });
    if (r.status !== 200) throw new Error(`login failed: ${r.status} ${r.text}`);
    return r;
  }

  /** Sends one request and reads the whole answer. */
  async call(method: string, path: string, opts: CallOptions = {}): Promise<Reply> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.requestHeader ?? true) headers["X-Nixmsg-Request"] = "1";
    if ((opts.cookie ?? true) && this.cookie !== null) headers["Cookie"] = this.cookie;
    if (this.token !== null) headers["Authorization"] = `Bearer ${this.token}`;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
      headers["Content-Type"] ??= "application/json";
    }
    const res = await fetch(this.base + path, { method, headers, body });
    const text = await res.text();
    // Every answer must match docs/openapi.json (issue 16): the document cannot drift.
    checkReply(method, this.base + path, res.status, res.headers.get("content-type") ?? "", text);
    const setCookie = res.headers.get("set-cookie");
    if (setCookie !== null) {
      const pair = setCookie.split(";")[0];
      this.cookie = pair.endsWith("=") ? null : pair;
    }
    let json: Record<string, unknown> | null = null;
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
    const data = (json?.data ?? {}) as Record<string, unknown>;
    const code = ((json?.error as Record<string, unknown> | undefined)?.code as string) ?? "";
    return { status: res.status, headers: res.headers, text, json, data, code };
  }

  get(path: string, opts?: CallOptions): Promise<Reply> {
    return this.call("GET", path, opts);
  }
  post(path: string, body?: unknown, opts?: CallOptions): Promise<Reply> {
    return this.call("POST", path, { ...opts, body });
  }
  patch(path: string, body?: unknown, opts?: CallOptions): Promise<Reply> {
    return this.call("PATCH", path, { ...opts, body });
  }
  put(path: string, body?: unknown, opts?: CallOptions): Promise<Reply> {
    return this.call("PUT", path, { ...opts, body });
  }
  delete(path: string, opts?: CallOptions): Promise<Reply> {
    return this.call("DELETE", path, opts);
  }
}

/** Starts a server and returns it with a logged-in admin client. */
export async function adminSession(
  overrides: Record<string, unknown> = {},
): Promise<{ t: AdminTestServer; admin: AdminClient }> {
  const t = await startAdminServer(overrides);
  const admin = new AdminClient(t.adminUrl);
  try {
    await admin.login();
  } catch (err) {
    await t.close();
    throw err;
  }
  return { t, admin };
}

/** The audit lines logged so far. */
export function auditLines(t: AdminTestServer): Record<string, unknown>[] {
  return t.logs.filter((l) => l.msg === "audit");
}
