package asia.asio.nixmsg;

import java.util.Collections;
import java.util.List;
import java.util.Objects;

/** A page of results. */
public final class Page<T> {
  private final List<T> items;
  private final String nextCursor;

  Page(List<T> items, String nextCursor) {
    this.items = Collections.unmodifiableList(items);
    this.nextCursor = nextCursor;
  }

  public List<T> items() {
    return items;
  }

  /** Pass back for the next page; "" when this was the last. */
  public String nextCursor() {
    return nextCursor;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Page
        && items.equals(((Page<?>) o).items)
        && nextCursor.equals(((Page<?>) o).nextCursor);
  }

  @Override
  public int hashCode() {
    return Objects.hash(items, nextCursor);
  }

  @Override
  public String toString() {
    return "Page{items=" + items + ", nextCursor=" + nextCursor + "}";
  }
}
