module git.asio.asia/nixevol/NixMsg/tests/bench/jetstream_peer

go 1.26.0

require (
	git.asio.asia/nixevol/NixMsg/sdk/go v0.0.0
	github.com/nats-io/nats.go v1.56.0
)

require (
	github.com/eclipse/paho.golang v0.23.0 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/klauspost/compress v1.20.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace git.asio.asia/nixevol/NixMsg/sdk/go => ../../../sdk/go
