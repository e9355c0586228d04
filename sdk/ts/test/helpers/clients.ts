/** SDK clients with every callback recorded, for the integration tests. */
import {
  type ConnectionEvent,
  type ConnectOptions,
  type Credential,
  type GroupEvent,
  type Message,
  NixMsgClient,
  type PresenceEvent,
  type Receipt,
  type Revoked,
} from "@nixevol/nixmsg";
import { Events, WAIT_MS, within } from "./events.ts";

/** A client and what it has seen. */
export interface Tracked {
  client: NixMsgClient;
  messages: Events<Message>;
  receipts: Events<Receipt>;
  revoked: Events<Revoked>;
  presence: Events<PresenceEvent>;
  groupEvents: Events<GroupEvent>;
  states: Events<ConnectionEvent>;
  sessions: Events<string>;
}

const open = new Set<NixMsgClient>();

/** Connects and records every callback; does not wait for the handshake. */
export function track(
  url: string,
  id: string,
  credential: Credential,
  options: ConnectOptions = {},
): Tracked {
  const client = NixMsgClient.connect(url, id, credential, options);
  open.add(client);
  const t: Tracked = {
    client,
    messages: new Events(),
    receipts: new Events(),
    revoked: new Events(),
    presence: new Events(),
    groupEvents: new Events(),
    states: new Events(),
    sessions: new Events(),
  };
  client.onMessage(t.messages.push);
  client.onReceipt(t.receipts.push);
  client.onRevoked(t.revoked.push);
  client.onPresence(t.presence.push);
  client.onGroupEvent(t.groupEvents.push);
  client.onConnection(t.states.push);
  client.onSession(t.sessions.push);
  return t;
}

/** Connects with the password and waits (at most `waitMs`) until online. */
export async function online(
  url: string,
  ep: { id: string; password: string },
  options: ConnectOptions = {},
  waitMs = WAIT_MS,
): Promise<Tracked> {
  const t = track(url, ep.id, { password: ep.password }, options);
  await within(t.client.ready(), waitMs, `${ep.id} online`);
  return t;
}

/** Closes every client this module created (call in `after`). */
export async function closeAll(): Promise<void> {
  const all = [...open];
  open.clear();
  await Promise.all(all.map((c) => c.close().catch(() => {})));
}

/** Text of a received message body. */
export function text(m: Message): string {
  return typeof m.body === "string" ? m.body : new TextDecoder().decode(m.body);
}
