/**
 * The live inbox of an endpoint (docs/admin-api.md "Live inbox"): a Server-Sent Events stream of
 * the frames pushed to it, bodies withheld, and the explicit open of one body.
 */
import { ApiError, apiUrl, errorOf, seg } from "./http.ts";
import type { components } from "./schema.gen.ts";

type Schemas = components["schemas"];

/** A withheld body's summary. */
export type BodySummary = Schemas["InboxBodySummary"];

/** One `frame` event. */
export type InboxFrame = Schemas["InboxFrame"];

/** One `state` event: the endpoint came online or went offline. */
export type InboxState = Schemas["InboxState"];

/** The `hello` event that opens a stream. */
export type InboxHello = Schemas["InboxHello"];

/** One `lost` event: frames dropped because the stream was read too slowly. */
export type InboxLost = Schemas["InboxLost"];

/** What the stream reports. */
export interface InboxHandlers {
  hello(h: InboxHello): void;
  frame(f: InboxFrame): void;
  state(s: InboxState): void;
  lost(count: number): void;
  /** The stream broke; `retrying` when the browser reconnects by itself. */
  broken(retrying: boolean): void;
}

/** Opens the stream; call the result to close it. */
export function openInbox(endpointId: string, on: InboxHandlers): () => void {
  const source = new EventSource(apiUrl(`endpoints/${seg(endpointId)}/inbox`));
  const data = <T>(e: Event): T => JSON.parse((e as MessageEvent<string>).data);
  source.addEventListener("hello", (e) => on.hello(data<InboxHello>(e)));
  source.addEventListener("frame", (e) => on.frame(data<InboxFrame>(e)));
  source.addEventListener("state", (e) => on.state(data<InboxState>(e)));
  source.addEventListener("lost", (e) => on.lost(data<InboxLost>(e).count));
  source.addEventListener("error", () => on.broken(source.readyState !== EventSource.CLOSED));
  return () => source.close();
}

/** The body of event `n` of stream `stream`, as sent (base64 text for a binary body). */
export async function openInboxBody(
  endpointId: string,
  stream: string,
  n: number,
): Promise<{ enc: string; text: string }> {
  let res: Response;
  try {
    res = await fetch(apiUrl(`endpoints/${seg(endpointId)}/inbox/${seg(stream)}/${n}`));
  } catch {
    throw new ApiError(0, "network", "无法连接服务器");
  }
  if (!res.ok) throw await errorOf(res);
  return { enc: res.headers.get("X-Nixmsg-Body-Enc") ?? "utf8", text: await res.text() };
}
