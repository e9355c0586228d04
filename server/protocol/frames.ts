/**
 * Types of the application frames of spec 6: UTF-8 JSON, one frame per MQTT publish, snake_case
 * fields, times in Unix milliseconds, `v` always 1.
 *
 * Request frames are described as `parseRequest` returns them: validated, with defaults applied
 * and absent optional values as `null`. Downlink frames are described as they go on the wire.
 */
import type { ErrorCode } from "./errors.ts";

/** The only protocol version (spec 6). */
export type FrameVersion = 1;

/** Any JSON value, as `JSON.parse` produces it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
/** A JSON object, as `JSON.parse` produces it. */
export type JsonObject = { [key: string]: JsonValue };

/** Where a message goes (spec 6.2). */
export interface Target {
  readonly kind: "endpoint" | "group";
  readonly id: string;
}

/** How `body.data` is encoded (spec 6.2). */
export type BodyEnc = "utf8" | "base64";

interface RequestBase<T extends string> {
  readonly v: FrameVersion;
  readonly type: T;
  /** Client-chosen request id, 1–64 characters, echoed in the `resp` (spec 6). */
  readonly rid: string;
}

// spec 6.1
export interface HelloFrame extends RequestBase<"hello"> {
  /** Largest downlink frame this connection accepts, at least 1024; null means no limit. */
  readonly max_receive_bytes: number | null;
  readonly client: string | null;
}

/** The body of a parsed `send`: the wire fields plus the decoded bytes (spec 6.2). */
export interface SendBody {
  readonly enc: BodyEnc;
  /** The given content type, or the default for `enc`. */
  readonly content_type: string;
  /** `data` exactly as received (canonical base64 when `enc` is base64). */
  readonly data: string;
  /** The decoded body; its length is what `max_body_bytes` limits. */
  readonly bytes: Uint8Array;
}

// spec 6.2
export interface SendFrame extends RequestBase<"send"> {
  readonly id: string;
  readonly to: Target;
  readonly body: SendBody;
  /** `{}` when absent. */
  readonly meta: JsonObject;
  /** At most one of `send_at_ms` and `delay_ms` is non-null; see `resolveSendAt`. */
  readonly send_at_ms: number | null;
  readonly delay_ms: number | null;
  /** `ttl_seconds` is 0 when `keep` is false, else the given value or the default. */
  readonly offline: { readonly keep: boolean; readonly ttl_seconds: number };
  readonly receipt: boolean;
  /** null when absent or empty. */
  readonly talk_password: string | null;
}

// spec 6.3
export interface AckFrame extends RequestBase<"ack"> {
  readonly from: string;
  readonly id: string;
}

// spec 6.4
export interface RecallFrame extends RequestBase<"recall"> {
  readonly id: string;
}
export interface StatusFrame extends RequestBase<"status"> {
  readonly id: string;
  readonly cursor: string;
  readonly limit: number;
}
export interface ReceiptAckFrame extends RequestBase<"receipt_ack"> {
  readonly receipt_id: string;
}

// spec 6.5
export interface PresenceGetFrame extends RequestBase<"presence.get"> {
  readonly ids: readonly string[];
}
export interface DirectoryListFrame extends RequestBase<"directory.list"> {
  readonly cursor: string;
  readonly limit: number;
  readonly query: string;
}
export interface PresenceWatchFrame extends RequestBase<"presence.watch"> {
  /** Empty when `all` is true. */
  readonly ids: readonly string[];
  readonly all: boolean;
}

// spec 6.6
export interface UnlockFrame extends RequestBase<"unlock"> {
  readonly endpoint_id: string;
  readonly talk_password: string;
}
export type SelfGetFrame = RequestBase<"self.get">;
export interface SelfUpdateFrame extends RequestBase<"self.update"> {
  /** null leaves the value unchanged. */
  readonly name: string | null;
  readonly default_delay_ms: number | null;
}
export interface SelfTalkPasswordFrame extends RequestBase<"self.talk_password"> {
  /** "" clears the talk password. */
  readonly talk_password: string;
}
export interface SelfLoginPasswordFrame extends RequestBase<"self.login_password"> {
  readonly old_password: string;
  readonly new_password: string;
}
export type SelfLogoutFrame = RequestBase<"self.logout">;

// spec 6.7
/** One member to add to a group; `talk_password` is null when absent or empty. */
export interface GroupMemberInput {
  readonly id: string;
  readonly talk_password: string | null;
}
export interface GroupCreateFrame extends RequestBase<"group.create"> {
  /** null lets the server choose the id (the wire sends "" or omits it). */
  readonly id: string | null;
  readonly name: string;
  readonly members: readonly GroupMemberInput[];
}
export interface GroupAddFrame extends RequestBase<"group.add"> {
  readonly group_id: string;
  readonly members: readonly GroupMemberInput[];
}
export interface GroupRemoveFrame extends RequestBase<"group.remove"> {
  readonly group_id: string;
  readonly endpoint_id: string;
}
export interface GroupLeaveFrame extends RequestBase<"group.leave"> {
  readonly group_id: string;
}
export interface GroupTransferFrame extends RequestBase<"group.transfer"> {
  readonly group_id: string;
  readonly endpoint_id: string;
}
export interface GroupRenameFrame extends RequestBase<"group.rename"> {
  readonly group_id: string;
  readonly name: string;
}
export interface GroupDissolveFrame extends RequestBase<"group.dissolve"> {
  readonly group_id: string;
}
export interface GroupListFrame extends RequestBase<"group.list"> {
  readonly cursor: string;
  readonly limit: number;
}
export interface GroupGetFrame extends RequestBase<"group.get"> {
  readonly group_id: string;
  readonly cursor: string;
  readonly limit: number;
}

/** Every request a client may publish on its up topic, discriminated by `type`. */
export type RequestFrame =
  | HelloFrame
  | SendFrame
  | AckFrame
  | RecallFrame
  | StatusFrame
  | ReceiptAckFrame
  | PresenceGetFrame
  | DirectoryListFrame
  | PresenceWatchFrame
  | UnlockFrame
  | SelfGetFrame
  | SelfUpdateFrame
  | SelfTalkPasswordFrame
  | SelfLoginPasswordFrame
  | SelfLogoutFrame
  | GroupCreateFrame
  | GroupAddFrame
  | GroupRemoveFrame
  | GroupLeaveFrame
  | GroupTransferFrame
  | GroupRenameFrame
  | GroupDissolveFrame
  | GroupListFrame
  | GroupGetFrame;

/** The `type` of a request frame. */
export type RequestType = RequestFrame["type"];
/** The request frame with the given `type`. */
export type RequestOf<T extends RequestType> = Extract<RequestFrame, { type: T }>;

// ---- downlink (spec 6) ----

/** The `error` object of a failed `resp` and of the HTTP APIs (spec 6, 6.9). */
export interface ErrorBody {
  readonly code: ErrorCode;
  readonly message: string;
  readonly data?: Record<string, unknown>;
}
export interface RespOkFrame<D = unknown> {
  readonly v: FrameVersion;
  readonly type: "resp";
  readonly rid: string;
  readonly ok: true;
  readonly data: D;
}
export interface RespErrFrame {
  readonly v: FrameVersion;
  readonly type: "resp";
  readonly rid: string;
  readonly ok: false;
  readonly error: ErrorBody;
}
export type RespFrame<D = unknown> = RespOkFrame<D> | RespErrFrame;

/** Message state (spec 7.1). */
export type MessageState = "scheduled" | "dispatched" | "completed";
/** Delivery state (spec 7.1). */
export type DeliveryState =
  | "pending"
  | "accepted"
  | "recalled"
  | "expired"
  | "dropped"
  | "rejected";

/** `data` of the `hello` response (spec 6.1). */
export interface HelloData {
  readonly server_time_ms: number;
  readonly server_version: string;
  readonly max_body_bytes: number;
  readonly max_meta_bytes: number;
  readonly max_frame_bytes: number;
  readonly max_ttl_seconds: number;
  readonly max_schedule_seconds: number;
  readonly ack_timeout_seconds: number;
  /** Only when this connection authenticated with the login password. */
  readonly session_token?: string;
}
/** `data` of the `send` response (spec 6.2). */
export interface SendData {
  readonly id: string;
  readonly send_at_ms: number;
  readonly state: MessageState;
}
/** `data` of the `ack` response (spec 6.3). */
export interface AckData {
  readonly result: DeliveryState;
}
/** `data` of the `recall` response (spec 6.4). */
export interface RecallData {
  readonly result: "recalled" | "partial" | "failed";
  readonly recalled: number;
  readonly accepted: number;
  readonly other: number;
}

// spec 6.3
export interface MsgFrame {
  readonly v: FrameVersion;
  readonly type: "msg";
  readonly id: string;
  readonly from: string;
  readonly to: Target;
  readonly body: { readonly enc: BodyEnc; readonly content_type: string; readonly data: string };
  readonly meta: JsonObject;
  readonly send_at_ms: number;
}

// spec 6.4
export type ReceiptState = "accepted" | "expired" | "dropped" | "rejected";
export interface ReceiptFrame {
  readonly v: FrameVersion;
  readonly type: "receipt";
  readonly receipt_id: string;
  readonly id: string;
  /** "" for a message-level rejection. */
  readonly endpoint_id: string;
  readonly state: ReceiptState;
  readonly reason: string;
  readonly at_ms: number;
}
export type RevokeReason =
  | "recalled"
  | "expired"
  | "dropped"
  | "left_group"
  | "group_dissolved"
  | "endpoint_disabled"
  | "endpoint_deleted"
  | "sender_disabled"
  | "sender_deleted";
export interface RevokedFrame {
  readonly v: FrameVersion;
  readonly type: "revoked";
  readonly id: string;
  readonly from: string;
  readonly reason: RevokeReason;
}

// spec 6.5
export interface PresenceFrame {
  readonly v: FrameVersion;
  readonly type: "presence";
  readonly id: string;
  readonly online: boolean;
  readonly at_ms: number;
}

// spec 6.7
export type GroupEventKind =
  | "member_added"
  | "member_removed"
  | "left"
  | "owner_changed"
  | "renamed"
  | "dissolved";
export interface GroupEventFrame {
  readonly v: FrameVersion;
  readonly type: "group_event";
  readonly group_id: string;
  readonly event: GroupEventKind;
  readonly endpoint_id: string;
  readonly at_ms: number;
}

// spec 6.8
export type FatalReason = "disabled" | "deleted" | "password_reset" | "protocol";
export interface FatalFrame {
  readonly v: FrameVersion;
  readonly type: "fatal";
  readonly reason: FatalReason;
}

/** Every frame the server publishes on a down topic. */
export type DownlinkFrame =
  | RespFrame
  | MsgFrame
  | ReceiptFrame
  | RevokedFrame
  | PresenceFrame
  | GroupEventFrame
  | FatalFrame;
