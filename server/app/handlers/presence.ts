import type { Handler, HandlerTable } from "../mqtt_app.ts";
import { presenceItems, withOnline } from "../../store/queries/directory.ts";

/** spec 6.5 presence.get: up to 200 ids; unknown ids come back as `not_found` items. */
const presenceGet: Handler<"presence.get"> = async ({ app }, frame) => {
  const rows = await app.store.query("presence.times", { ids: frame.ids });
  return { items: presenceItems(frame.ids, rows, (id) => app.presence.isOnline(id)) };
};

/** spec 6.5 directory.list: sorted by id; id prefix or case-insensitive name match; paged. */
const directory: Handler<"directory.list"> = async ({ app }, frame) => {
  const page = await app.store.query("directory.list", {
    cursor: frame.cursor,
    limit: frame.limit,
    query: frame.query,
  });
  return {
    items: withOnline(page.items, (id) => app.presence.isOnline(id)),
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
