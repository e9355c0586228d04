/**
 * A TCP proxy in front of the server that a test can cut, stall or close, to simulate network
 * failures with real sockets. It forwards WebSocket and raw MQTT alike.
 */
import net from "node:net";
import { Events } from "./events.ts";

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  held: Buffer[];
}

export class Proxy {
  /** One entry per accepted client connection. */
  readonly accepted = new Events<number>();
  readonly #server: net.Server;
  readonly #target: { host: string; port: number };
  readonly #pairs = new Set<Pair>();
  #refuse = false;
  #holdDown = false;

  private constructor(server: net.Server, target: { host: string; port: number }) {
    this.#server = server;
    this.#target = target;
  }

  /** Starts a proxy on 127.0.0.1:0 forwarding to `target` ("host:port"). */
  static async start(target: string): Promise<Proxy> {
    const server = net.createServer();
    const proxy = new Proxy(server, parseTarget(target));
    await listenLocal(server, (s) => proxy.#accept(s));
    return proxy;
  }

  /** "127.0.0.1:port" of the proxy. */
  get address(): string {
    const a = this.#server.address() as net.AddressInfo;
    return `127.0.0.1:${a.port}`;
  }

  /** New connections are closed at once while true. */
  set refuse(value: boolean) {
    this.#refuse = value;
  }

  /** Server-to-client bytes are held back (not forwarded) while true: responses get "lost". */
  set holdDown(value: boolean) {
    this.#holdDown = value;
  }

  /** Destroys every open connection; held bytes are dropped. */
  cut(): void {
    for (const p of this.#pairs) {
      p.held = [];
      p.client.destroy();
      p.upstream.destroy();
    }
    this.#pairs.clear();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }

  #accept(client: net.Socket): void {
    this.accepted.push(Date.now());
    if (this.#refuse) {
      client.destroy();
      return;
    }
    const upstream = net.connect(this.#target);
    const pair: Pair = { client, upstream, held: [] };
    this.#pairs.add(pair);
    const end = () => {
      this.#pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("data", (d) => upstream.write(d));
    upstream.on("data", (d) => {
      if (this.#holdDown) pair.held.push(d);
      else client.write(d);
    });
    client.on("close", end);
    upstream.on("close", end);
    client.on("error", end);
    upstream.on("error", end);
  }
}

/** Splits "host:port" (the host may itself contain colons). */
export function parseTarget(target: string): { host: string; port: number } {
  const i = target.lastIndexOf(":");
  return { host: target.slice(0, i), port: Number(target.slice(i + 1)) };
}

/** Listens on 127.0.0.1:0 and hands every accepted socket to `accept`. */
export async function listenLocal(
  server: net.Server,
  accept: (socket: net.Socket) => void,
): Promise<void> {
  server.on("connection", accept);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
}
