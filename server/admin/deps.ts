/** What every admin handler module is built from. */
import type { App } from "../app/app_context.ts";
import type { MqttApp } from "../app/mqtt_app.ts";
import type { AdminAuth } from "./auth.ts";

/** The services the admin handlers share; built once by `adminRoutes`. */
export interface AdminDeps {
  readonly app: App;
  readonly mqtt: MqttApp;
  readonly auth: AdminAuth;
}
