// One benchmark client's login (login_storm.ts, idle_connections.ts): MQTT 5 over the given URL,
// subscribe to the down topic, send `hello`, resolve once it is answered.
import mqtt, { type MqttClient } from "mqtt";

/** A client that completed `hello`, with its times since `t0` and its session token. */
export interface LoggedIn {
  c: MqttClient;
  connackMs: number;
  helloMs: number;
  /** The session token from the `hello` answer; "" when it carried none. */
  token: string;
}

/**
 * Connects `id` with `secret` (a password or a session token), subscribes to its down topic and
 * says hello. Rejects on any error, on a refused `hello`, or when no answer came in `timeoutMs`;
 * the client is then closed. `t0` is when the caller's clock starts (default: now).
 */
export function helloLogin(
  url: string,
  id: string,
  secret: string,
  opts: { timeoutMs: number; t0?: number; keepalive?: number },
): Promise<LoggedIn> {
  const t0 = opts.t0 ?? performance.now();
  return new Promise((resolve, reject) => {
    const c = mqtt.connect(url, {
      clientId: id,
      username: id,
      password: secret,
      protocolVersion: 5,
      clean: true,
      reconnectPeriod: 0,
      connectTimeout: opts.timeoutMs,
      keepalive: opts.keepalive ?? 60,
      properties: { sessionExpiryInterval: 0 },
    });
    let connackMs = 0;
    let settled = false;
    const timer = setTimeout(() => fail("no hello answer in time"), opts.timeoutMs);
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      c.end(true);
      reject(new Error(`${id}: ${why}`));
    };
    c.once("error", (err) => fail(err.message));
    c.once("close", () => fail("closed"));
    c.once("connect", () => {
      connackMs = performance.now() - t0;
      c.subscribeAsync(`nix/c/${id}/down`, { qos: 1 }).then(() => {
        c.publish(`nix/c/${id}/up`, '{"v":1,"type":"hello","rid":"h"}', { qos: 1 });
      }, (err) => fail(String(err)));
    });
    c.on("message", (_topic, payload) => {
      if (settled) return;
      const frame = JSON.parse(new TextDecoder().decode(payload));
      if (frame.rid !== "h") return;
      if (frame.ok !== true) return fail(`hello failed: ${JSON.stringify(frame.error)}`);
      settled = true;
      clearTimeout(timer);
      c.removeAllListeners("close");
      c.removeAllListeners("error");
      c.removeAllListeners("message");
      c.on("error", () => {});
      resolve({
        c,
        connackMs,
        helloMs: performance.now() - t0,
        token: frame.data?.session_token ?? "",
      });
    });
  });
}
