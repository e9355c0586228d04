/** Public types of the SDK (spec 6, 9). Times are Unix milliseconds. */
import type { NixMsgError } from "./errors.ts";
import type { Transport } from "./url.ts";

/** Any JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** Where a message goes (spec 6.2). */
export interface Target {
  readonly kind: "endpoint" | "group";
  readonly id: string;
}

/** A recipient: an endpoint id, or an explicit {@link Target} (use this for groups). */
export type Recipient = string | Target;

/** How to log in: the login password, or a session token saved from {@link onSession}. */
export type Credential =
  | { readonly password: string }
  | {
    readonly sessionToken: string;
  };

/** States reported to `onConnection` (spec 9). */
export type ConnectionState =
  | "connecting"
  | "online"
  | "reconnecting"
  | "offline"
  | "kicked"
  | "auth_failed";

/** A connection state change. */
export interface ConnectionEvent {
  readonly state: ConnectionState;
  /**
   * Why: for `kicked`, `taken_over` or the `fatal` reason (`disabled`, `deleted`,
   * `password_reset`, `protocol`); for `auth_failed`, `session_invalid` or `bad_credentials`;
   * for `offline`, `closed` or `logout`; for `reconnecting`, what ended the last attempt.
   */
  readonly reason?: string;
  /** For `reconnecting`: the delay before the next attempt, in ms. */
  readonly retryInMs?: number;
  /**
   * For `kicked` and `auth_failed`: the error pending calls were failed with. For
   * `reconnecting` after a failed attempt: why it failed (`network` or `tls`, the platform's
   * error as `cause`).
   */
  readonly error?: NixMsgError;
}

/** Options of `ready()`. */
export interface ReadyOptions {
  /** Reject with `timeout` (the last connection error as `cause`) when not online by then. */
  readonly timeoutMs?: number;
}

/** Options of `close()`. */
export interface CloseOptions {
  /** How long to wait for acks, requests and sends in flight (default 5,000 ms). */
  readonly timeoutMs?: number;
}

/** Limits and facts from the handshake response (spec 6.1). */
export interface ServerInfo {
  readonly serverTimeMs: number;
  readonly serverVersion: string;
  readonly maxBodyBytes: number;
  readonly maxMetaBytes: number;
  readonly maxFrameBytes: number;
  readonly maxTtlSeconds: number;
  readonly maxScheduleSeconds: number;
  readonly ackTimeoutSeconds: number;
}

/** Options of {@link NixMsgClient.connect}. */
export interface ConnectOptions {
  /** `"websocket"` (default) or `"tcp"`; raw TCP is used only when asked for (spec 9). */
  readonly transport?: Transport;
  /** `"auto"` (default) acks after `onMessage` returns; `"manual"` acks only on `ack()`. */
  readonly ackMode?: "auto" | "manual";
  /** MQTT keep alive in seconds, 10–600 (default 30, spec 5). */
  readonly keepaliveSeconds?: number;
  /** Time for CONNECT, SUBSCRIBE and `hello` together, in ms (default 30,000, spec 9). */
  readonly connectTimeoutMs?: number;
  /** `max_receive_bytes` declared in `hello`, at least 1024 (default 786,432). */
  readonly maxReceiveBytes?: number;
  /** Sends held in memory, in flight included (default 1,000). */
  readonly queueCapacity?: number;
  /** Sends published without a response yet (default 100). */
  readonly maxInFlight?: number;
  /** Received messages remembered for deduplication (default 10,000). */
  readonly dedupCapacity?: number;
  /** How long a request other than `send` waits for its response, in ms (default 30,000). */
  readonly requestTimeoutMs?: number;
  /** MQTT protocol version: 5 (default) or 4 (3.1.1, only for old brokers in tests). */
  readonly mqttVersion?: 5 | 4;
  /** TLS settings for Node and Deno (a private CA, or a test certificate). */
  readonly tls?: {
    readonly ca?: string | Uint8Array;
    readonly rejectUnauthorized?: boolean;
  };
  /** Called with errors thrown by application callbacks; default `console.error`. */
  readonly onCallbackError?: (error: unknown) => void;
}

/** Options of {@link NixMsgClient.send} (spec 6.2, 9). */
export interface SendOptions {
  /** When to send, local clock; converted to server time once, at the call. */
  readonly sendAt?: Date | number;
  /** Delay in ms; 0 sends at once. Without `sendAt` and `delay` the endpoint default applies. */
  readonly delay?: number;
  /** Keep the message for an offline recipient (default false). */
  readonly keep?: boolean;
  /** Seconds to keep it when `keep` is true (server default 86,400). */
  readonly ttl?: number;
  /** Ask for receipts (default true). */
  readonly receipt?: boolean;
  /** The recipient's talk password, when needed (spec 6.6). */
  readonly talkPassword?: string;
  /** Content type; defaults to text/plain for strings, application/octet-stream for bytes. */
  readonly contentType?: string;
  /** Application metadata, at most `max_meta_bytes` serialized. */
  readonly meta?: JsonObject;
  /** The message id; default a new UUIDv7. Reusing an id makes the send idempotent. */
  readonly id?: string;
}

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

/** The server's answer to `send` (spec 6.2). */
export interface SendResult {
  readonly id: string;
  readonly sendAtMs: number;
  readonly state: MessageState;
}

/** The answer to `recall` (spec 6.4). */
export interface RecallResult {
  readonly result: "recalled" | "partial" | "failed";
  readonly recalled: number;
  readonly accepted: number;
  readonly other: number;
}

/** One recipient's line in a {@link StatusResult}. */
export interface DeliveryStatus {
  readonly endpointId: string;
  readonly state: DeliveryState;
  readonly reason: string;
}

/** The answer to `status` (spec 6.4): the message and one page of recipients. */
export interface StatusResult {
  readonly id: string;
  readonly state: MessageState;
  /** Why the message ended before dispatch ("" when it was dispatched normally, spec 7.1). */
  readonly reason: string;
  readonly sendAtMs: number;
  /** Deliveries per state. */
  readonly counts: Partial<Record<DeliveryState, number>>;
  readonly items: readonly DeliveryStatus[];
  /** Pass to `status` for the next page; "" when this was the last. */
  readonly nextCursor: string;
}

/** A received message (spec 6.3). */
export interface Message {
  readonly id: string;
  readonly from: string;
  readonly to: Target;
  /** Text for `utf8` bodies, bytes for `base64` bodies. */
  readonly body: string | Uint8Array;
  readonly contentType: string;
  readonly meta: JsonObject;
  readonly sendAtMs: number;
}

/** A receipt: what happened to a sent message at one recipient (spec 6.4). */
export interface Receipt {
  readonly receiptId: string;
  readonly id: string;
  /** "" for a message-level rejection. */
  readonly endpointId: string;
  readonly state: "accepted" | "expired" | "dropped" | "rejected";
  readonly reason: string;
  readonly atMs: number;
}

/**
 * A message handed to the application was withdrawn before it was acked (spec 6.4), or its
 * `ack` found the delivery already final (`reason` is then that state, spec 9).
 */
export interface Revoked {
  readonly id: string;
  readonly from: string;
  readonly reason: string;
}

/** An online or offline notice (spec 6.5). */
export interface PresenceEvent {
  readonly id: string;
  readonly online: boolean;
  readonly atMs: number;
}

/** A group change (spec 6.7). */
export interface GroupEvent {
  readonly groupId: string;
  readonly event:
    | "member_added"
    | "member_removed"
    | "left"
    | "owner_changed"
    | "renamed"
    | "dissolved";
  readonly endpointId: string;
  readonly atMs: number;
}

/** Options of {@link NixMsgClient.register} (spec 6.9). */
export interface RegisterOptions {
  /** The endpoint id; empty lets the server choose one. */
  readonly id?: string;
  /** The login password; empty lets the server generate one (returned once). */
  readonly loginPassword?: string;
  readonly name?: string;
  readonly talkPassword?: string;
  /** The fetch to use (default `globalThis.fetch`). */
  readonly fetch?: typeof fetch;
}

/** The answer to `register`. */
export interface RegisterResult {
  readonly id: string;
  /** Only when the server generated it; shown this once, never stored by the SDK. */
  readonly loginPassword?: string;
}

/** The answer to `self.get` (spec 6.6). */
export interface SelfInfo {
  readonly id: string;
  readonly name: string;
  readonly source: string;
  readonly defaultDelayMs: number;
  readonly talkPasswordSet: boolean;
  readonly createdAtMs: number;
}

/** Fields `updateSelf` can change. */
export interface SelfUpdate {
  readonly name?: string;
  readonly defaultDelayMs?: number;
}

/** One entry of `presence` (spec 6.5). */
export interface PresenceInfo {
  readonly id: string;
  readonly online: boolean;
  readonly sinceMs: number | null;
  /** True when the id is unknown. */
  readonly notFound: boolean;
}

/** One entry of `directory` (spec 6.5). */
export interface DirectoryEntry {
  readonly id: string;
  readonly name: string;
  readonly online: boolean;
  readonly onlineSinceMs: number | null;
  readonly offlineSinceMs: number | null;
  readonly talkPasswordSet: boolean;
}

/** A page of results. */
export interface Page<T> {
  readonly items: readonly T[];
  /** Pass back for the next page; "" when this was the last. */
  readonly nextCursor: string;
}

/** A member to add to a group, with that member's talk password when it has one. */
export interface GroupMemberInput {
  readonly id: string;
  readonly talkPassword?: string;
}

/** A member that could not be added, with the reason code (spec 6.7). */
export interface GroupMemberFailure {
  readonly id: string;
  readonly code: string;
}

/** The answer to `createGroup` and `addMembers`. */
export interface GroupChange {
  readonly groupId: string;
  /** Members that were added by this call. */
  readonly added: readonly string[];
  /** Members that were not added, with the reason code; the others were. */
  readonly failed: readonly GroupMemberFailure[];
}

/** A group in `listGroups`. */
export interface GroupSummary {
  readonly id: string;
  readonly name: string;
  readonly ownerId: string;
  readonly memberCount: number;
}

/** A member in `getGroup`. */
export interface GroupMember {
  readonly id: string;
  readonly name: string;
  readonly online: boolean;
}

/** The answer to `getGroup`: the group and one page of members. */
export interface GroupDetails extends GroupSummary {
  readonly members: Page<GroupMember>;
}
