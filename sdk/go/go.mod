module git.asio.asia/nixevol/NixMsg/sdk/go

go 1.24.0

require (
	github.com/eclipse/paho.golang v0.23.0
	github.com/gorilla/websocket v1.5.3
)

require golang.org/x/net v0.43.0 // indirect
