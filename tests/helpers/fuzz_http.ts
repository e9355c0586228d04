// HTTP inputs of the fuzz test: requests written byte by byte, so methods, paths, headers,
// lengths and bodies can be anything, including what fetch() would refuse to send.
import { concatBytes, type Rng } from "./fuzz_rng.ts";
import { randomJsonText } from "./fuzz_json.ts";

/** One HTTP input. */
export interface HttpInput {
  name: string;
  bytes: Uint8Array;
}

const enc = new TextEncoder();

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
const ODD_METHODS = ["TRACE", "CONNECT", "PROPFIND", "GETX", "G", "POST\u0000", "X".repeat(300)];

/** The routes of the admin and client APIs; `:id` is replaced by a fuzzed segment. */
const ROUTES = [
  "/api/admin/login",
  "/api/admin/logout",
  "/api/admin/me",
  "/api/admin/password",
  "/api/admin/overview",
  "/api/admin/settings",
  "/api/admin/tokens",
  "/api/admin/tokens/:id",
  "/api/admin/endpoints",
  "/api/admin/endpoints/import",
  "/api/admin/endpoints/batch",
  "/api/admin/endpoints/:id",
  "/api/admin/endpoints/:id/kick",
  "/api/admin/endpoints/:id/reset-login-password",
  "/api/admin/endpoints/:id/unlock",
  "/api/admin/endpoints/:id/talk-password",
  "/api/admin/registration",
  "/api/admin/groups",
  "/api/admin/groups/:id",
  "/api/admin/groups/:id/members",
  "/api/admin/groups/:id/members/:id",
  "/api/admin/groups/:id/transfer",
  "/api/admin/messages",
  "/api/admin/messages/:id",
  "/api/client/register",
  "/healthz",
  "/readyz",
  "/metrics",
  "/mqtt",
  "/",
  "/index.html",
  "/assets/x.js",
];

/** Path segments for `:id`; never the ids of the endpoints the final delivery check uses. */
const SEGMENTS = [
  "fz_nobody",
  "e_12345678",
  "g_ab12cd34",
  "1",
  "-1",
  "99999999999999999999999",
  "1e400",
  "..",
  ".",
  "%2e%2e",
  "%00",
  "%zz",
  "%",
  "%E4%B8%AD",
  "中",
  "a%2Fb",
  "x".repeat(2000),
  "",
];

const ODD_PATHS = [
  "*",
  "//",
  "/api//admin/me",
  "/api/admin/../admin/me",
  "/../../etc/passwd",
  "/assets/../../deno.json",
  "/%2e%2e/%2e%2e/etc/passwd",
  "/api/admin/endpoints?limit=-1&cursor=%ff",
  "/api/admin/messages?limit=1e400&state=nope&from=%00",
  "/api/admin/endpoints?q=" + "a".repeat(5000),
  "http://evil.example/healthz",
  "/healthz#frag",
  "/\u0000",
  "/" + "a/".repeat(3000),
];

const ODD_VERSIONS = ["HTTP/1.0", "HTTP/2.0", "HTTP/9.9", "HTTP/1.1x", ""];

const CONTENT_TYPES = [
  "application/json",
  "application/json; charset=utf-8",
  "text/csv",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/json; charset=latin1",
  "",
];

/** What a request may carry to get past the admin guards. */
export interface HttpAuth {
  /** `name=value` of a valid admin session cookie. */
  cookie: string;
}

function path(rng: Rng): string {
  if (rng.chance(0.12)) return rng.pick(ODD_PATHS);
  let p = rng.pick(ROUTES).replace(/:id/g, () => rng.pick(SEGMENTS));
  if (rng.chance(0.15)) p += `?${rng.pick(["limit=0", "cursor=%ff%fe", "a=1&a=2", "=", "&&"])}`;
  return p;
}

function csvBody(rng: Rng): string {
  const rows = [
    "id,name,login_password",
    "fz_csv1,名字,password-1234",
    '"unterminated,x',
    ",,,,,,",
    "\u0000",
  ];
  return Array.from({ length: 1 + rng.int(5) }, () => rng.pick(rows)).join(
    rng.pick(["\n", "\r\n", "\r"]),
  );
}

function body(rng: Rng): string {
  switch (rng.int(5)) {
    case 0:
      return "";
    case 1:
      return csvBody(rng);
    default:
      return randomJsonText(rng);
  }
}

/** Every this many HTTP inputs, one is {@link httpControl}. */
export const HTTP_CONTROL_EVERY = 50;

/**
 * A request a serving server always answers 200: `GET /healthz`. The HTTP phase mixes one in every
 * {@link HTTP_CONTROL_EVERY} inputs, so that its "HTTP 2xx answers" check counts on them rather
 * than on how many random requests happen to be valid (a seed gave 2 of 700).
 */
export function httpControl(): HttpInput {
  return {
    name: "control: GET /healthz",
    bytes: enc.encode("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
  };
}

/** A random HTTP request: method, path, version, headers, length framing and body. */
export function httpInput(rng: Rng, auth: HttpAuth): HttpInput {
  const method = rng.chance(0.15) ? rng.pick(ODD_METHODS) : rng.pick(METHODS);
  const target = path(rng);
  const version = rng.chance(0.15) ? rng.pick(ODD_VERSIONS) : "HTTP/1.1";
  const payload = enc.encode(body(rng));
  const headers: string[] = ["Host: 127.0.0.1"];
  const notes: string[] = [];
  if (rng.chance(0.6)) headers.push(`Cookie: ${auth.cookie}`);
  if (rng.chance(0.7)) headers.push("X-Nixmsg-Request: 1");
  if (rng.chance(0.1)) {
    headers.push(
      `Authorization: ${rng.pick(["Bearer nat_x", "Bearer", "Basic YTpi", "Bearer  a b"])}`,
    );
  }
  if (rng.chance(0.7)) headers.push(`Content-Type: ${rng.pick(CONTENT_TYPES)}`);
  if (rng.chance(0.1)) {
    headers.push(`X-Forwarded-For: ${rng.pick(["1.2.3.4", "::1, x", "garbage", ""])}`);
  }
  let framing = "content-length";
  let bodyBytes = payload;
  const lengthRoll = rng.int(12);
  if (lengthRoll === 0) {
    framing = "no length";
  } else if (lengthRoll === 1) {
    framing = "chunked";
    headers.push("Transfer-Encoding: chunked");
    const chunk = rng.chance(0.7)
      ? `${payload.length.toString(16)}\r\n${new TextDecoder().decode(payload)}\r\n0\r\n\r\n`
      : rng.pick([
        "zz\r\nabc\r\n",
        "5\r\nab\r\n0\r\n\r\n",
        "ffffffffffffffff\r\n",
        "0\r\nX-Trailer: \u0000\r\n\r\n",
      ]);
    bodyBytes = enc.encode(chunk);
  } else if (lengthRoll === 2) {
    framing = "content-length too long";
    headers.push(`Content-Length: ${payload.length + 1 + rng.int(100)}`);
  } else if (lengthRoll === 3) {
    framing = "content-length too short";
    headers.push(`Content-Length: ${rng.int(Math.max(1, payload.length))}`);
  } else if (lengthRoll === 4) {
    const bad = rng.pick(["-1", "abc", "1e3", "99999999999999999999", " 5", "0x10", "1, 2"]);
    framing = `content-length ${JSON.stringify(bad)}`;
    headers.push(`Content-Length: ${bad}`);
  } else if (lengthRoll === 5) {
    framing = "two content-lengths";
    headers.push(`Content-Length: ${payload.length}`, `Content-Length: ${payload.length + 3}`);
  } else if (lengthRoll === 6) {
    framing = "chunked and content-length";
    headers.push("Transfer-Encoding: chunked", `Content-Length: ${payload.length}`);
  } else {
    headers.push(`Content-Length: ${payload.length}`);
  }
  const headerRoll = rng.int(14);
  if (headerRoll === 0) {
    notes.push("huge header");
    headers.push(`X-Big: ${"a".repeat(rng.pick([8_000, 17_000, 100_000]))}`);
  } else if (headerRoll === 1) {
    notes.push("many headers");
    for (let i = 0; i < 500; i++) headers.push(`X-H${i}: ${i}`);
  } else if (headerRoll === 2) {
    notes.push("bad header line");
    headers.push(rng.pick(["NoColon", "Bad Name: x", "X: a\u0000b", ": empty", "X-Ctl: \u0001"]));
  } else if (headerRoll === 3) {
    notes.push("Expect: 100-continue");
    headers.push("Expect: 100-continue");
  } else if (headerRoll === 4) {
    notes.push("Connection: keep-alive, two requests");
    headers.push("Connection: keep-alive");
  } else if (headerRoll === 5) {
    notes.push("LF line ends");
  }
  const eol = headerRoll === 5 ? "\n" : "\r\n";
  const head = `${method} ${target} ${version}`.trimEnd() + eol + headers.join(eol) + eol + eol;
  const parts = [enc.encode(head), bodyBytes];
  if (headerRoll === 4) parts.push(enc.encode(`GET /healthz HTTP/1.1${eol}Host: x${eol}${eol}`));
  return {
    name: `${JSON.stringify(method).slice(0, 40)} ${JSON.stringify(target).slice(0, 80)} ${
      version || "(no version)"
    }, ${framing}${notes.length ? ", " + notes.join(", ") : ""}, body ${bodyBytes.length} B`,
    bytes: concatBytes(parts),
  };
}
