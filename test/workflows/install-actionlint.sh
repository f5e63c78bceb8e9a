#!/usr/bin/env bash
# Prints the path of a pinned actionlint, building it once from the Go module
# proxy into the cache (${TRITON_FT_CACHE:-~/.cache/triton-ft}/actionlint/<version>).
# Without a Go new enough for actionlint's go.mod, the Go toolchain itself is
# fetched from the module proxy (module golang.org/toolchain) into the cache.
#
# usage: install-actionlint.sh
set -euo pipefail

ACTIONLINT_VERSION=v1.7.12   # github.com/rhysd/actionlint tag (go.mod: go 1.25.0)
GO_TOOLCHAIN=go1.25.14       # used only when the machine's go is older than 1.25

cache=${TRITON_FT_CACHE:-$HOME/.cache/triton-ft}
bin=$cache/actionlint/$ACTIONLINT_VERSION/actionlint
if [[ -x $bin ]]; then
  echo "$bin"
  exit 0
fi
log() { printf '== [%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

go_ok() { # go binary new enough (>= 1.25)?
  local v
  v=$("$1" env GOVERSION 2>/dev/null) || return 1
  v=${v#go}
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%[.a-z]*}
  ((major > 1 || (major == 1 && minor >= 25)))
}

go=$(command -v go || true)
if [[ -z $go ]] || ! go_ok "$go"; then
  tc=$cache/go-toolchain/$GO_TOOLCHAIN
  if [[ ! -x $tc/bin/go ]]; then
    proxy=${GOPROXY:-https://proxy.golang.org}
    proxy=${proxy%%,*}
    url="$proxy/golang.org/toolchain/@v/v0.0.1-$GO_TOOLCHAIN.linux-amd64.zip"
    log "fetching the Go toolchain $GO_TOOLCHAIN from the module proxy"
    tmp=$(mktemp -d)
    curl -fsSL --retry 3 -o "$tmp/tc.zip" "$url"
    python3 -m zipfile -e "$tmp/tc.zip" "$tmp/x"
    mkdir -p "$(dirname "$tc")"
    rm -rf "$tc"
    mv "$tmp/x/golang.org/toolchain@v0.0.1-$GO_TOOLCHAIN.linux-amd64" "$tc"
    chmod -R u+x "$tc/bin" "$tc/pkg/tool"
    rm -rf "$tmp"
  fi
  go=$tc/bin/go
fi

log "building actionlint $ACTIONLINT_VERSION with $("$go" env GOVERSION) (once per machine)"
mkdir -p "$(dirname "$bin")"
GOBIN=$(dirname "$bin") GOTOOLCHAIN=local CGO_ENABLED=0 nice -n 10 \
  "$go" install -trimpath "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION" >&2
echo "$bin"
