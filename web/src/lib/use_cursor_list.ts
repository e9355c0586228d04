/**
 * A cursor-paginated admin list bound to a remote `n-data-table` (spec 2.4: server-side
 * pagination). Jumping ahead walks the pages in between, since cursors are opaque.
 */
import { reactive, type Ref, ref, shallowRef } from "vue";
import type { PageQuery } from "../api/admin.ts";
import type { Page } from "../api/types.ts";
import { CursorPages } from "./cursor_pages.ts";
import { describeError } from "./errors.ts";
import { PAGE_SIZES } from "./query.ts";

/** What the page passes to `n-data-table` and calls on changes. */
export interface CursorList<T> {
  rows: Ref<T[]>;
  loading: Ref<boolean>;
  /** The last load failure, "" when the last load worked. */
  error: Ref<string>;
  pagination: {
    size: "small";
    page: number;
    pageSize: number;
    pageCount: number;
    showSizePicker: boolean;
    pageSizes: number[];
    prefix: () => string;
  };
  /** Loads page `page`. */
  goTo(page: number): Promise<void>;
  /** Back to the first page with new filters. */
  reload(): Promise<void>;
  /** Reloads the current page (after a change). */
  refresh(): Promise<void>;
  setPageSize(size: number): Promise<void>;
}

/** Options of {@linkcode useCursorList}. */
export interface CursorListOptions {
  pageSize?: number;
  /** Called with the page number and size each time a page is shown (to keep it in the address). */
  onPage?: (page: number, pageSize: number) => void;
}

/** Binds `load` to page state. `load` gets the cursor and the page size. */
export function useCursorList<T>(
  load: (p: PageQuery) => Promise<Page<T>>,
  options: CursorListOptions = {},
): CursorList<T> {
  const { pageSize = 50, onPage } = options;
  const pages = new CursorPages();
  const rows = shallowRef<T[]>([]);
  const loading = ref(false);
  const error = ref("");
  const pagination = reactive({
    size: "small" as const,
    page: 1,
    pageSize,
    pageCount: 1,
    showSizePicker: true,
    pageSizes: PAGE_SIZES,
    prefix: () => (pages.total === null ? "" : `共 ${pages.total} 条`),
  });
  let latest = 0;

  async function goTo(page: number): Promise<void> {
    const mine = ++latest;
    loading.value = true;
    try {
      let target = Math.max(1, page);
      let at = Math.min(target, pages.knownPages);
      while (true) {
        const result = await load({ cursor: pages.startOf(at) ?? "", limit: pagination.pageSize });
        if (mine !== latest) return;
        pages.loaded(at, result.next_cursor, result.total);
        if (at < target && result.next_cursor !== "") {
          at++;
          continue;
        }
        if (result.items.length === 0 && at > 1) {
          // The page emptied (rows were deleted): show the one before.
          target = at - 1;
          at = target;
          continue;
        }
        rows.value = result.items;
        pagination.page = at;
        pagination.pageCount = pages.pageCount(pagination.pageSize);
        error.value = "";
        onPage?.(at, pagination.pageSize);
        return;
      }
    } catch (err) {
      if (mine === latest) error.value = describeError(err);
    } finally {
      if (mine === latest) loading.value = false;
    }
  }

  return {
    rows,
    loading,
    error,
    pagination,
    goTo,
    reload() {
      pages.reset();
      return goTo(1);
    },
    refresh: () => goTo(pagination.page),
    setPageSize(size: number) {
      pagination.pageSize = size;
      pages.reset();
      return goTo(1);
    },
  };
}
