/** Self-registration over HTTP (spec 6.9). */
import { NixMsgError } from "./errors.ts";
import type { RegisterOptions, RegisterResult } from "./types.ts";
import { registerUrl } from "./url.ts";

/**
 * Registers a new endpoint with the registration code. `url` is the connection URL; the HTTP
 * address is derived from it (spec 6.9). The generated login password, when the server makes
 * one, is returned once and not kept by the SDK.
 *
 * @example
 * ```ts
 * const { id, loginPassword } = await register("wss://relay.example/mqtt", "code-from-admin", {
 *   name: "Front door",
 * });
 * ```
 */
export async function register(
  url: string,
  registrationCode: string,
  options: RegisterOptions = {},
): Promise<RegisterResult> {
  const doFetch = options.fetch ?? globalThis.fetch;
  let res: Response;
  try {
    res = await doFetch(registerUrl(url), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        registration_code: registrationCode,
        id: options.id ?? "",
        login_password: options.loginPassword ?? "",
        name: options.name ?? "",
        talk_password: options.talkPassword ?? "",
      }),
    });
  } catch (err) {
    throw new NixMsgError("network", `Registration request failed: ${String(err)}`, {
      cause: err,
    });
  }
  let json: unknown;
  try {
    json = await res.json();
  } catch {
    throw new NixMsgError("bad_response", `Registration answered HTTP ${res.status} without JSON`, {
      status: res.status,
    });
  }
  const body = (json ?? {}) as {
    ok?: unknown;
    data?: { id?: unknown; login_password?: unknown };
    error?: { code?: unknown; message?: unknown; data?: unknown };
  };
  if (body.ok === true && typeof body.data?.id === "string") {
    const pw = body.data.login_password;
    return typeof pw === "string" ? { id: body.data.id, loginPassword: pw } : { id: body.data.id };
  }
  const code = typeof body.error?.code === "string" ? body.error.code : "bad_response";
  const message = typeof body.error?.message === "string" ? body.error.message : code;
  const data = typeof body.error?.data === "object" && body.error.data !== null
    ? (body.error.data as Record<string, unknown>)
    : undefined;
  throw new NixMsgError(code, message, { status: res.status, data });
}
