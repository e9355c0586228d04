package asia.asio.nixmsg;

import java.util.Objects;

/** Where a message goes (spec 6.2): an endpoint or a group. */
public final class Target {
  private final String kind;
  private final String id;

  private Target(String kind, String id) {
    this.kind = kind;
    this.id = Objects.requireNonNull(id, "id");
  }

  /** An endpoint by id. */
  public static Target endpoint(String id) {
    return new Target("endpoint", id);
  }

  /** A group by id ({@code g_...}). */
  public static Target group(String id) {
    return new Target("group", id);
  }

  static Target of(String kind, String id) {
    return new Target(kind, id);
  }

  /** {@code endpoint} or {@code group}. */
  public String kind() {
    return kind;
  }

  public String id() {
    return id;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Target && kind.equals(((Target) o).kind) && id.equals(((Target) o).id);
  }

  @Override
  public int hashCode() {
    return Objects.hash(kind, id);
  }

  @Override
  public String toString() {
    return kind + ":" + id;
  }
}
