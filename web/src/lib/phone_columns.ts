/**
 * Tables on a phone (issue 32 item 3): the most useful columns first, the rest folded into an
 * expandable row, so nothing hides behind a sideways scroll.
 */
import type { VNodeChild } from "vue";
import type { DataTableColumn, DataTableColumns, DataTableRowData } from "naive-ui";

/** The element factory (vue's `h`), passed in so that this module loads without Vue. */
export type Hyperscript = (
  tag: string,
  props: Record<string, unknown>,
  children: unknown,
) => VNodeChild;

type Keyed<T> = DataTableColumn<T> & { key: string | number; title?: unknown };

function keyOf<T>(c: DataTableColumn<T>): string | null {
  return "key" in c && c.key !== undefined ? String(c.key) : null;
}

function titleOf<T>(c: Keyed<T>): string {
  return typeof c.title === "string" ? c.title : String(c.key);
}

function valueOf<T extends DataTableRowData>(c: Keyed<T>, row: T, index: number): VNodeChild {
  const render = (c as { render?: (row: T, index: number) => VNodeChild }).render;
  if (render !== undefined) return render(row, index);
  const v = row[c.key as keyof T];
  return v === null || v === undefined || v === "" ? "—" : String(v);
}

/**
 * `columns` for a phone: a selection column stays first, then the columns named in `keep` in
 * that order (sharing the width), and an expand column whose row lists every other column as
 * "title: value".
 */
export function phoneColumns<T extends DataTableRowData>(
  h: Hyperscript,
  columns: DataTableColumns<T>,
  keep: readonly string[],
): DataTableColumns<T> {
  const selection = columns.filter((c) => "type" in c && c.type === "selection");
  const keyed = columns.filter((c): c is Keyed<T> => keyOf(c) !== null);
  const shown = keep
    .map((k) => keyed.find((c) => keyOf(c) === k))
    .filter((c): c is Keyed<T> => c !== undefined)
    .map((c) => ({ ...c, fixed: undefined, width: undefined, minWidth: 64 }) as Keyed<T>);
  const hidden = keyed.filter((c) => !keep.includes(String(c.key)));
  if (hidden.length === 0) return [...selection, ...shown] as DataTableColumns<T>;
  const expand: DataTableColumn<T> = {
    type: "expand",
    width: 32,
    renderExpand: (row: T) =>
      h(
        "dl",
        {
          class: "phone-more",
          style: "display:grid;grid-template-columns:max-content 1fr;gap:4px 12px;margin:0",
        },
        hidden.flatMap((c, i) => [
          h("dt", { style: "color:#888" }, titleOf(c)),
          h("dd", { style: "margin:0;min-width:0;overflow-wrap:anywhere" }, [valueOf(c, row, i)]),
        ]),
      ),
  };
  return [...selection, expand, ...shown] as DataTableColumns<T>;
}
