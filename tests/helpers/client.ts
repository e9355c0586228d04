import mqtt, { type IClientOptions, type MqttClient } from "mqtt";

const WAIT_MS = 8000;

/** A downlink frame as JSON. */
export type Frame = Record<string, unknown> & { type: string };

/** What ended a connection attempt. */
export interface ConnackInfo {
  reasonCode: number | null;
  sessionPresent?: boolean;
  properties?: Record<string, unknown>;
}

/**
 * A raw protocol client over MQTT.js (the way a device without an SDK talks, spec 10): it
 * subscribes to its down topic, records every frame, and matches responses by `rid`.
 */
export class TestClient {
  readonly id: string;
  readonly mqtt: MqttClient;
  readonly frames: Frame[] = [];
  connack: ConnackInfo | null = null;
  disconnectPacket: { reasonCode?: number } | null = null;
  closed = false;
  #rid = 0;
  #watchers = new Set<() => void>();

  private constructor(id: string, client: MqttClient) {
    this.id = id;
    this.mqtt = client;
    client.on("message", (_topic, payload) => {
      this.frames.push(JSON.parse(new TextDecoder().decode(payload)) as Frame);
      this.#notify();
    });
    client.on("disconnect", (packet) => {
      this.disconnectPacket = { reasonCode: packet.reasonCode };
      this.#notify();
    });
    client.on("close", () => {
      this.closed = true;
      this.#notify();
    });
    client.on("error", () => this.#notify());
  }

  #notify(): void {
    for (const w of [...this.#watchers]) w();
  }

  /** Calls `fn` on every client event (a frame, a disconnect, the close); returns its removal. */
  watch(fn: () => void): () => void {
    this.#watchers.add(fn);
    return () => this.#watchers.delete(fn);
  }

  /** Waits until `check()` is true, re-checking on every client event. */
  until(check: () => boolean, what = "condition", timeoutMs = WAIT_MS): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#watchers.delete(w);
        reject(new Error(`${this.id}: timed out waiting for ${what}`));
      }, timeoutMs);
      const w = () => {
        if (!check()) return;
        clearTimeout(timer);
        this.#watchers.delete(w);
        resolve();
      };
      this.#watchers.add(w);
    });
  }

  /**
   * Connects and waits for the CONNACK or the close. Never throws for a refusal: inspect
   * `connack` (null when the server closed without one) and `closed`.
   */
  static async connect(
    url: string,
    id: string,
    password: string,
    opts: Partial<IClientOptions> = {},
  ): Promise<TestClient> {
    const client = mqtt.connect(url, {
      clientId: id,
      username: id,
      password,
      protocolVersion: 5,
      clean: true,
      reconnectPeriod: 0,
      connectTimeout: WAIT_MS,
      properties: { sessionExpiryInterval: 0 },
      ...opts,
    });
    // MQTT.js leaves Nagle's algorithm on for mqtt:// and mqtts://, so a round trip in which the
    // client writes twice (PUBACK, then the next PUBLISH) waits ~40 ms for a delayed ACK.
    // Devices and the Go SDK disable it; so do the tests.
    (client.stream as { setNoDelay?: (on: boolean) => void } | undefined)?.setNoDelay?.(true);
    const c = new TestClient(id, client);
    client.on("connect", (packet) => {
      c.connack = {
        reasonCode: packet.reasonCode ?? packet.returnCode ?? 0,
        sessionPresent: packet.sessionPresent,
        properties: packet.properties as Record<string, unknown> | undefined,
      };
      c.#notify();
    });
    client.on("error", (err) => {
      const code = (err as { code?: number }).code;
      if (typeof code === "number" && c.connack === null) {
        c.connack = { reasonCode: code };
      }
      c.#notify();
    });
    await c.until(() => c.connack !== null || c.closed, "CONNACK or close");
    return c;
  }

  /**
   * Waits until the server closed the connection and returns the reason code of its DISCONNECT
   * (undefined when none came within the wait). MQTT.js handles the packets of one read one per
   * tick, so its stream can report the close before the DISCONNECT (and the frames before it)
   * have been handled: never read `disconnectPacket` right after `closed`.
   */
  async closedWith(what: string): Promise<number | undefined> {
    await this.until(() => this.closed && this.disconnectPacket !== null, what).catch(() => {});
    if (!this.closed) throw new Error(`${this.id}: not closed: ${what}`);
    return this.disconnectPacket?.reasonCode;
  }

  get connected(): boolean {
    return this.connack?.reasonCode === 0 && !this.closed;
  }

  get downTopic(): string {
    return `nix/c/${this.id}/down`;
  }

  /** Subscribes to the own down topic. */
  async subscribe(): Promise<void> {
    await this.mqtt.subscribeAsync(this.downTopic, { qos: 1 });
  }

  /** Publishes raw bytes (or a frame object) to the own up topic. */
  async publishRaw(payload: string | Uint8Array, topic = `nix/c/${this.id}/up`): Promise<void> {
    await this.mqtt.publishAsync(topic, payload as string, { qos: 1 });
  }

  nextRid(): string {
    return `r${++this.#rid}`;
  }

  /** Sends a request frame (adds v and rid) and resolves with its `resp` frame. */
  async request(frame: Record<string, unknown>): Promise<Frame> {
    const rid = (frame.rid as string | undefined) ?? this.nextRid();
    await this.publishRaw(JSON.stringify({ v: 1, rid, ...frame }));
    return await this.waitFrame((f) => f.type === "resp" && f.rid === rid, `resp ${rid}`);
  }

  /** Resolves with the first recorded frame matching `pred` (already received or later). */
  async waitFrame(pred: (f: Frame) => boolean, what = "frame"): Promise<Frame> {
    let found: Frame | undefined;
    await this.until(() => (found = this.frames.find(pred)) !== undefined, what);
    return found!;
  }

  /** Subscribes and completes the handshake; returns the hello `resp`. */
  async handshake(maxReceiveBytes?: number): Promise<Frame> {
    await this.subscribe();
    const resp = await this.request({
      type: "hello",
      client: "test/0",
      ...(maxReceiveBytes ? { max_receive_bytes: maxReceiveBytes } : {}),
    });
    if (resp.ok !== true) throw new Error(`hello failed: ${JSON.stringify(resp)}`);
    return resp;
  }

  async close(): Promise<void> {
    if (this.closed) {
      this.mqtt.end(true);
      return;
    }
    await new Promise<void>((resolve) => this.mqtt.end(true, {}, () => resolve()));
    await this.until(() => this.closed, "close").catch(() => {});
  }
}

/** Connects, handshakes and returns the client plus its session token (if any). */
export async function online(
  url: string,
  id: string,
  password: string,
  opts: Partial<IClientOptions> = {},
): Promise<{ client: TestClient; token: string | null }> {
  const client = await TestClient.connect(url, id, password, opts);
  if (!client.connected) {
    throw new Error(`${id} could not connect: ${JSON.stringify(client.connack)}`);
  }
  const hello = await client.handshake();
  const data = hello.data as Record<string, unknown>;
  return { client, token: (data.session_token as string | undefined) ?? null };
}
