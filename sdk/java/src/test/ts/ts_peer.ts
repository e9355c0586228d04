/**
 * A TypeScript SDK client for the Java SDK's interoperability test: it logs in as one endpoint,
 * answers every text message with `echo: <text>` to its sender, and prints one JSON line per event
 * on stdout (`online`, `message`, `receipt`). It stops when stdin closes.
 *
 * ```sh
 * deno run --allow-all --frozen --config deno.json sdk/java/src/test/ts/ts_peer.ts \
 *   ws://127.0.0.1:7443/mqtt peer-1 password
 * ```
 */
import { bodyText, NixMsgClient } from "../../../../ts/src/index.ts";

const [url, id, password] = Deno.args;
if (!url || !id || !password) {
  console.error("Usage: ts_peer.ts <url> <endpoint id> <password>");
  Deno.exit(2);
}

function emit(event: Record<string, unknown>): void {
  console.log(JSON.stringify(event));
}

const client = NixMsgClient.connect(url, id, { password });
client.onMessage(async (msg) => {
  const text = bodyText(msg.body);
  emit({ event: "message", id: msg.id, from: msg.from, text, meta: msg.meta });
  await client.send(msg.from, `echo: ${text}`, { meta: { reply_to: msg.id } });
});
client.onReceipt((r) => emit({ event: "receipt", id: r.id, state: r.state }));
const info = await client.ready();
emit({ event: "online", server_version: info.serverVersion });

// Run until the test closes stdin.
for await (const _ of Deno.stdin.readable) { /* ignore input */ }
await client.close();
