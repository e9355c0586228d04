/**
 * The admin's invalidating endpoint actions (spec 7.6, 8), shared by the single-endpoint routes
 * and the batch route. Each runs its op, then applies the effects, then sends `fatal`:
 * disable -> `disabled`, delete -> `deleted`, reset -> `password_reset` (spec 6.8). The session
 * token is already void in the same commit, so a reconnect is refused (spec 5).
 */
import type { AdminDeps } from "./deps.ts";
import { applyVoids, notifyGroup } from "./effects.ts";

/** The invalidating actions on one endpoint; each rejects with the op's OpError. */
export interface EndpointActions {
  disable(id: string): Promise<void>;
  enable(id: string): Promise<void>;
  remove(id: string): Promise<void>;
  /** Stores `loginHash`, clears the session, closes the connection with `fatal`. */
  resetPassword(id: string, loginHash: string): Promise<void>;
}

/** Builds the actions over the app, the MQTT side and the writer. */
export function endpointActions(d: AdminDeps): EndpointActions {
  const { app, mqtt } = d;
  const writer = app.store;
  return {
    async disable(id) {
      const r = await writer.run("endpoint.disable", { endpointId: id });
      applyVoids(app, r);
      await mqtt.fatal(id, "disabled");
    },
    async enable(id) {
      await writer.run("endpoint.enable", { endpointId: id });
    },
    async remove(id) {
      const r = await writer.run("endpoint.delete", { endpointId: id });
      applyVoids(app, r);
      for (const e of r.groupEvents) notifyGroup(app, e.members, e.groupId, e.event, e.endpointId);
      // A later endpoint with the same id starts with a clean slate.
      await app.loginLocks.unlock(id);
      await app.talkLocks.clearTarget(id);
      await mqtt.fatal(id, "deleted");
    },
    async resetPassword(id, loginHash) {
      await writer.run("endpoint.reset_password", { endpointId: id, loginHash });
      await mqtt.fatal(id, "password_reset");
    },
  };
}
