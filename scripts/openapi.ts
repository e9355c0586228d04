// Writes docs/openapi.json from server/admin/openapi.ts, the one source (issue 16).
// Run: deno task openapi. tests/openapi_test.ts fails while the file differs.
import { openApiText } from "../server/admin/openapi.ts";

const path = new URL("../docs/openapi.json", import.meta.url);
await Deno.writeTextFile(path, openApiText());
console.log(`wrote ${path.pathname}`);
