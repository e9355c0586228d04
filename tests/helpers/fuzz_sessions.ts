// Logged-in MQTT sessions for the JSON phase of the fuzz test: a small pool of real MQTT.js
// clients past `hello`, each used by one input at a time, replaced when the server closes one.
import { isErrorCode } from "../../server/protocol/errors.ts";
import { type Frame, TestClient } from "./client.ts";
import type { JsonInput } from "./fuzz_json.ts";
import type { Outcome } from "./fuzz_target.ts";

/** How long an up-topic frame may wait for its `resp` (spec 6: every request is answered). */
const RESP_WAIT_MS = 5000;

/** A pool of sessions over endpoints `ids` (the same password), alternating TCP and WebSocket. */
export class SessionPool {
  readonly #ids: readonly string[];
  readonly #password: string;
  readonly #port: () => number;
  readonly #idle: TestClient[] = [];
  readonly #all = new Set<TestClient>();
  #turn = 0;
  /** Sessions the server closed while an input ran (counted, not a defect by itself). */
  closedByServer = 0;

  constructor(ids: readonly string[], password: string, port: () => number) {
    this.#ids = ids;
    this.#password = password;
    this.#port = port;
  }

  /** Logs in with the next endpoint that accepts the password; throws when none does. */
  async #open(): Promise<TestClient> {
    for (let attempt = 0; attempt < this.#ids.length; attempt++) {
      const id = this.#ids[this.#turn++ % this.#ids.length];
      if ([...this.#all].some((c) => c.id === id && !c.closed)) continue;
      const port = this.#port();
      const url = this.#turn % 2 === 0 ? `mqtt://127.0.0.1:${port}` : `ws://127.0.0.1:${port}/mqtt`;
      const c = await TestClient.connect(url, id, this.#password);
      if (!c.connected) {
        await c.close();
        continue;
      }
      try {
        await c.handshake();
      } catch {
        await c.close();
        continue;
      }
      this.#all.add(c);
      return c;
    }
    throw new Error("No fuzz endpoint accepts a login any more");
  }

  /** Publishes `input` on a session's up topic and waits for its `resp` or the session's end. */
  async run(input: JsonInput): Promise<Outcome> {
    let c = this.#idle.pop();
    while (c !== undefined && c.closed) {
      this.#all.delete(c);
      await c.close();
      c = this.#idle.pop();
    }
    if (c === undefined) {
      try {
        c = await this.#open();
      } catch {
        // Nothing accepts a login: the server is gone (or every endpoint is locked).
        return { reply: "", refused: true };
      }
    }
    const before = c.frames.length;
    const resps = () => c.frames.slice(before).filter((f: Frame) => f.type === "resp");
    c.mqtt.publish(`nix/c/${c.id}/up`, input.payload as unknown as string, { qos: 1 }, () => {});
    let problem: string | undefined;
    try {
      await c.until(() => resps().length > 0 || c.closed, "resp", RESP_WAIT_MS);
    } catch {
      problem = `no resp and no disconnect within ${RESP_WAIT_MS} ms`;
    }
    const got = resps();
    for (const r of got) {
      const code = (r.error as { code?: unknown } | undefined)?.code;
      if (r.ok !== true && !(typeof code === "string" && isErrorCode(code))) {
        problem = `resp with an unknown error: ${JSON.stringify(r).slice(0, 200)}`;
      }
    }
    const closed = c.closed;
    if (closed) {
      this.closedByServer++;
      this.#all.delete(c);
      await c.close();
    } else {
      this.#idle.push(c);
    }
    const tag = got.length === 0
      ? (closed ? "closed" : "none")
      : `resp ${got[0].ok ? "ok" : "error"}`;
    return { reply: JSON.stringify(got), problem, tag };
  }

  /** Closes every session. */
  async close(): Promise<void> {
    for (const c of this.#all) await c.close();
    this.#all.clear();
    this.#idle.length = 0;
  }
}
