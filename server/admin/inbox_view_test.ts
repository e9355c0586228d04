import assert from "node:assert/strict";
import { frameView } from "./inbox_view.ts";

const bytes = (v: unknown) =>
  new TextEncoder().encode(typeof v === "string" ? v : JSON.stringify(v));

Deno.test("frameView() withholds a message's body and meta and keeps the body for an explicit open", () => {
  const v = frameView(bytes({
    v: 1,
    type: "msg",
    id: "m1",
    from: "a",
    body: { enc: "utf8", content_type: "text/plain", data: "secret words" },
    meta: { k: "secret meta" },
  }));
  assert.equal(v.type, "msg");
  assert.deepEqual(v.frame, { v: 1, type: "msg", id: "m1", from: "a" });
  assert.ok(!JSON.stringify(v.frame).includes("secret"));
  assert.deepEqual(v.body, { enc: "utf8", content_type: "text/plain", data: "secret words" });
  assert.deepEqual(v.summary, { enc: "utf8", content_type: "text/plain", length: 12 });
});

Deno.test("frameView() strips body and meta at any depth and survives payloads that are not objects", () => {
  const v = frameView(
    bytes({ v: 1, type: "resp", data: { items: [{ body: "x", meta: {}, id: 1 }] } }),
  );
  assert.deepEqual(v.frame, { v: 1, type: "resp", data: { items: [{ id: 1 }] } });
  assert.equal(v.body, null);
  assert.equal(v.summary, null);
  for (const raw of ["not json", "[1,2]", "null", "7"]) {
    assert.deepEqual(frameView(bytes(raw)), { type: "", frame: null, body: null, summary: null });
  }
});
