package asia.asio.nixmsg;

import java.util.concurrent.CopyOnWriteArrayList;

/** A set of application callbacks; {@code add} returns the handle that removes the callback. */
final class Listeners<T> {
  private final CopyOnWriteArrayList<Listener<T>> list = new CopyOnWriteArrayList<>();

  int size() {
    return list.size();
  }

  Subscription add(Listener<T> listener) {
    if (listener == null) throw NixMsgException.config("The callback is null");
    list.add(listener);
    return () -> list.remove(listener);
  }

  /** Calls every callback in turn; the first error propagates. */
  void run(T event) throws Exception {
    for (Listener<T> l : list) l.on(event);
  }
}
