import type { Handler, HandlerTable } from "../mqtt_app.ts";
import { presenceItems, withOnline } from "../../store/queries/directory.ts";

/** spec 6.5 presence.get: up to 200 ids; unknown ids come back as `not_found` items. */
const presenceGet: Handler<"presence.get"> = async ({ app }, frame) => {
  const rows = await app.store.query("presence.times", { ids: frame.ids });
  const byId = new Map(rows.map((r) => [r.id, r]));
  const online = (id: string) => {
    const r = byId.get(id);
    return app.presence.onlineWith(id, r?.online_since ?? null, r?.offline_since ?? null);
  };
  return { items: presenceItems(frame.ids, rows, online) };
};

/** spec 6.5 directory.list: sorted by id; id prefix or case-insensitive name match; paged. */
const directory: Handler<"directory.list"> = async ({ app }, frame) => {
  const page = await app.store.query("directory.list", {
    cursor: frame.cursor,
    limit: frame.limit,
    query: frame.query,
  });
  const byId = new Map(page.items.map((e) => [e.id, e]));
  return {
    items: withOnline(page.items, (id) => {
      const e = byId.get(id);
      return app.presence.onlineWith(id, e?.online_since_ms ?? null, e?.offline_since_ms ?? null);
    }),
    next_cursor: page.next_cursor,
  };
};

/** spec 6.5 presence.watch: replaces this connection's watch; cleared on disconnect. */
const watch: Handler<"presence.watch"> = ({ app, conn }, frame) => {
  app.presence.watch(conn, frame.ids, frame.all);
  return Promise.resolve({ watching: frame.all ? "all" : frame.ids.length });
};

/** The presence and directory frames of spec 6.5. */
export const presenceHandlers: HandlerTable = {
  "presence.get": presenceGet,
  "directory.list": directory,
  "presence.watch": watch,
};
