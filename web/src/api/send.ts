/**
 * Sending on behalf of an endpoint (docs/admin-api.md "Send on behalf of an endpoint"): the MQTT
 * `send`, `status` and `recall` frames over HTTP.
 */
import { http, seg } from "./http.ts";
import type { DeliveryState, MessageState } from "./types.ts";

/** The body of a send: the `send` frame's fields (docs/protocol.md). */
export interface SendBody {
  id?: string;
  to: { kind: "endpoint" | "group"; id: string };
  body: { enc: "utf8" | "base64"; data: string; content_type?: string };
  meta?: Record<string, unknown>;
  delay_ms?: number;
  send_at_ms?: number;
  offline?: { keep: boolean; ttl_seconds?: number };
  receipt?: boolean;
  talk_password?: string;
}

/** The answer of a send. */
export interface SendResult {
  id: string;
  send_at_ms: number;
  state: MessageState;
}

/** The `status` frame's data. */
export interface MessageStatus {
  id: string;
  state: MessageState;
  reason: string;
  send_at_ms: number;
  counts: Record<DeliveryState, number>;
  items: { endpoint_id: string; state: DeliveryState; reason: string }[];
  next_cursor: string;
}

export const sending = {
  send: (sender: string, body: SendBody) =>
    http.post<SendResult>(`endpoints/${seg(sender)}/messages`, body),
  status: (sender: string, id: string, cursor = "") =>
    http.get<MessageStatus>(`endpoints/${seg(sender)}/messages/${seg(id)}`, {
      cursor,
      limit: 200,
    }),
};
