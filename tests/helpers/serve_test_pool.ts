// `nixmsg serve` for crash tests that spawn a server process and hash many passwords (a 1,000-row
// CSV import, 1,000 endpoints): the same startServer on the config from NIXMSG_CONFIG, with the
// cheap argon2 parameters of the in-process test server. Stops on SIGTERM like `serve`.
import { loadConfig } from "../../server/config/config.ts";
import { Logger } from "../../server/log/log.ts";
import { PasswordPool } from "../../server/auth/password_pool.ts";
import { startServer } from "../../server/app/server.ts";
import { TEST_POOL_PARAMS } from "./test_server.ts";

const { config } = await loadConfig(Deno.env.toObject());
const log = new Logger(config.log.level);
// Listening before the start: a SIGTERM right after "nixmsg serving" must not find the default.
const stopped = new Promise<void>((resolve) => Deno.addSignalListener("SIGTERM", resolve));
const server = await startServer(config, log, {
  pool: new PasswordPool({ params: TEST_POOL_PARAMS }),
});
await stopped;
await server.close();
