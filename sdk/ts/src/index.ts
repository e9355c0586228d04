/**
 * `@nixevol/nixmsg`: the TypeScript SDK of NixMsg for browsers, Node 20+ and Deno (spec 9).
 *
 * @example
 * ```ts
 * import { NixMsgClient } from "@nixevol/nixmsg";
 *
 * const client = NixMsgClient.connect("wss://relay.example/mqtt", "door-1", { password });
 * client.onMessage((msg) => console.log(msg.from, msg.body));
 * await client.ready();
 * await client.send("app-1", "hello");
 * ```
 * @module
 */
export { CLIENT_NAME, NixMsgClient } from "./client.ts";
export { ErrorCode, NixMsgError } from "./errors.ts";
export type { LocalErrorCode, NixMsgErrorOptions, ServerErrorCode } from "./errors.ts";
export { GroupApi } from "./groups.ts";
export { register } from "./register.ts";
export { connectionUrl, registerUrl, type Transport } from "./url.ts";
export { bodyText } from "./body.ts";
export { signWebhook, verifyWebhook } from "./webhook.ts";
export type { VerifyWebhookOptions, WebhookHeaders } from "./webhook.ts";
export type * from "./types.ts";
