// Command example logs in as one endpoint, asks another endpoint a question and prints the
// answer to that question: the reply that carries the same marker in its meta. It is the example
// of README.md.
//
//	NIXMSG_URL=ws://127.0.0.1:7443/mqtt NIXMSG_ID=door-1 NIXMSG_PASSWORD=… NIXMSG_TO=app-1 \
//	  go run ./example
package main

import (
	"context"
	"crypto/rand"
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
		log.Fatal(err) // a *nixmsg.Error with Code "bad_request": a bad URL, an empty id, ...
	}
	defer client.Close(context.Background()) // drains acks in flight, at most 5 s

	// The answer to THIS question carries our marker back; a late answer to an earlier run of
	// the program carries another one and is skipped.
	marker := rand.Text()
	answers := make(chan nixmsg.Message, 1)
	client.OnMessage(func(m nixmsg.Message) error {
		if m.From == to && m.Meta["marker"] == marker {
			select {
			case answers <- m:
			default:
			}
		}
		return nil // returning nil acks the message
	})
	client.OnSession(func(token string) {
		// Save the token and log in with nixmsg.SessionToken(token) next time.
	})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.Connect(ctx); err != nil {
		// "auth_failed" for a wrong password; "timeout" wrapping the last connection error
		// ("network" or "tls") when the server cannot be reached.
		log.Fatal(err)
	}

	sent, err := client.SendText(ctx, nixmsg.Endpoint(to), "what time is it? <b>&",
		nixmsg.WithKeep(), nixmsg.WithMeta(map[string]any{"marker": marker}))
	if errors.Is(err, nixmsg.ErrCode(nixmsg.CodeTalkPasswordRequired)) {
		log.Fatal("the recipient has a talk password: pass nixmsg.WithTalkPassword")
	} else if err != nil {
		log.Fatal(err)
	}
	fmt.Println("sent", sent.ID, sent.State)

	select {
	case m := <-answers:
		fmt.Printf("answer from %s: %s\n", m.From, m.Text())
	case <-ctx.Done():
		log.Fatal("no answer within 30 s")
	}
}
