package asia.asio.nixmsg;

/**
 * An application callback. The SDK runs all callbacks of a client serially, on one executor
 * (see {@link ConnectOptions.Builder#callbackExecutor}). For {@code onMessage} in auto ack
 * mode, returning normally acks the message; throwing leaves it unacked for a re-push (spec 9).
 *
 * @param <T> the event type
 */
@FunctionalInterface
public interface Listener<T> {
  void on(T event) throws Exception;
}
