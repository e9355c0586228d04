// Package nixmsg is the Go SDK of NixMsg (spec 9): a client that logs in as one endpoint over
// MQTT 5 (WebSocket by default, raw TCP when asked), sends messages through an in-memory queue
// that survives reconnects, and hands received messages to your handler once, acking them when
// it returns.
//
//	client, err := nixmsg.New("wss://relay.example/mqtt", "door-1", nixmsg.Password(pw), nixmsg.Options{})
//	if err != nil { … }
//	client.OnSession(func(token string) { save(token) }) // log in with nixmsg.SessionToken next time
//	client.OnMessage(func(m nixmsg.Message) error {
//		fmt.Println(m.From, m.Text())
//		return nil // nil acks; an error or a panic leaves it for the server to push again
//	})
//	if err := client.Connect(ctx); err != nil { … }
//	defer client.Close(context.Background())
//	_, err = client.SendText(ctx, nixmsg.Endpoint("app-1"), "opened", nixmsg.WithKeep())
//
// The files mirror the TypeScript SDK's (sdk/ts/src): link.go is the connection and reconnect
// loop (on paho.golang's autopaho), send_queue.go the send queue, receiver.go the receiving
// rules, dedup.go, backoff.go, errors.go and so on.
package nixmsg
