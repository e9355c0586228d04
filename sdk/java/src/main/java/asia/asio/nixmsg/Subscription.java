package asia.asio.nixmsg;

/** Returned when a callback is added; {@link #remove()} removes it. */
@FunctionalInterface
public interface Subscription {
  void remove();
}
