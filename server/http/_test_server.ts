/** A real HTTP server on port 0 that feeds an app, for the router tests. */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { PeerInfo } from "../net/types.ts";
import type { HttpApp, Scope } from "./types.ts";

export const ALL_SCOPES: ReadonlySet<Scope> = new Set(["client", "admin", "health"]);
const LOCAL_PEER: PeerInfo = { remoteAddress: "127.0.0.1", secure: false };

/** Serves `app` as a listener serving `scopes` would, runs `body`, then closes everything. */
export async function withApp(
  app: HttpApp,
  body: (port: number) => Promise<void>,
  scopes: ReadonlySet<Scope> = ALL_SCOPES,
  peer: PeerInfo = LOCAL_PEER,
): Promise<void> {
  const server = createServer((req, res) => void app.handle(req, res, { scopes, peer }));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    await body((server.address() as AddressInfo).port);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}
