/**
 * Sending on behalf of an endpoint (docs/admin-api.md "Send on behalf of an endpoint"): the MQTT
 * `send`, `status` and `recall` frames over HTTP.
 */
import { http, seg } from "./http.ts";
import type { Body, Ok } from "./types.ts";

/** The body of a send: the `send` frame's fields (docs/protocol.md). */
export type SendBody = Body<"postApiAdminEndpointsIdMessages">;

/** The answer of a send. */
export type SendResult = Ok<"postApiAdminEndpointsIdMessages">;

/** The `status` frame's data. */
export type MessageStatus = Ok<"getApiAdminEndpointsIdMessagesMsgId">;

export const sending = {
  send: (sender: string, body: SendBody) =>
    http.post<SendResult>(`endpoints/${seg(sender)}/messages`, body),
  status: (sender: string, id: string, cursor = "") =>
    http.get<MessageStatus>(`endpoints/${seg(sender)}/messages/${seg(id)}`, {
      cursor,
      limit: 200,
    }),
};
