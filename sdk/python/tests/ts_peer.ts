/**
 * A TypeScript SDK client for the Python SDK's interop test: logs in, prints one JSON line once
 * online, answers every message with "echo: <body>", prints each message it got, and closes when
 * stdin closes.
 *
 * ```sh
 * deno run --allow-all --frozen --config deno.json sdk/python/tests/ts_peer.ts ws://… id password
 * ```
 */
import { bodyText, NixMsgClient } from "../../ts/src/index.ts";

const [url, id, password] = Deno.args;
const client = NixMsgClient.connect(url, id, { password });
client.onMessage(async (msg) => {
  const text = bodyText(msg.body);
  console.log(JSON.stringify({ from: msg.from, body: text }));
  await client.send(msg.from, `echo: ${text}`);
});
await client.ready();
console.log(JSON.stringify({ ready: true }));
for await (const _ of Deno.stdin.readable) { /* runs until stdin closes */ }
await client.close();
