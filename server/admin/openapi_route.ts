/** `GET /api/admin/openapi.json`: the OpenAPI document, open like the docs are (issue 16). */
import type { AdminHandler } from "./guards.ts";
import { openApiText } from "./openapi.ts";

/** The handler; the document is built once, on first use. */
export function openApiHandler(): AdminHandler {
  let body: Uint8Array | null = null;
  return ({ ctx }) => {
    body ??= new TextEncoder().encode(openApiText());
    ctx.res.statusCode = 200;
    ctx.res.setHeader("Content-Type", "application/json; charset=utf-8");
    ctx.res.setHeader("Content-Length", body.byteLength);
    ctx.res.setHeader("Cache-Control", "no-store");
    ctx.res.end(body);
  };
}
