#!/usr/bin/env bash
# Builds toxiproxy's server from its Go module into a cache directory, once, and prints the path of
# the binary. The weak-network tests (sdk/conformance/harness.ts, command `toxiproxy_start`) use it.
#
#   scripts/install_toxiproxy.sh   # -> /root/.cache/nixmsg/toxiproxy-v2.5.0/server
#
# Needs Go 1.19+ on PATH (or in /usr/local/go/bin) and the Go module proxy. Set NIXMSG_TOXIPROXY to
# use a binary built elsewhere.
set -euo pipefail
version="v2.5.0"
if [ -n "${NIXMSG_TOXIPROXY:-}" ]; then
  echo "$NIXMSG_TOXIPROXY"
  exit 0
fi
dir="${XDG_CACHE_HOME:-$HOME/.cache}/nixmsg/toxiproxy-$version"
bin="$dir/server"
if [ ! -x "$bin" ]; then
  go="$(command -v go || true)"
  [ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
  if [ -z "$go" ]; then
    echo "install_toxiproxy.sh: Go not found; install Go or set NIXMSG_TOXIPROXY" >&2
    exit 1
  fi
  echo "== building toxiproxy $version into $dir" >&2
  mkdir -p "$dir"
  GOFLAGS=-buildvcs=false GOBIN="$dir" "$go" install \
    "github.com/Shopify/toxiproxy/v2/cmd/server@$version" >&2
fi
echo "$bin"
