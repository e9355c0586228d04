/** The harness's admin side: a logged-in client of the admin API (docs/admin-api.md). */

/** An endpoint the harness created, with its login password. */
export interface CreatedEndpoint {
  id: string;
  password: string;
}

/** A command read from the harness's stdin. */
export type Command =
  | { cmd: "endpoint"; id?: string; password?: string; name?: string; talk_password?: string }
  | { cmd: "registration"; enabled: boolean; code?: string }
  | { cmd: "admin"; method: string; path: string; body?: unknown };

function randomPassword(): string {
  const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
  const bytes = crypto.getRandomValues(new Uint8Array(20));
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join("");
}

/** Admin operations for the conformance harness. */
export class AdminClient {
  /** The session cookie, `nixmsg_admin=…`. */
  readonly cookie: string;
  readonly #httpUrl: string;
  #counter = 0;

  private constructor(httpUrl: string, cookie: string) {
    this.#httpUrl = httpUrl;
    this.cookie = cookie;
  }

  /** Logs in to the admin API with the password from `admin init` (cookie session). */
  static async open(httpUrl: string, password: string): Promise<AdminClient> {
    const res = await fetch(`${httpUrl}/api/admin/login`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Nixmsg-Request": "1" },
      body: JSON.stringify({ username: "admin", password }),
    });
    const text = await res.text();
    const cookie = res.headers.get("set-cookie")?.match(/nixmsg_admin=[^;]+/)?.[0];
    if (!res.ok || !cookie) throw new Error(`Admin login failed: HTTP ${res.status} ${text}`);
    return new AdminClient(httpUrl, cookie);
  }

  /** Runs one stdin command and returns its result. */
  command(c: Command): Promise<unknown> {
    switch (c.cmd) {
      case "endpoint":
        return this.createEndpoint({
          id: c.id,
          password: c.password,
          name: c.name,
          talkPassword: c.talk_password,
        });
      case "registration":
        return this.setRegistration(c.enabled, c.code);
      case "admin":
        return this.request(c.method, c.path, c.body);
      default:
        return Promise.reject(new Error(`Unknown command: ${JSON.stringify(c)}`));
    }
  }

  /** A raw admin API call: `{ status, body }`. */
  async request(method: string, path: string, body?: unknown): Promise<unknown> {
    const res = await fetch(`${this.#httpUrl}${path}`, {
      method,
      headers: {
        Cookie: this.cookie,
        "X-Nixmsg-Request": "1",
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch { /* not JSON */ }
    return { status: res.status, body: parsed };
  }

  async #ok(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    const r = await this.request(method, path, body) as { status: number; body: unknown };
    const b = r.body as { ok?: boolean; data?: Record<string, unknown> };
    if (r.status !== 200 || b?.ok !== true) {
      throw new Error(`${method} ${path}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    }
    return b.data ?? {};
  }

  /** Creates an endpoint; id and password are generated when not given. */
  async createEndpoint(
    e: { id?: string; password?: string; name?: string; talkPassword?: string },
  ): Promise<CreatedEndpoint> {
    const id = e.id || `c${Date.now().toString(36)}${++this.#counter}`;
    const password = e.password || randomPassword();
    await this.#ok("POST", "/api/admin/endpoints", {
      id,
      login_password: password,
      name: e.name ?? id,
      talk_password: e.talkPassword ?? "",
    });
    return { id, password };
  }

  /** Turns registration on or off, optionally with a new code (spec 6.9, 8). */
  async setRegistration(enabled: boolean, code?: string): Promise<unknown> {
    return await this.#ok("PUT", "/api/admin/registration", {
      enabled,
      ...(code === undefined ? {} : { code }),
    });
  }
}
