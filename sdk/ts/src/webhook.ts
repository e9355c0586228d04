/**
 * Verifying NixMsg webhook requests (docs/protocol.md "Webhooks"): Standard Webhooks signatures,
 * `v1,` + base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>` keyed with the bytes of
 * the `whsec_` secret. Uses WebCrypto, so it runs in browsers, Node.js 20+ and Deno.
 *
 * @example
 * ```ts
 * import { verifyWebhook } from "@nixevol/nixmsg";
 *
 * const body = await request.text();
 * if (!(await verifyWebhook(secret, request.headers, body))) return new Response(null, { status: 401 });
 * const event = JSON.parse(body); // {"v":1,"type":"msg"|"receipt"|"revoked"|"test", ...}
 * ```
 * @module
 */

/** Request headers: a `Headers` object, or a plain record with lower-case names. */
export type WebhookHeaders = { get(name: string): string | null } | Record<string, string>;

/** Options of {@link verifyWebhook}. */
export interface VerifyWebhookOptions {
  /** Largest accepted difference between `webhook-timestamp` and now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** The current time in ms (default `Date.now()`). */
  now?: number;
}

function header(h: WebhookHeaders, name: string): string {
  if (typeof (h as { get?: unknown }).get === "function") {
    return (h as { get(n: string): string | null }).get(name) ?? "";
  }
  return (h as Record<string, string>)[name] ?? "";
}

function base64Bytes(text: string): Uint8Array<ArrayBuffer> {
  const bin = atob(text);
  const out = new Uint8Array(new ArrayBuffer(bin.length));
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function bytesBase64(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * The `webhook-signature` value of a request: `v1,<base64>` (what NixMsg sends).
 */
export async function signWebhook(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string | Uint8Array,
): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    base64Bytes(secret.replace(/^whsec_/, "")),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const head = new TextEncoder().encode(`${id}.${timestampSeconds}.`);
  const tail = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const data = new Uint8Array(new ArrayBuffer(head.length + tail.length));
  data.set(head);
  data.set(tail, head.length);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, data));
  return `v1,${bytesBase64(mac)}`;
}

/**
 * True when a webhook request carries a valid signature made with `secret` and its timestamp is
 * within the tolerance. Pass the body exactly as received, before parsing it. Deduplicate the
 * events you accept by `webhook-id`: a retry repeats it.
 */
export async function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  options: VerifyWebhookOptions = {},
): Promise<boolean> {
  const id = header(headers, "webhook-id");
  const ts = header(headers, "webhook-timestamp");
  if (id === "" || !/^\d+$/.test(ts)) return false;
  const now = options.now ?? Date.now();
  if (Math.abs(now / 1000 - Number(ts)) > (options.toleranceSeconds ?? 300)) return false;
  let want: string;
  try {
    want = await signWebhook(secret, id, Number(ts), body);
  } catch {
    return false; // a secret that is not base64
  }
  return header(headers, "webhook-signature").split(" ").some((s) => sameText(s, want));
}
