/** The NixMsg client (spec 9): the public API of one endpoint's connection. */
import { ClientCore } from "./core.ts";
import { GroupApi } from "./groups.ts";
import { register } from "./register.ts";
import { toDirectory, toPresenceList, toRecall, toSelf, toStatus } from "./results.ts";
import type * as T from "./types.ts";

export { CLIENT_NAME } from "./core.ts";

/**
 * A connection to a NixMsg server as one endpoint. Create it with {@link NixMsgClient.connect};
 * it connects in the background and reconnects until it is closed, logged out, taken over, or
 * refused (spec 9).
 *
 * @example
 * ```ts
 * const client = NixMsgClient.connect("wss://relay.example/mqtt", "door-1", { password });
 * client.onSession((token) => localStorage.setItem("nixmsg-token", token));
 * client.onMessage((msg) => console.log(msg.from, msg.body));
 * await client.ready();
 * await client.send("app-1", "opened");
 * ```
 */
export class NixMsgClient extends ClientCore {
  /** Group operations (spec 6.7). */
  readonly groups: GroupApi;
  #watching: { ids: readonly string[]; all: boolean } | null = null;

  private constructor(
    url: string,
    endpointId: string,
    credential: T.Credential,
    options: T.ConnectOptions,
  ) {
    super(url, endpointId, credential, options);
    this.groups = new GroupApi((type, fields) => this.request(type, fields));
  }

  /**
   * Creates a client and starts connecting: WebSocket to `<url>/mqtt` unless `transport` is
   * `"tcp"`. Add callbacks right away; messages wait (unacked) until `onMessage` has one.
   *
   * @example
   * ```ts
   * const client = NixMsgClient.connect("ws://127.0.0.1:7443/mqtt", "dev-1", {
   *   sessionToken: savedToken,
   * }, { ackMode: "manual" });
   * ```
   */
  static connect(
    url: string,
    endpointId: string,
    credential: T.Credential,
    options: T.ConnectOptions = {},
  ): NixMsgClient {
    const client = new NixMsgClient(url, endpointId, credential, options);
    client.start();
    return client;
  }

  /**
   * Registers a new endpoint over HTTP (spec 6.9); no connection needed.
   *
   * @example
   * ```ts
   * const { id, loginPassword } = await NixMsgClient.register(url, code, { name: "Door" });
   * ```
   */
  static register(
    url: string,
    registrationCode: string,
    options: T.RegisterOptions = {},
  ): Promise<T.RegisterResult> {
    return register(url, registrationCode, options);
  }

  /** Recalls a sent message (spec 6.4). */
  async recall(id: string): Promise<T.RecallResult> {
    return toRecall(await this.request("recall", { id }));
  }

  /** Status of a sent message with one page of recipients (spec 6.4). */
  async status(id: string, cursor = "", limit = 100): Promise<T.StatusResult> {
    return toStatus(await this.request("status", { id, cursor, limit }));
  }

  /** Proves the talk password of `endpointId` so later sends need none (spec 6.6). */
  async unlock(endpointId: string, talkPassword: string): Promise<void> {
    await this.request("unlock", {
      endpoint_id: endpointId,
      talk_password: talkPassword,
    });
  }

  /**
   * Acks a message in manual mode (spec 6.3). When disconnected, the ack is sent when the server
   * pushes the message again after the reconnect.
   */
  ack(message: Pick<T.Message, "from" | "id">): Promise<void> {
    const stopped = this.stopError;
    if (stopped) return Promise.reject(stopped);
    return this.receiver.ack(message);
  }

  /** Online state of up to 200 endpoints (spec 6.5). */
  async presence(ids: readonly string[]): Promise<T.PresenceInfo[]> {
    return toPresenceList(await this.request("presence.get", { ids }));
  }

  /** One page of the endpoint directory, by id; `query` matches id prefix or name (spec 6.5). */
  async directory(cursor = "", query = "", limit = 100): Promise<T.Page<T.DirectoryEntry>> {
    return toDirectory(await this.request("directory.list", { cursor, limit, query }));
  }

  /**
   * Subscribes to presence notices of `ids`, or of every endpoint with "all"; replaces the
   * previous call (spec 6.5). The server forgets it when the connection drops, so the client
   * sends it again after each reconnect.
   */
  async watchPresence(ids: readonly string[] | "all"): Promise<void> {
    const watch = ids === "all" ? { ids: [], all: true } : { ids: [...ids], all: false };
    await this.request("presence.watch", watch);
    this.#watching = watch.all || watch.ids.length > 0 ? watch : null;
  }

  protected override handshaken(first: boolean): void {
    if (!first && this.#watching) this.request("presence.watch", this.#watching).catch(() => {});
  }

  /** This endpoint's profile (spec 6.6). */
  async getSelf(): Promise<T.SelfInfo> {
    return toSelf(await this.request("self.get", {}));
  }

  /** Changes the name and/or the default delay (spec 6.6). */
  async updateSelf(update: T.SelfUpdate): Promise<void> {
    const fields: Record<string, unknown> = {};
    if (update.name !== undefined) fields.name = update.name;
    if (update.defaultDelayMs !== undefined) {
      fields.default_delay_ms = update.defaultDelayMs;
    }
    await this.request("self.update", fields);
  }

  /** Sets the talk password; "" clears it. Earlier grants stop working (spec 6.6). */
  async setTalkPassword(talkPassword: string): Promise<void> {
    await this.request("self.talk_password", { talk_password: talkPassword });
  }

  /**
   * Changes the login password (spec 6.6). The server issues a new session token, which is
   * passed to `onSession` and used for reconnects; the old one stops working.
   */
  async changeLoginPassword(oldPassword: string, newPassword: string): Promise<void> {
    const d = await this.request("self.login_password", {
      old_password: oldPassword,
      new_password: newPassword,
    });
    if (typeof d.session_token === "string") this.useToken(d.session_token);
  }

  /**
   * Invalidates the session token on the server and stops for good (spec 6.6). Pending sends
   * fail with `closed`.
   */
  async logout(): Promise<void> {
    if (this.stopError) throw this.stopError;
    // The server closes the connection after its response: that close must not reconnect.
    await this.stopWith(
      { state: "offline", reason: "logout" },
      () => this.request("self.logout", {}),
    );
  }
}
