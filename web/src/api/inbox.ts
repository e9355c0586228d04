/**
 * The live inbox of an endpoint (docs/admin-api.md "Live inbox"): a Server-Sent Events stream of
 * the frames pushed to it, bodies withheld, and the explicit open of one body.
 */
import { ApiError, apiUrl, errorOf, seg } from "./http.ts";

/** A withheld body's summary. */
export interface BodySummary {
  enc: string;
  content_type: string;
  length: number;
}

/** One `frame` event. */
export interface InboxFrame {
  n: number;
  at: number;
  qos: 0 | 1;
  type: string;
  frame: Record<string, unknown> | null;
  body: BodySummary | null;
  bytes: number;
}

/** One `state` event: the endpoint came online or went offline. */
export interface InboxState {
  n: number;
  at: number;
  online: boolean;
}

/** The `hello` event that opens a stream. */
export interface InboxHello {
  stream: string;
  endpoint_id: string;
  online: boolean;
}

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
  const data = (e: Event) => JSON.parse((e as MessageEvent<string>).data);
  source.addEventListener("hello", (e) => on.hello(data(e)));
  source.addEventListener("frame", (e) => on.frame(data(e)));
  source.addEventListener("state", (e) => on.state(data(e)));
  source.addEventListener("lost", (e) => on.lost(data(e).count));
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
