#!/usr/bin/env bash
# Builds (or reuses from the cache) the real Pulumi engine the engine suite
# drives: the Pulumi CLI (github.com/pulumi/pulumi/pkg/v3, cmd/pulumi) and the
# Kubernetes resource provider (github.com/pulumi/pulumi-kubernetes/provider/v4),
# both compiled from the Go module proxy. Prints the bin directory on its last
# line; it holds `pulumi` and `pulumi-resource-kubernetes`.
#
# Usage: build-engine.sh
# Cache: ${TRITON_FT_CACHE:-~/.cache/triton-ft}/engine/<cli>+kubernetes-<provider>/bin.
# A second run on the same machine returns at once; a cold run compiles both
# (see docs/development.md, "The real engine suite", for the minutes measured on 2 cores).
set -euo pipefail

# The Pulumi CLI release (a tag of the pkg/v3 module).
PULUMI_VERSION=v3.274.1
# pulumi-kubernetes tags its releases v4.x.y at the repository root, so the
# provider/v4 module is only reachable by pseudo-version: this one is the
# commit of release 4.25.0, the version the binary reports.
K8S_PROVIDER_MODULE_VERSION=v4.0.0-20260115033456-f47bc2d6f199
K8S_PROVIDER_VERSION=4.25.0

cache=${TRITON_FT_CACHE:-$HOME/.cache/triton-ft}
dir=$cache/engine/pulumi-$PULUMI_VERSION+kubernetes-$K8S_PROVIDER_VERSION
bin=$dir/bin

mkdir -p "$dir"
exec 8>"$dir/.lock"
flock 8

if [[ -x $bin/pulumi && -x $bin/pulumi-resource-kubernetes ]]; then
  echo "build-engine: cached pulumi $PULUMI_VERSION + kubernetes provider $K8S_PROVIDER_VERSION in $bin" >&2
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || { echo "build-engine: go is not installed" >&2; exit 2; }
command -v python3 >/dev/null || { echo "build-engine: python3 is not installed" >&2; exit 2; }
mkdir -p "$bin"
start=$SECONDS

gomod_of() { go mod download -json "$1" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["GoMod"] if "GoMod" in d else sys.exit(d.get("Error","no GoMod")))'; }
dir_of() { go mod download -json "$1" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["Dir"] if "Dir" in d else sys.exit(d.get("Error","no Dir")))'; }

# --- the CLI ---------------------------------------------------------------
# A wrapper module requiring pkg/v3: a dependency's replace directives do not
# apply, so the wrapper repeats the ones of pkg/go.mod that point at a
# published module (today only atotto/clipboard => tgummerer/clipboard); the
# relative one (sdk/v3 => ../sdk) is covered by pkg's own require of the same
# sdk/v3 release. The list is read from the upstream go.mod, not copied.
if [[ ! -x $bin/pulumi ]]; then
  echo "build-engine: compiling the Pulumi CLI $PULUMI_VERSION (cold: several minutes)" >&2
  mkdir -p "$dir/cli-src"
  (
    cd "$dir/cli-src"
    upstream=$(gomod_of "github.com/pulumi/pulumi/pkg/v3@$PULUMI_VERSION")
    {
      echo "module tritonft.local/pulumicli"
      echo
      grep -E '^go [0-9]' "$upstream"
      echo
      echo "require github.com/pulumi/pulumi/pkg/v3 $PULUMI_VERSION"
      echo
      grep -E '^replace [^ ]+ => [^ .][^ ]* v[0-9]' "$upstream" || true
    } >go.mod
    echo 'package pulumicli' >doc.go
    GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 10 go build -trimpath \
      -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
      -o "$bin/pulumi.partial" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
    mv "$bin/pulumi.partial" "$bin/pulumi"
  )
  echo "build-engine: CLI built at $((SECONDS - start))s" >&2
fi

# --- the Kubernetes provider -------------------------------------------------
# The module zip lacks the two files the upstream main embeds (made by a
# go:generate step from schema.json and terraform-mapping.json, which it does
# hold): this script makes them, with the provider version set in the schema,
# and compiles a main of its own that serves pkg/provider.
if [[ ! -x $bin/pulumi-resource-kubernetes ]]; then
  echo "build-engine: compiling the Kubernetes provider $K8S_PROVIDER_VERSION (cold: several minutes)" >&2
  mkdir -p "$dir/provider-src"
  (
    cd "$dir/provider-src"
    module=github.com/pulumi/pulumi-kubernetes/provider/v4
    upstream=$(gomod_of "$module@$K8S_PROVIDER_MODULE_VERSION")
    src=$(dir_of "$module@$K8S_PROVIDER_MODULE_VERSION")/cmd/pulumi-resource-kubernetes
    {
      echo "module tritonft.local/kubernetesprovider"
      echo
      grep -E '^go [0-9]' "$upstream"
      echo
      echo "require $module $K8S_PROVIDER_MODULE_VERSION"
      echo
      grep -E '^replace [^ ]+ => [^ .][^ ]* v[0-9]' "$upstream" || true
    } >go.mod
    python3 - "$src" "$K8S_PROVIDER_VERSION" <<'PY'
import json, sys
src, version = sys.argv[1], sys.argv[2]
with open(f"{src}/schema.json") as f:
    schema = json.load(f)
schema["version"] = version
with open("schema-embed.json", "w") as f:
    json.dump(schema, f, separators=(",", ":"))
with open(f"{src}/terraform-mapping.json") as f:
    mapping = json.load(f)
with open("terraform-mapping-embed.json", "w") as f:
    json.dump(mapping, f, separators=(",", ":"))
PY
    cat >main.go <<'GO'
// The Kubernetes resource provider of the engine suite: pkg/provider serves
// the schema and mapping that build-engine.sh generated beside this file.
package main

import (
	_ "embed"

	k8sprovider "github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
)

//go:embed schema-embed.json
var schemaJSON []byte

//go:embed terraform-mapping-embed.json
var mappingJSON []byte

// providerVersion is stamped by the linker (-X main.providerVersion=...).
var providerVersion = "0.0.0"

func main() {
	k8sprovider.Serve("kubernetes", providerVersion, schemaJSON, mappingJSON)
}
GO
    GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 10 go build -trimpath \
      -ldflags "-s -w -X main.providerVersion=$K8S_PROVIDER_VERSION -X $module/pkg/version.Version=$K8S_PROVIDER_VERSION" \
      -o "$bin/pulumi-resource-kubernetes.partial" .
    mv "$bin/pulumi-resource-kubernetes.partial" "$bin/pulumi-resource-kubernetes"
  )
  echo "build-engine: Kubernetes provider built at $((SECONDS - start))s" >&2
fi

echo "build-engine: done in $((SECONDS - start))s" >&2
echo "$bin"
