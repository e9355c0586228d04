/**
 * The events of the live inbox stream (`GET /api/admin/endpoints/{id}/inbox`, issue 32), each
 * declared once: the TypeBox schemas are the components the OpenAPI document publishes for the
 * stream, and through `Static` the types inbox_handlers.ts must send. The console's types are
 * generated from the document (web/src/api/schema.gen.ts).
 */
import { type Static, Type } from "@sinclair/typebox";
import { bool, closed, nonNegInt, str, timeMs } from "../http/json_schema.ts";

/** The summary of a withheld message body. */
export const InboxBodySummarySchema = closed({
  enc: str,
  content_type: str,
  length: Type.Integer({ minimum: 0, description: "characters of `data` as sent" }),
});

/** The event that opens a stream. */
export const InboxHelloSchema = closed({ stream: str, endpoint_id: str, online: bool });

/** One frame pushed to the endpoint, without any `body` or `meta`. */
export const InboxFrameSchema = closed({
  n: nonNegInt,
  at: timeMs,
  qos: Type.Union([Type.Literal(0), Type.Literal(1)]),
  type: str,
  frame: Type.Unsafe<Record<string, unknown> | null>({
    type: ["object", "null"],
    additionalProperties: true,
    description: "the frame without `body` and `meta`; null when it was not a JSON object",
  }),
  body: Type.Unsafe<Static<typeof InboxBodySummarySchema> | null>({
    oneOf: [{ $ref: "#/components/schemas/InboxBodySummary" }, { type: "null" }],
  }),
  bytes: nonNegInt,
});

/** The endpoint came online or went offline. */
export const InboxStateSchema = closed({ n: nonNegInt, at: timeMs, online: bool });

/** Frames the stream dropped because the client read too slowly. */
export const InboxLostSchema = closed({ count: nonNegInt });

export type InboxHello = Static<typeof InboxHelloSchema>;
export type InboxFrame = Static<typeof InboxFrameSchema>;
export type InboxState = Static<typeof InboxStateSchema>;
export type InboxLost = Static<typeof InboxLostSchema>;

/** Each event name of the stream and its `data`. */
export interface InboxEvents {
  hello: InboxHello;
  frame: InboxFrame;
  state: InboxState;
  lost: InboxLost;
}

/** The schema of any event's `data`, for the document's `text/event-stream` content. */
export const INBOX_EVENT_SCHEMA = {
  description: "Each event's `data` is one JSON object: `hello`, `frame`, `state` or `lost`",
  oneOf: ["InboxHello", "InboxFrame", "InboxState", "InboxLost"].map((n) => ({
    $ref: `#/components/schemas/${n}`,
  })),
};
