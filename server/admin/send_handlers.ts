/**
 * Sending on behalf of an endpoint over HTTP (issue 16): `send`, `status` and `recall` with the
 * same parser, op and rules as the MQTT frames (spec 6.2-6.4, 7.3). Only the transport differs:
 * the request body is the frame's fields, and the answer is the frame's `resp.data`.
 */
import { recallAs, sendAs, statusAs } from "../app/handlers/messaging.ts";
import { OpError } from "../store/op_error.ts";
import { HttpError } from "../http/router.ts";
import {
  isErrorCode,
  parseRequest,
  ProtocolError,
  type RequestFrame,
  type RequestOf,
  type RequestType,
  SEND_FIELDS,
  unknownField,
} from "../protocol/mod.ts";
import { uuidv7 } from "../protocol/uuid.ts";
import { countError } from "../metrics/metrics.ts";
import type { AdminDeps } from "./deps.ts";
import type { AdminRequest } from "./guards.ts";
import { httpFail, ok } from "./request.ts";

/** The `rid` of frames built from HTTP requests; HTTP answers carry no rid. */
const HTTP_RID = "http";
/** Frame fields the HTTP body may not set: the route decides them. */
const RESERVED = ["v", "type", "rid"];

function asHttp(err: unknown): never {
  if (err instanceof ProtocolError) {
    countError(err.code);
    throw httpFail(err.code, err.message);
  }
  if (err instanceof OpError && isErrorCode(err.code)) {
    countError(err.code);
    throw httpFail(err.code);
  }
  throw err;
}

/** Parses `fields` as a frame of `type` with the MQTT parser, so every rule is the same. */
function parseAs<T extends RequestType>(
  type: T,
  fields: Record<string, unknown>,
  limits: Parameters<typeof parseRequest>[1],
): RequestOf<T> {
  const bytes = new TextEncoder().encode(JSON.stringify({ ...fields, v: 1, type, rid: HTTP_RID }));
  const parsed = parseRequest(bytes, limits);
  if (!parsed.ok) asHttp(parsed.error);
  return parsed.frame as RequestFrame as RequestOf<T>;
}

/** The handlers of `/api/admin/endpoints/{id}/messages…`. */
export function sendHandlers(d: AdminDeps) {
  const { app } = d;

  /** The sender must exist (404) and be enabled (403), as an MQTT login would require. */
  async function sender(req: AdminRequest): Promise<string> {
    const id = req.ctx.params.id;
    const row = await app.store.query("endpoint.self_row", { id });
    if (row === null) throw httpFail("not_found", "端不存在");
    if (!row.enabled) throw httpFail("endpoint_disabled", "该端已停用，不能代它发送");
    return id;
  }

  async function readFields(req: AdminRequest): Promise<Record<string, unknown>> {
    const limit = app.config.limits.max_frame_bytes;
    let raw: Uint8Array;
    try {
      raw = await req.ctx.body(limit);
    } catch (err) {
      if (err instanceof HttpError && err.status === 413) throw httpFail("frame_too_large");
      throw err;
    }
    let value: unknown;
    try {
      value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(raw));
    } catch {
      throw httpFail("bad_request", "请求体不是合法的 JSON");
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw httpFail("bad_request", "请求体必须是 JSON 对象");
    }
    const fields = value as Record<string, unknown>;
    for (const key of RESERVED) {
      if (key in fields) {
        throw httpFail("bad_request", `字段 ${key} 由接口决定，不能出现在请求体中`);
      }
    }
    return fields;
  }

  /** POST /api/admin/endpoints/{id}/messages: the `send` frame's fields → its `resp.data`. */
  async function send(req: AdminRequest): Promise<void> {
    const senderId = await sender(req);
    const fields = await readFields(req);
    // issue 28: unknown fields are refused at every level (a typo such as `ofline` would
    // otherwise drop the option silently); the MQTT frame stays lenient.
    const unknown = unknownField(fields, SEND_FIELDS);
    if (unknown !== null) throw httpFail("bad_request", `不认识的字段：${unknown}`);
    // A backend may leave the id to us; a repeat without an id is then a new message.
    if (fields.id === undefined) fields.id = uuidv7(app.clock());
    const frame = parseAs("send", fields, app.config.limits);
    // spec 6.10: the sender's one request bucket, shared with its MQTT connection.
    if (!app.rate.take(senderId)) asHttp(new ProtocolError("rate_limited"));
    req.object = `${senderId}/${frame.id}`;
    try {
      ok(req.ctx, await sendAs(app, senderId, frame));
    } catch (err) {
      asHttp(err);
    }
  }

  /** GET /api/admin/endpoints/{id}/messages/{msgId}: the `status` frame's data, with paging. */
  async function status(req: AdminRequest): Promise<void> {
    const senderId = await sender(req);
    const url = req.ctx.url;
    const fields: Record<string, unknown> = { id: req.ctx.params.msgId };
    const cursor = url.searchParams.get("cursor");
    if (cursor !== null && cursor !== "") fields.cursor = cursor;
    const limit = url.searchParams.get("limit");
    if (limit !== null && limit !== "") {
      fields.limit = /^\d{1,4}$/.test(limit) ? Number(limit) : limit;
    }
    const frame = parseAs("status", fields, app.config.limits);
    try {
      ok(req.ctx, await statusAs(app, senderId, frame));
    } catch (err) {
      asHttp(err);
    }
  }

  /** POST /api/admin/endpoints/{id}/messages/{msgId}/recall: the `recall` frame's data. */
  async function recall(req: AdminRequest): Promise<void> {
    const senderId = await sender(req);
    const frame = parseAs("recall", { id: req.ctx.params.msgId }, app.config.limits);
    req.object = `${senderId}/${frame.id}`;
    try {
      ok(req.ctx, await recallAs(app, senderId, frame.id));
    } catch (err) {
      asHttp(err);
    }
  }

  return { send, status, recall };
}
