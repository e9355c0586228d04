import assert from "node:assert/strict";
import type { DataTableColumns } from "naive-ui";
import { type Hyperscript, phoneColumns } from "./phone_columns.ts";

/** A stand-in for vue's `h` that keeps the tree as plain objects. */
const h: Hyperscript = (tag, props, children) => ({ tag, props, children }) as never;

interface Row {
  id: string;
  name: string;
  state: string;
  created_at: number;
}

const COLUMNS: DataTableColumns<Row> = [
  { type: "selection", width: 40, fixed: "left" },
  { title: "编号", key: "id", width: 160, fixed: "left" },
  { title: "名称", key: "name", width: 140 },
  { title: "状态", key: "state", width: 90, render: (r) => `S:${r.state}` },
  { title: "开通时间", key: "created_at", width: 160 },
];

Deno.test("phoneColumns() keeps the selection, then the named columns in order, then folds the rest", () => {
  const cols = phoneColumns(h, COLUMNS, ["state", "id"]);
  const kinds = cols.map((c) => ("type" in c && c.type) || ("key" in c ? c.key : ""));
  assert.deepEqual(kinds, ["selection", "expand", "state", "id"]);
  const id = cols[3] as { fixed?: string; width?: number };
  assert.equal(id.fixed, undefined, "nothing stays fixed on a phone");
  assert.equal(id.width, undefined, "the kept columns share the width");
  const expand = cols[1] as unknown as { renderExpand: (r: Row) => { children: unknown[] } };
  const node = expand.renderExpand({ id: "a", name: "", state: "x", created_at: 7 });
  const texts = (node.children as { children: unknown }[]).map((c) =>
    Array.isArray(c.children) ? String(c.children[0]) : String(c.children)
  );
  assert.deepEqual(texts, ["名称", "—", "开通时间", "7"]);
});

Deno.test("phoneColumns() adds no expand column when every column is kept", () => {
  const cols = phoneColumns(h, COLUMNS, ["id", "name", "state", "created_at"]);
  assert.ok(!cols.some((c) => "type" in c && c.type === "expand"));
  assert.equal(cols.length, 5);
});
