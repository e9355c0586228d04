#!/usr/bin/env bash
# Builds nats-server from its Go module into a cache directory, once, and prints the path of the
# binary. The JetStream peer benchmark (tests/bench/jetstream_peer.ts) uses it.
#
#   scripts/install_nats_server.sh   # -> /root/.cache/nixmsg/nats-server-v2.15.3/nats-server
#
# Needs Go on PATH (or in /usr/local/go/bin) and the Go module proxy. Set NIXMSG_NATS_SERVER to
# use a binary built elsewhere.
set -euo pipefail
version="v2.15.3"
if [ -n "${NIXMSG_NATS_SERVER:-}" ]; then
  echo "$NIXMSG_NATS_SERVER"
  exit 0
fi
dir="${XDG_CACHE_HOME:-$HOME/.cache}/nixmsg/nats-server-$version"
bin="$dir/nats-server"
if [ ! -x "$bin" ]; then
  go="$(command -v go || true)"
  [ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
  if [ -z "$go" ]; then
    echo "install_nats_server.sh: Go not found; install Go or set NIXMSG_NATS_SERVER" >&2
    exit 1
  fi
  echo "== building nats-server $version into $dir" >&2
  mkdir -p "$dir"
  GOFLAGS=-buildvcs=false GOBIN="$dir" "$go" install \
    "github.com/nats-io/nats-server/v2@$version" >&2
fi
echo "$bin"
