/**
 * One logical connection to the server and its reconnect loop (spec 5, 6.1, 9 "连接"). MQTT.js
 * runs with `reconnectPeriod: 0`; this class decides when and how to connect again.
 */
// Default import: the only form MQTT.js exposes in Node ESM, CJS, Deno and its browser bundle.
import mqtt, { type IClientOptions, type MqttClient } from "mqtt";
import { Backoff } from "./backoff.ts";
import { type NixMsgError, transportError } from "./errors.ts";
import { tuneStream } from "./transport.ts";
import { Outbox } from "./outbox.ts";
import type { Credential } from "./types.ts";
import type { HelloData, InboundFrame } from "./wire.ts";

/** MQTT 5 DISCONNECT reason: another connection took the session over (spec 5). */
const SESSION_TAKEN_OVER = 0x8e;
/** CONNACK codes that end reconnecting (spec 9 step 6): MQTT 5 and MQTT 3.1.1. */
const AUTH_REFUSED_V5 = new Set([0x86, 0x87, 0x8a]);
const AUTH_REFUSED_V4 = new Set([4, 5]);
/** Longest wait for a clean MQTT close before the socket is destroyed. */
const CLOSE_WAIT_MS = 2000;
/** Online this long resets the backoff (spec 9 step 4). */
const STABLE_MS = 60_000;

/** Settings of a {@link Link}. */
export interface LinkOptions {
  readonly url: string;
  readonly endpointId: string;
  readonly credential: Credential;
  readonly keepaliveSeconds: number;
  readonly connectTimeoutMs: number;
  readonly maxReceiveBytes: number;
  readonly mqttVersion: 5 | 4;
  readonly clientName: string;
  readonly tls?: {
    readonly ca?: string | Uint8Array;
    readonly rejectUnauthorized?: boolean;
  };
  readonly nextRid: () => string;
  readonly random?: () => number;
}

/** Why the link stopped for good. */
export interface StopCause {
  readonly state: "kicked" | "auth_failed" | "offline";
  readonly reason: string;
}

/** What a {@link Link} reports to its owner. */
export interface LinkEvents {
  /** `connecting`, `online` or `reconnecting`; stops are reported by `stopped` only. */
  state(
    state: "connecting" | "online" | "reconnecting",
    reason?: string,
    retryInMs?: number,
    error?: NixMsgError,
  ): void;
  /** The handshake succeeded. `token` is the new session token of a password login. */
  online(hello: HelloData, offsetMs: number, token: string | null): void;
  /** A downlink frame other than the `hello` response and `fatal`, while online. */
  error?: NixMsgError;
  frame(frame: InboundFrame): void;
  /** An online connection was lost; requests in flight will get no response. */
  down(): void;
  /** The link stopped for good; it will not connect again. */
  stopped(cause: StopCause): void;
}

/**
 * Connects, subscribes to the down topic, performs `hello`, and reconnects with backoff until it
 * is stopped: by `fatal`, a 0x8E takeover, an authentication refusal, or the owner.
 */
export class Link {
  readonly #o: LinkOptions;
  readonly #events: LinkEvents;
  readonly #backoff: Backoff;
  #password: string | null;
  #token: string | null;
  #client: MqttClient | null = null;
  #online = false;
  #onlineSince = 0;
  #stopped = false;
  #closeMeans: StopCause | null = null;
  #attemptTimer: ReturnType<typeof setTimeout> | undefined;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #ended: Promise<void> = Promise.resolve();
  /** The error of the last failed connection attempt, until a handshake succeeds. */
  #lastError: NixMsgError | null = null;
  /** The error of the current attempt, reported with its `reconnecting`. */
  #attemptError: NixMsgError | null = null;

  constructor(options: LinkOptions, events: LinkEvents) {
    this.#o = options;
    this.#events = events;
    this.#backoff = new Backoff({ random: options.random });
    this.#password = "password" in options.credential ? options.credential.password : null;
    this.#token = "sessionToken" in options.credential ? options.credential.sessionToken : null;
  }

  /** True between a successful `hello` and the loss of that connection. */
  get online(): boolean {
    return this.#online;
  }

  /** Why the last connection attempt failed (`network`, `tls`); null once online. */
  get lastError(): NixMsgError | null {
    return this.#lastError;
  }

  /** True once the link stopped for good. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** The session token reconnects use, if any. */
  get sessionToken(): string | null {
    return this.#token;
  }

  /** Replaces the session token (after `self.login_password`, spec 6.6). */
  setSessionToken(token: string): void {
    this.#token = token;
    this.#password = null;
  }

  /** Starts the first connection attempt. */
  start(): void {
    if (this.#stopped || this.#client) return;
    this.#events.state("connecting");
    this.#open();
  }

  /** Publishes a frame on the up topic, in order; false when not online. */
  publish(json: string): boolean {
    if (!this.#online || !this.#client) return false;
    this.#outbox.push(json);
    return true;
  }

  /** Frames waiting for their turn; see {@link Outbox}. */
  #outbox = new Outbox((json) => {
    this.#client?.publish(`nix/c/${this.#o.endpointId}/up`, json, { qos: 1 }, () => {});
  });

  /** When the current connection closes, stop with `cause` instead of reconnecting. */
  stopOnClose(cause: StopCause): void {
    this.#closeMeans = cause;
  }

  /**
   * Stops for good and resolves once the MQTT client has ended. `force` closes the socket
   * without waiting for a polite MQTT close (what was in flight is given up).
   */
  stop(cause: StopCause, force = false): Promise<void> {
    if (this.#stopped) return this.#ended;
    this.#stopped = true;
    clearTimeout(this.#attemptTimer);
    clearTimeout(this.#retryTimer);
    this.#outbox.clear();
    const client = this.#client;
    const wasOnline = this.#online;
    this.#client = null;
    this.#online = false;
    if (client) {
      // A clean close sends DISCONNECT; after a refusal, or before a handshake, there is
      // nothing to be polite to.
      const hard = force || cause.state !== "offline" || !wasOnline;
      this.#ended = new Promise((resolve) => {
        // A graceful end waits for PUBACKs; a stalled connection must not hang close().
        const timer = setTimeout(() => {
          client.stream?.destroy();
          resolve();
        }, CLOSE_WAIT_MS);
        client.end(hard, {}, () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    this.#events.stopped(cause);
    return this.#ended;
  }

  #open(): void {
    const o = this.#o;
    const usingToken = this.#token !== null;
    const options: IClientOptions = {
      clientId: o.endpointId,
      username: o.endpointId,
      password: this.#token ?? this.#password ?? "",
      protocolVersion: o.mqttVersion,
      // spec 9 step 2: Clean Start and session expiry 0 on every connection, reconnects too.
      clean: true,
      reconnectPeriod: 0,
      connectTimeout: o.connectTimeoutMs,
      keepalive: o.keepaliveSeconds,
      resubscribe: false,
      ...(o.mqttVersion === 5 ? { properties: { sessionExpiryInterval: 0 } } : {}),
    };
    if (o.tls?.ca !== undefined) {
      options.ca = o.tls.ca as NonNullable<IClientOptions["ca"]>;
    }
    if (o.tls?.rejectUnauthorized !== undefined) {
      options.rejectUnauthorized = o.tls.rejectUnauthorized;
    }
    const client = mqtt.connect(o.url, options);
    // Node and Deno: TCP_NODELAY on mqtt(s)://, one WebSocket frame per packet on ws(s)://.
    // MQTT.js built the stream synchronously and the CONNECT packet is still corked in it.
    tuneStream(client.stream, o.url);
    this.#client = client;
    this.#attemptError = null;
    let helloRid = "";
    let helloSentAt = 0;
    let dropReason = "connection_closed";
    // spec 9 step 3: CONNECT, SUBSCRIBE and hello within the connect timeout (30 s).
    this.#attemptTimer = setTimeout(() => this.#drop(client, "timeout"), o.connectTimeoutMs);

    client.on("connect", () => {
      client.subscribe(`nix/c/${o.endpointId}/down`, { qos: 1 }, (err, granted) => {
        if (client !== this.#client) return;
        if (err || !granted || granted.some((g) => g.qos >= 0x80)) {
          this.#drop(client, "subscribe_failed");
          return;
        }
        helloRid = o.nextRid();
        helloSentAt = Date.now();
        const hello = {
          v: 1,
          type: "hello",
          rid: helloRid,
          max_receive_bytes: o.maxReceiveBytes,
          client: o.clientName,
        };
        client.publish(
          `nix/c/${o.endpointId}/up`,
          JSON.stringify(hello),
          {
            qos: 1,
          },
          () => {},
        );
      });
    });
    client.on("message", (_topic, payload) => {
      if (client !== this.#client) return;
      let frame: InboundFrame;
      try {
        frame = JSON.parse(new TextDecoder().decode(payload)) as InboundFrame;
      } catch {
        return;
      }
      if (typeof frame !== "object" || frame === null || typeof frame.type !== "string") return;
      if (frame.type === "fatal") {
        // spec 6.8: disabled, deleted, password_reset, protocol -> stop reconnecting.
        void this.stop({
          state: "kicked",
          reason: String(frame.reason ?? "fatal"),
        });
      } else if (frame.type === "resp" && helloRid !== "" && frame.rid === helloRid) {
        helloRid = "";
        this.#handshaken(client, frame, helloSentAt);
      } else if (this.#online) {
        this.#events.frame(frame);
      }
    });
    client.on("error", (err) => {
      if (client !== this.#client) return;
      const code = (err as { code?: unknown }).code;
      const refused = o.mqttVersion === 5 ? AUTH_REFUSED_V5 : AUTH_REFUSED_V4;
      if (typeof code === "number" && refused.has(code)) {
        // spec 9 step 6: which credential was refused decides the reason.
        void this.stop({
          state: "auth_failed",
          reason: usingToken ? "session_invalid" : "bad_credentials",
        });
        return;
      }
      dropReason = typeof code === "number" ? `connack_0x${code.toString(16)}` : "network_error";
      if (typeof code !== "number") this.#attemptError = transportError(err);
      // Other CONNACK refusals (0x88, 0x89 …) leave the socket open; network errors close it.
      if (typeof code === "number") this.#drop(client, dropReason);
    });
    client.on("disconnect", (packet) => {
      if (client !== this.#client) return;
      const reasonCode = packet.reasonCode ?? 0;
      if (reasonCode === SESSION_TAKEN_OVER) {
        void this.stop({ state: "kicked", reason: "taken_over" });
        return;
      }
      dropReason = `disconnect_0x${reasonCode.toString(16)}`;
    });
    client.on("close", () => this.#drop(client, dropReason));
  }

  #handshaken(client: MqttClient, frame: InboundFrame, sentAt: number): void {
    if (frame.ok !== true) {
      const code = (frame.error as { code?: string } | undefined)?.code ?? "hello_failed";
      this.#drop(client, code);
      return;
    }
    clearTimeout(this.#attemptTimer);
    this.#lastError = null;
    const hello = frame.data as HelloData;
    const now = Date.now();
    // spec 9 "时间": offset = server_time_ms - (hello sent + response received) / 2.
    const offset = hello.server_time_ms - (sentAt + now) / 2;
    const token = typeof hello.session_token === "string" ? hello.session_token : null;
    if (token !== null) this.setSessionToken(token);
    this.#online = true;
    this.#onlineSince = now;
    this.#events.online(hello, offset, token);
    if (!this.#stopped) this.#events.state("online");
  }

  #drop(client: MqttClient, reason: string): void {
    if (client !== this.#client) return;
    this.#client = null;
    clearTimeout(this.#attemptTimer);
    client.end(true);
    const wasOnline = this.#online;
    this.#online = false;
    // Requests still queued here were never sent; the owner re-sends unanswered ones on the
    // next connection (spec 9 发送).
    this.#outbox.clear();
    if (wasOnline) this.#events.down();
    if (this.#stopped) return;
    if (this.#closeMeans) {
      void this.stop(this.#closeMeans);
      return;
    }
    if (wasOnline && Date.now() - this.#onlineSince >= STABLE_MS) {
      this.#backoff.reset();
    }
    const delay = this.#backoff.next();
    const error = this.#attemptError ?? undefined;
    this.#attemptError = null;
    if (error) this.#lastError = error;
    else if (!wasOnline) {
      this.#lastError = transportError(
        new Error(`Connection ended: ${reason}`),
      );
    }
    this.#events.state("reconnecting", reason, delay, error);
    this.#retryTimer = setTimeout(() => {
      if (!this.#stopped) this.#open();
    }, delay);
  }
}
