/**
 * The live inbox of an endpoint (issue 32): a Server-Sent Events stream of the frames the server
 * pushes to it, its coming online and going offline, read-only. It never acks or consumes: the
 * frames are copies taken on their way to the device (server/app/inbox_tap.ts).
 *
 * Bodies and meta are withheld from the stream (spec 8). A message's body is kept in memory for
 * the stream that saw it (bounded), and is sent only when the admin opens that one message, as
 * plain text, an audited request.
 */
import type { ServerResponse } from "node:http";
import type { TappedEvent } from "../app/inbox_tap.ts";
import type { AdminDeps } from "./deps.ts";
import type { AdminRequest } from "./guards.ts";
import { type FrameBody, frameView } from "./inbox_view.ts";
import type { InboxEvents } from "./inbox_schema.ts";
import { httpFail } from "./request.ts";

/** Streams open at once over every endpoint; one more answers `busy`. */
export const MAX_INBOX_STREAMS = 16;
/** Bodies kept per stream, in characters; the oldest go first. */
const BODY_BUDGET = 4 * 1024 * 1024;
/** A client this far behind loses events (counted in a `lost` event) rather than memory. */
const MAX_BUFFERED = 1024 * 1024;
/** A comment line this often keeps proxies and the socket idle timer from closing the stream. */
const HEARTBEAT_MS = 15_000;

interface Stream {
  readonly endpointId: string;
  readonly bodies: Map<number, FrameBody & { id: string }>;
  budget: number;
}

function send<E extends keyof InboxEvents>(
  res: ServerResponse,
  event: E,
  data: InboxEvents[E],
): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

/** The inbox handlers. */
export function inboxHandlers(d: AdminDeps) {
  const { app } = d;
  const streams = new Map<string, Stream>();

  /** GET /api/admin/endpoints/{id}/inbox: `text/event-stream` until the client goes. */
  async function stream(req: AdminRequest): Promise<void> {
    const id = req.ctx.params.id;
    if (!(await app.store.query("endpoint.exists", { id }))) {
      throw httpFail("not_found", "端不存在");
    }
    if (streams.size >= MAX_INBOX_STREAMS) throw httpFail("busy", "同时打开的收件箱太多");
    const streamId = crypto.randomUUID();
    const s: Stream = { endpointId: id, bodies: new Map(), budget: BODY_BUDGET };
    streams.set(streamId, s);
    const { res } = req.ctx;
    res.writeHead(200, {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
      "X-Accel-Buffering": "no",
    });
    res.flushHeaders();
    send(res, "hello", { stream: streamId, endpoint_id: id, online: app.presence.isOnline(id) });

    let n = 0;
    let lost = 0;
    // The stream outlives its request: it ends once the session ends or the token is disabled
    // or deleted (spec 8 "停用或删除后立即失效"), checked before each event and each heartbeat.
    // The check reads the store, so events go through one chain and keep their order.
    let chain: Promise<void> = Promise.resolve();
    let ended = false;
    const allowed = async () => {
      if (ended) return false;
      if (req.actor !== null && await d.auth.stillValid(req.actor).catch(() => false)) return true;
      ended = true;
      res.end();
      return false;
    };
    const later = (fn: () => void) => {
      chain = chain.then(async () => {
        if (await allowed()) fn();
      });
    };
    const onEvent = (e: TappedEvent) => later(() => deliver(e));
    const deliver = (e: TappedEvent) => {
      n++;
      if (res.writableLength > MAX_BUFFERED) {
        lost++;
        return;
      }
      if (lost > 0) {
        send(res, "lost", { count: lost });
        lost = 0;
      }
      if (e.kind === "state") return send(res, "state", { n, at: e.at, online: e.online });
      const v = frameView(e.payload);
      if (v.body !== null && v.body.data.length <= BODY_BUDGET) {
        const msgId = typeof v.frame?.id === "string" ? v.frame.id : "";
        s.bodies.set(n, { ...v.body, id: msgId });
        s.budget -= v.body.data.length;
        for (const [k, b] of s.bodies) {
          if (s.budget >= 0) break;
          s.bodies.delete(k);
          s.budget += b.data.length;
        }
      }
      send(res, "frame", {
        n,
        at: e.at,
        qos: e.qos,
        type: v.type,
        frame: v.frame,
        body: v.summary,
        bytes: e.payload.byteLength,
      });
    };
    const unwatch = app.inbox.watch(id, onEvent);
    const heartbeat = setInterval(() => {
      later(() => res.write(": ping\n\n"));
    }, HEARTBEAT_MS);
    return new Promise<void>((resolve) => {
      res.once("close", () => {
        ended = true;
        clearInterval(heartbeat);
        unwatch();
        streams.delete(streamId);
        resolve();
      });
    });
  }

  /** GET /api/admin/endpoints/{id}/inbox/{stream}/{n}: one kept body, as plain text. */
  function body(req: AdminRequest): void {
    const { id, stream: streamId, n } = req.ctx.params;
    const s = streams.get(streamId);
    const b = s !== undefined && s.endpointId === id && /^\d{1,12}$/.test(n)
      ? s.bodies.get(Number(n))
      : undefined;
    if (b === undefined) throw httpFail("not_found", "这条消息的正文已不在收件箱里");
    req.object = `${id}/${b.id}`;
    const { res } = req.ctx;
    res.writeHead(200, {
      // Never the message's own content type: the console shows text, never renders it.
      "Content-Type": "text/plain; charset=utf-8",
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
      "Content-Disposition": "inline",
      "X-Nixmsg-Body-Enc": b.enc,
    });
    res.end(b.data);
  }

  return { stream, body };
}
