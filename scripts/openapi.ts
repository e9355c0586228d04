// Writes docs/openapi.json and the console's generated API types (web/src/api/schema.gen.ts) from
// server/admin/openapi.ts, the one source (issues 16, 32). Run: deno task openapi.
// tests/openapi_test.ts fails while either file differs.
import { openApiText } from "../server/admin/openapi.ts";
import { CONSOLE_TYPES, consoleTypesText } from "./openapi_types.ts";

const path = new URL("../docs/openapi.json", import.meta.url);
await Deno.writeTextFile(path, openApiText());
console.log(`wrote ${path.pathname}`);
await Deno.writeTextFile(CONSOLE_TYPES, await consoleTypesText());
console.log(`wrote ${CONSOLE_TYPES.pathname}`);
