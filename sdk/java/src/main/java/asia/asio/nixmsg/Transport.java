package asia.asio.nixmsg;

/** How the SDK reaches the server (spec 9: WebSocket unless TCP is asked for). */
public enum Transport {
  /** MQTT over WebSocket at {@code <path>/mqtt}, subprotocol {@code mqtt} (the default). */
  WEBSOCKET,
  /** Raw MQTT over TCP, only when asked for. */
  TCP
}
