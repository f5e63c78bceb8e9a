#!/usr/bin/env bash
# Builds (or reuses from the cache) the real Kubernetes control plane the k8s
# suite runs: kube-apiserver, kube-controller-manager, kube-scheduler and
# kubectl from the k8s.io/kubernetes Go module, and kwok from sigs.k8s.io/kwok,
# all through the Go module proxy. Prints the bin directory on its last line.
#
# Usage: build-control-plane.sh <kubernetes minor, e.g. 1.35>
# Cache: ${TRITON_FT_CACHE:-~/.cache/triton-ft}/k8s/<version>/{bin,stages}. A second run
# on the same machine returns at once; a cold run compiles (~7-8 min on 2 cores).
set -euo pipefail

minor=${1:?usage: build-control-plane.sh <minor, e.g. 1.35>}

# minor -> the patch release we pin (each exists on proxy.golang.org; check with
# `go list -m -versions k8s.io/kubernetes`). The suite follows the stack's
# default EKS minor, so a new default minor needs one line here.
# Only patches whose whole staging set resolves through the proxy and
# compiles are listed (v1.31.14 does not: k8s.io/dynamic-resource-allocation
# v0.31.14 is missing from the checksum database).
declare -A K8S_PATCH=(
  [1.35]=v1.35.4
)
# kwok release used to make the fake nodes Ready (sigs.k8s.io/kwok tag).
# v0.7.0 (client-go 0.33) lists and watches plainly; v0.8.0's client-go asks
# for streaming watch-lists, which an apiserver on Debian's etcd 3.4 (no
# watch-progress requests) refuses, so its pods then lag by minutes.
KWOK_VERSION=v0.7.0
# etcd (go.etcd.io/etcd/server/v3 tag). 3.5 answers watch-progress requests,
# which the apiserver needs to serve streaming watch-lists; without them (as
# with Debian's etcd 3.4) kwok's watches keep failing and pods lag by minutes.
ETCD_VERSION=v3.5.35

version=${K8S_PATCH[$minor]:-}
if [[ -z $version ]]; then
  echo "build-control-plane: no pinned Kubernetes patch for minor $minor (known: ${!K8S_PATCH[*]}); add it to K8S_PATCH" >&2
  exit 2
fi
major=${version#v}; major=${major%%.*}
staging=v0.${version#v1.}   # k8s.io/api etc. are tagged v0.<minor>.<patch>

cache=${TRITON_FT_CACHE:-$HOME/.cache/triton-ft}
dir=$cache/k8s/$version
bin=$dir/bin
bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl kwok etcd)
# kwok's lifecycle stages (its published "fast" node/pod stages and the node
# lease heartbeat), read from the kwok module as the proxy serves it.
stages=(node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease
  pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete)

# One build at a time per version (CI starts one in the background; the suite
# then waits here for it instead of compiling a second time).
mkdir -p "$dir"
exec 8>"$dir/.lock"
flock 8

complete=1
for b in "${bins[@]}"; do [[ -x $bin/$b ]] || complete=0; done
for st in "${stages[@]}"; do [[ -f $dir/stages/${st##*/}.yaml ]] || complete=0; done
[[ $(cat "$dir/kwok.version" 2>/dev/null) == "$KWOK_VERSION" ]] || complete=0
[[ $(cat "$dir/etcd.version" 2>/dev/null) == "$ETCD_VERSION" ]] || complete=0
if ((complete)); then
  echo "build-control-plane: cached $version + kwok $KWOK_VERSION + etcd $ETCD_VERSION in $bin" >&2
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || { echo "build-control-plane: go is not installed" >&2; exit 2; }
mkdir -p "$bin" "$dir/src"
start=$SECONDS

# A wrapper module requiring k8s.io/kubernetes: its go.mod replaces every
# staging module with ./staging/src/..., which a dependent module cannot use,
# so the wrapper replaces each with its published v0.<minor>.<patch> tag. The
# list is read from the upstream go.mod itself rather than copied.
cd "$dir/src"
upstream_gomod=$(go mod download -json "k8s.io/kubernetes@$version" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
{
  echo "module tritonft.local/controlplane"
  echo
  grep -E '^go [0-9]' "$upstream_gomod"
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  echo "replace ("
  grep -oE '^\s*k8s\.io/[A-Za-z0-9._/-]+ => \./staging/src/k8s\.io/[A-Za-z0-9._/-]+' "$upstream_gomod" |
    awk -v v="$staging" '{print "\t" $1 " => " $1 " " v}'
  echo ")"
} >go.mod
echo 'package controlplane' >doc.go

# Version stamping: without it the server reports v0.0.0-master and kubectl
# refuses to talk to it.
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=${minor#*.}"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

k8s_complete=1
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do [[ -x $bin/$b ]] || k8s_complete=0; done
if ((!k8s_complete)); then
  echo "build-control-plane: compiling Kubernetes $version (cold: several minutes)" >&2
  GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$bin/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kubectl
  echo "build-control-plane: Kubernetes built in $((SECONDS - start))s" >&2
fi

if [[ ! -x $bin/kwok || $(cat "$dir/kwok.version" 2>/dev/null) != "$KWOK_VERSION" ]]; then
  echo "build-control-plane: compiling kwok $KWOK_VERSION" >&2
  GOBIN=$bin CGO_ENABLED=0 nice -n 10 go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
fi
if [[ ! -x $bin/etcd || $(cat "$dir/etcd.version" 2>/dev/null) != "$ETCD_VERSION" ]]; then
  # etcd's own go.mod replaces its sibling modules, so `go install pkg@version`
  # refuses it: a wrapper module requires it instead.
  echo "build-control-plane: compiling etcd $ETCD_VERSION" >&2
  mkdir -p "$dir/etcd-src"
  (
    cd "$dir/etcd-src"
    printf 'module tritonft.local/etcd\n\ngo 1.23\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >go.mod
    echo 'package etcd' >doc.go
    GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3
  )
  echo "$ETCD_VERSION" >"$dir/etcd.version"
fi

kwok_src=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
mkdir -p "$dir/stages"
for st in "${stages[@]}"; do cp "$kwok_src/kustomize/stage/$st.yaml" "$dir/stages/${st##*/}.yaml"; done
echo "$KWOK_VERSION" >"$dir/kwok.version"
echo "build-control-plane: done in $((SECONDS - start))s" >&2
echo "$bin"
