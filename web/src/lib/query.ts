/**
 * List filters and the page number live in the address (`?q=door&page=3`), so a reload, a
 * bookmark and the browser's Back show the same list.
 */
import type { LocationQuery } from "vue-router";

/** Values to put in the address; "", undefined, null and page 1 are left out. */
export type QueryValues = Record<string, string | number | undefined | null>;

/** The address query of `values`, without the empty ones and without `page=1`. */
export function cleanQuery(values: QueryValues): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined || v === null || v === "") continue;
    if (k === "page" && Number(v) <= 1) continue;
    out[k] = String(v);
  }
  return out;
}

/** One string value of the address query; "" when absent or repeated. */
export function queryText(query: LocationQuery, key: string): string {
  const v = query[key];
  return typeof v === "string" ? v : "";
}

/** The `page` of the address query: a whole number from 1, else 1. */
export function queryPage(query: LocationQuery): number {
  const n = Number(queryText(query, "page"));
  return Number.isInteger(n) && n >= 1 ? n : 1;
}

/** The page sizes a list offers; the first one past the default is 50. */
export const PAGE_SIZES = [20, 50, 100, 200];
export const DEFAULT_PAGE_SIZE = 50;

/** The `size` of the address query when it is one of {@linkcode PAGE_SIZES}, else the default. */
export function querySize(query: LocationQuery): number {
  const n = Number(queryText(query, "size"));
  return PAGE_SIZES.includes(n) ? n : DEFAULT_PAGE_SIZE;
}

/** `page` and `size` for {@linkcode cleanQuery}: both left out at their defaults. */
export function pageValues(page: number, size: number): QueryValues {
  return { page, size: size === DEFAULT_PAGE_SIZE ? undefined : size };
}

/** Whether two queries hold the same values (order aside). */
export function sameQuery(a: Record<string, string>, b: LocationQuery): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => b[k] === a[k]);
}
