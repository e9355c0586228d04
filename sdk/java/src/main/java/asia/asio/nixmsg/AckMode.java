package asia.asio.nixmsg;

/** When received messages are acked (spec 9 "接收"). */
public enum AckMode {
  /** After {@code onMessage} returns normally (the default). */
  AUTO,
  /** Only when the application calls {@code ack}. */
  MANUAL
}
