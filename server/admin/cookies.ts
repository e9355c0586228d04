/** The admin session cookie (spec 8): name, attributes, parsing. */

/** spec 8: the cookie is named `nixmsg_admin`. */
export const SESSION_COOKIE = "nixmsg_admin";
/** spec 8: sessions last 12 hours by default. */
export const SESSION_TTL_MS = 12 * 3_600_000;

/**
 * Reads one cookie from a `Cookie` header. Returns undefined when it is absent. Values are taken
 * as sent (ours are base64url and need no decoding).
 */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * The `Set-Cookie` value of a new session: HttpOnly, SameSite=Lax, Path=/, and Secure when the
 * request came over HTTPS, directly or via a trusted proxy (spec 8, 4.5).
 */
export function sessionCookie(value: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${SESSION_TTL_MS / 1000}; HttpOnly; ` +
    `SameSite=Lax${secure ? "; Secure" : ""}`;
}

/** The `Set-Cookie` value that removes the session cookie (logout). */
export function clearedCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`;
}
