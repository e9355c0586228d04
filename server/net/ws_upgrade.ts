/**
 * MQTT over WebSocket on `/mqtt` (spec 4.4).
 *
 * - No Origin check: browser SDKs run on the integrator's own domains, and authentication is the
 *   MQTT username and password, not a cookie, so there is nothing to forge across sites.
 * - The subprotocol must be `mqtt`. A client that does not offer it still completes the upgrade
 *   (as the spec's Go library does) and is then closed with 1002 before any MQTT is read.
 * - No per-message deflate. The payload cap is the MQTT packet cap (spec 5) plus framing room;
 *   the real size checks are the broker's and the application's.
 */
import type { Buffer } from "node:buffer";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import type { Logger } from "../log/log.ts";
import { capQueuedBytes, logSlowConsumer } from "./queue_cap.ts";
import type { MqttHandler, PeerInfo } from "./types.ts";
import { wsToStream } from "./ws_stream.ts";

/** The MQTT packet cap of spec 5 (`MaximumPacketSize`). */
export const MAX_MQTT_PACKET_BYTES = 786432;
/** The WebSocket subprotocol MQTT clients must ask for. */
export const MQTT_SUBPROTOCOL = "mqtt";
/** Close code for a missing subprotocol: a protocol error (RFC 6455 7.4.1). */
export const CLOSE_PROTOCOL_ERROR = 1002;

/** Turns HTTP upgrade requests into MQTT connections. */
export interface WsUpgrader {
  /** Completes the upgrade of `req` and hands the WebSocket to the MQTT handler. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, peer: PeerInfo): void;
  /** Releases the WebSocket server; open WebSockets are closed by their owners. */
  close(): void;
}

/**
 * Creates the upgrader.
 *
 * @example
 * const ws = createWsUpgrader({ onMqtt: broker.accept, log });
 * httpServer.on("upgrade", (req, socket, head) => ws.upgrade(req, socket, head, peer));
 */
export function createWsUpgrader(
  opts: { onMqtt: MqttHandler; log: Logger; maxQueuedBytes: number },
): WsUpgrader {
  const { onMqtt, log, maxQueuedBytes } = opts;
  const wss = new WebSocketServer({
    noServer: true,
    clientTracking: false,
    perMessageDeflate: false,
    maxPayload: MAX_MQTT_PACKET_BYTES + 1024,
    handleProtocols: (offered) => offered.has(MQTT_SUBPROTOCOL) ? MQTT_SUBPROTOCOL : false,
  });

  const accept = (ws: WebSocket, peer: PeerInfo) => {
    // Without an 'error' listener, one invalid frame from the peer (an unmasked frame, a bad
    // close code) is thrown from the socket's data handler and ends the process. ws closes the
    // connection itself after emitting it; terminate covers any other path.
    ws.on("error", (err) => {
      log.debug("WebSocket error", { error: err.message, remote: peer.remoteAddress });
      ws.terminate();
    });
    if (ws.protocol !== MQTT_SUBPROTOCOL) {
      log.debug("WebSocket closed: subprotocol mqtt not offered", { remote: peer.remoteAddress });
      ws.close(CLOSE_PROTOCOL_ERROR, "Subprotocol mqtt required");
      return;
    }
    // issue 10: the broker's stream for this WebSocket (wsToStream gives it the same one) is
    // closed once a client that stops reading has too much queued.
    const stream = wsToStream(ws);
    // The WebSocket's errors destroy the stream with that error; the broker adds its own.
    stream.on("error", () => {});
    capQueuedBytes(stream, {
      maxBytes: maxQueuedBytes,
      queued: () => stream.writableLength + ws.bufferedAmount,
      onOver: (queued) => logSlowConsumer(log, "ws", peer.remoteAddress, queued, maxQueuedBytes),
    });
    try {
      onMqtt({ transport: "ws", ws, remoteAddress: peer.remoteAddress, secure: peer.secure });
    } catch (err) {
      log.error("MQTT handler failed on a WebSocket", { error: String(err) });
      ws.terminate();
    }
  };

  return {
    upgrade(req, socket, head, peer) {
      wss.handleUpgrade(req, socket, head, (ws) => accept(ws, peer));
    },
    close() {
      wss.close();
    },
  };
}
