// Command example logs in as one endpoint, sends a text message to another endpoint and prints
// the first message that comes back. It is the example of README.md.
//
//	NIXMSG_URL=ws://127.0.0.1:7443/mqtt NIXMSG_ID=door-1 NIXMSG_PASSWORD=… NIXMSG_TO=app-1 \
//	  go run ./example
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	nixmsg "git.asio.asia/nixevol/NixMsg/sdk/go"
)

func main() {
	url, id, password, to := os.Getenv("NIXMSG_URL"), os.Getenv("NIXMSG_ID"),
		os.Getenv("NIXMSG_PASSWORD"), os.Getenv("NIXMSG_TO")

	client, err := nixmsg.New(url, id, nixmsg.Password(password), nixmsg.Options{})
	if err != nil {
		log.Fatal(err)
	}
	replies := make(chan nixmsg.Message, 1)
	client.OnMessage(func(m nixmsg.Message) error {
		select {
		case replies <- m:
		default:
		}
		return nil // returning nil acks the message
	})
	client.OnSession(func(token string) {
		// Save the token and log in with nixmsg.SessionToken(token) next time.
	})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.Connect(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Close(context.Background())

	sent, err := client.SendText(ctx, nixmsg.Endpoint(to), "hello from Go <b>&",
		nixmsg.WithKeep(), nixmsg.WithMeta(map[string]any{"lang": "go"}))
	var e *nixmsg.Error
	if errors.As(err, &e) && e.Code == "talk_password_required" {
		log.Fatal("the recipient has a talk password: pass nixmsg.WithTalkPassword")
	} else if err != nil {
		log.Fatal(err)
	}
	fmt.Println("sent", sent.ID, sent.State)

	select {
	case m := <-replies:
		fmt.Printf("reply from %s: %s\n", m.From, m.Text())
	case <-ctx.Done():
		log.Fatal("no reply within 30 s")
	}
}
