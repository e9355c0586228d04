// A TypeScript SDK client for the Go SDK's interop test: it logs in, prints `{"ready":true}`,
// then answers every message with "echo: <text>" (text) or the same bytes (binary), with the
// message's meta (the README example's marker), and prints
// each received message as one JSON line. Run with Deno from the repository root:
//   deno run --allow-all --frozen --config deno.json sdk/go/testdata/ts_peer.ts URL ID PASSWORD
import { NixMsgClient } from "../../ts/src/index.ts";

const [url, id, password] = Deno.args;
const client = NixMsgClient.connect(url, id, { password });
client.onMessage(async (msg) => {
  const text = typeof msg.body === "string";
  console.log(JSON.stringify({
    id: msg.id,
    from: msg.from,
    text: text ? msg.body : null,
    bytes: text ? null : Array.from(msg.body as Uint8Array),
    contentType: msg.contentType,
    meta: msg.meta,
  }));
  const meta = msg.meta ? { meta: msg.meta } : {};
  if (text) await client.send(msg.from, `echo: ${msg.body}`, meta);
  else await client.send(msg.from, msg.body, { contentType: msg.contentType, ...meta });
});
await client.ready();
console.log(JSON.stringify({ ready: true }));
// Stdin closing ends the peer.
for await (const _ of Deno.stdin.readable) { /* wait */ }
await client.close();
