/** The health checks, served on every listener (spec 4.3). */
import type { Route } from "./types.ts";

/** Options of {@linkcode healthRoutes}. */
export interface HealthOptions {
  /** True when the database can be read and written now (spec 4.3 `/readyz`). */
  readonly ready: () => boolean | Promise<boolean>;
}

/**
 * `GET /healthz`: 200 while the process runs. `GET /readyz`: 200 while `ready()` holds, else
 * 503 `busy`, so a load balancer stops sending traffic while the store is failing.
 *
 * @example
 * createRouter([...healthRoutes({ ready: () => readiness.check() }), ...otherRoutes], { log });
 */
export function healthRoutes(opts: HealthOptions): Route[] {
  return [
    {
      method: "GET",
      path: "/healthz",
      scope: "health",
      handler: (ctx) => ctx.json(200, { ok: true }),
    },
    {
      method: "GET",
      path: "/readyz",
      scope: "health",
      handler: async (ctx) => {
        let ready = false;
        try {
          ready = await opts.ready();
        } catch {
          ready = false;
        }
        if (ready) ctx.json(200, { ok: true });
        else ctx.error(503, "busy", "Not ready: the database cannot be used");
      },
    },
  ];
}
