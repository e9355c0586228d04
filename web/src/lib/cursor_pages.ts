/**
 * Page numbers over the admin API's opaque cursors (docs/admin-api.md, Pagination), so a cursor
 * list can drive a numbered `n-pagination`. Page `p` (1-based) starts at `starts[p - 1]`; the
 * start of a page becomes known when the page before it is loaded.
 */
export class CursorPages {
  #starts: string[] = [""];
  #total: number | null = null;

  /** The cursor that loads page `page`, or null while it is unknown. */
  startOf(page: number): string | null {
    return this.#starts[page - 1] ?? null;
  }

  /** The highest page whose start is known. */
  get knownPages(): number {
    return this.#starts.length;
  }

  /** Records what loading page `page` returned. */
  loaded(page: number, nextCursor: string, total?: number): void {
    this.#total = total ?? null;
    if (nextCursor === "") this.#starts.length = page;
    else {
      this.#starts.length = Math.max(this.#starts.length, page);
      this.#starts[page] = nextCursor;
    }
  }

  /**
   * How many pages `n-pagination` should offer: all of them when the list has a total, else the
   * pages seen so far plus the next one when there is more.
   */
  pageCount(pageSize: number): number {
    if (this.#total !== null) return Math.max(1, Math.ceil(this.#total / pageSize));
    return this.#starts.length;
  }

  /** The number of matching rows, when the list reports it. */
  get total(): number | null {
    return this.#total;
  }

  /** Forgets every cursor (new filters or page size). */
  reset(): void {
    this.#starts = [""];
    this.#total = null;
  }
}
