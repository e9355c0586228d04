/**
 * Serves the built web console (web/dist, spec 2.4) as the admin scope's router fallback, so it
 * lives wherever the admin API lives (spec 4.3).
 *
 * - A path naming a file in web/dist gets that file. A missing file under `assets/` or at the top
 *   level (`/favicon.ico`) is a 404. Any other path gets index.html: the console routes in the
 *   browser. Segments starting with a dot are never read from disk.
 * - Vite's hashed files under `assets/` are cached for a year (`immutable`); everything else,
 *   index.html first, is revalidated on every use (`no-cache` with an ETag).
 * - Nothing outside web/dist is ever read: decoded paths are resolved and checked against it.
 * - The directory is found from `import.meta.dirname`, so `deno compile --include web/dist`
 *   serves the embedded copy the same way.
 */
import { readFile, stat } from "node:fs/promises";
import { extname, join, resolve, sep } from "node:path";
import { gzipSync } from "node:zlib";
import { HttpError } from "./context.ts";
import type { HttpContext, RouteHandler } from "./types.ts";

/** web/dist of this checkout (or of the compiled binary's embedded files). */
export const WEB_DIST = join(import.meta.dirname ?? ".", "..", "..", "web", "dist");

const IMMUTABLE = "public, max-age=31536000, immutable";
const REVALIDATE = "no-cache";
/** Compress text files above this size when the client accepts gzip. */
const GZIP_MIN_BYTES = 1024;

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".webmanifest": "application/manifest+json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".avif": "image/avif",
  ".ico": "image/x-icon",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".ttf": "font/ttf",
  ".wasm": "application/wasm",
};

/**
 * The page itself may load only its own scripts; Naive UI injects its styles at run time, hence
 * 'unsafe-inline' for styles only. It must not be framed (clickjacking on admin buttons).
 */
const HTML_HEADERS: Record<string, string> = {
  "Content-Security-Policy": "default-src 'self'; script-src 'self'; " +
    "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; " +
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "same-origin",
};

/** Options of {@linkcode staticHandler}. */
export interface StaticOptions {
  /** The directory to serve; web/dist by default. */
  readonly root?: string;
}

interface Entry {
  readonly key: string;
  readonly body: Uint8Array;
  readonly etag: string;
  gzip?: Uint8Array;
}

function contentType(path: string): string {
  return TYPES[extname(path).toLowerCase()] ?? "application/octet-stream";
}

function compressible(type: string): boolean {
  return type.startsWith("text/") || type.includes("json") || type.includes("javascript") ||
    type.startsWith("image/svg");
}

/** The path relative to the root, decoded; null when it cannot be decoded or names no file. */
function relativePath(pathname: string): string[] | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return null;
  }
  if (decoded.includes("\0") || decoded.includes("\\")) return null;
  return decoded.split("/").filter((s) => s !== "");
}

/**
 * Builds the fallback handler that serves the console.
 *
 * @example
 * createRouter(routes, { log, fallbacks: { admin: staticHandler() } });
 */
export function staticHandler(opts: StaticOptions = {}): RouteHandler {
  const root = resolve(opts.root ?? WEB_DIST);
  const cache = new Map<string, Entry>();

  /** Reads a regular file under root, reusing the cached copy while size and mtime match. */
  async function load(file: string): Promise<Entry | null> {
    let info;
    try {
      info = await stat(file);
    } catch {
      return null;
    }
    if (!info.isFile()) return null;
    const key = `${info.size}-${info.mtimeMs}`;
    const hit = cache.get(file);
    if (hit?.key === key) return hit;
    const body = new Uint8Array(await readFile(file));
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", body));
    // Weak: the same tag covers the plain and the gzip form.
    const etag = `W/"${btoa(String.fromCharCode(...digest.subarray(0, 12)))}"`;
    const entry: Entry = { key, body, etag };
    cache.set(file, entry);
    return entry;
  }

  function inside(segments: string[]): string | null {
    const file = resolve(root, ...segments);
    return file.startsWith(root + sep) ? file : null;
  }

  return async (ctx: HttpContext) => {
    const method = ctx.req.method ?? "GET";
    if (method !== "GET" && method !== "HEAD") {
      ctx.res.setHeader("Allow", "GET, HEAD");
      throw new HttpError(405, "bad_request", `Method ${method} not allowed here`);
    }
    const segments = relativePath(ctx.url.pathname);
    if (segments === null) throw new HttpError(400, "bad_request", "Malformed path");
    const hidden = segments.some((s) => s.startsWith("."));
    const file = segments.length === 0 || hidden ? null : inside(segments);
    const found = file === null ? null : await load(file);
    if (file !== null && found !== null) return send(ctx, file, found, segments[0] === "assets");

    // A missing asset is a 404, never the page: a stale script must not get HTML back. Deeper
    // paths are console pages even with a dot (endpoint ids may hold one: /endpoints/door.1).
    const topFile = segments.length === 1 && extname(segments[0]) !== "";
    if (segments[0] === "assets" || topFile) {
      throw new HttpError(404, "not_found", "Not found");
    }
    const index = join(root, "index.html");
    const page = await load(index);
    if (page === null) {
      throw new HttpError(
        404,
        "not_found",
        "The web console is not built: run `deno task build:web`",
      );
    }
    send(ctx, index, page, false);
  };
}

function send(ctx: HttpContext, file: string, entry: Entry, immutable: boolean): void {
  const { req, res } = ctx;
  const type = contentType(file);
  res.setHeader("Content-Type", type);
  res.setHeader("Cache-Control", immutable ? IMMUTABLE : REVALIDATE);
  res.setHeader("ETag", entry.etag);
  res.setHeader("X-Content-Type-Options", "nosniff");
  if (type.startsWith("text/html")) {
    for (const [k, v] of Object.entries(HTML_HEADERS)) res.setHeader(k, v);
  }
  const zip = compressible(type) && entry.body.byteLength >= GZIP_MIN_BYTES;
  if (zip) res.setHeader("Vary", "Accept-Encoding");
  if (req.headers["if-none-match"]?.split(",").some((t) => t.trim() === entry.etag)) {
    res.statusCode = 304;
    res.end();
    return;
  }
  let body = entry.body;
  if (zip && acceptsGzip(req.headers["accept-encoding"])) {
    entry.gzip ??= new Uint8Array(gzipSync(entry.body));
    body = entry.gzip;
    res.setHeader("Content-Encoding", "gzip");
  }
  res.statusCode = 200;
  res.setHeader("Content-Length", body.byteLength);
  if (req.method === "HEAD") res.end();
  else res.end(body);
}

function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  return header.split(",").some((part) => {
    const [name, ...params] = part.trim().split(";");
    if (name.trim().toLowerCase() !== "gzip") return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}
