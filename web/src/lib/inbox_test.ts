import assert from "node:assert/strict";
import { entrySummary, INBOX_LIMIT, InboxList } from "./inbox.ts";
import type { InboxEntry } from "./inbox.ts";

const frame = (n: number, type = "msg", f: Record<string, unknown> = {}): InboxEntry => ({
  kind: "frame",
  n,
  at: 0,
  qos: 1,
  type,
  frame: { v: 1, type, ...f },
  body: null,
  bytes: 10,
});

Deno.test("InboxList keeps the newest first, holds events while paused and shows them on resume", () => {
  const list = new InboxList();
  list.add(frame(1));
  list.add(frame(2));
  list.pause();
  list.add(frame(3));
  list.add(frame(4));
  assert.deepEqual(list.entries.map((e) => e.n), [2, 1], "paused: the list stays still");
  assert.equal(list.waiting.length, 2);
  list.resume();
  assert.deepEqual(list.entries.map((e) => e.n), [4, 3, 2, 1]);
  assert.equal(list.waiting.length, 0);
  list.clear();
  assert.deepEqual(list.entries, []);
});

Deno.test("InboxList keeps at most INBOX_LIMIT rows", () => {
  const list = new InboxList();
  for (let n = 1; n <= INBOX_LIMIT + 5; n++) list.add(frame(n));
  assert.equal(list.entries.length, INBOX_LIMIT);
  assert.equal(list.entries[0].n, INBOX_LIMIT + 5);
});

Deno.test("entrySummary() names the sender, the receipt state, the revoke and presence in Chinese", () => {
  const msg = { ...frame(1, "msg", { from: "a", id: "m1", to: { kind: "group", id: "g" } }) };
  if (msg.kind === "frame") msg.body = { enc: "utf8", content_type: "", length: 5 };
  assert.equal(entrySummary(msg), "来自 a（群 g） · 消息号 m1 · 正文 5 字符");
  assert.equal(
    entrySummary(frame(2, "receipt", { id: "m1", endpoint_id: "b", state: "accepted" })),
    "消息 m1 · b accepted",
  );
  assert.equal(entrySummary(frame(3, "presence", { id: "b", online: false })), "b 下线");
  assert.equal(entrySummary({ kind: "state", n: 4, at: 0, online: true }), "本端上线");
});
