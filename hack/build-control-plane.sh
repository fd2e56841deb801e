#!/usr/bin/env bash
# Builds the real control-plane binaries the e2e tests start (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kwok) from the Go module proxy, once per
# machine, into a cache outside the work tree. Prints the bin directory.
#
#   hack/build-control-plane.sh            # build what is missing, print the bin dir
#
# First build on 2 cores, cold Go caches: about 10 minutes (kube-apiserver alone ~6);
# afterwards it returns at once, without needing Go.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.8}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
HELM_VERSION="${HELM_VERSION:-v3.17.3}"
CACHE="${ASYNCSCHED_CACHE:-$HOME/.cache/asyncsched}"
BIN="$CACHE/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
export GOPATH="$CACHE/go" GOCACHE="$CACHE/go-build" GOFLAGS="-mod=mod" GOTOOLCHAIN=local
export CGO_ENABLED=0
mkdir -p "$BIN"

STAGES=(node-initialize.yaml node-heartbeat-with-lease.yaml pod-ready.yaml pod-complete.yaml pod-delete.yaml)
stages_complete() {
  local f
  for f in "${STAGES[@]}"; do [ -f "$BIN/stages/$f" ] || return 1; done
  for f in "$BIN"/stages/*; do grep -q '^kind: Stage$' "$f" || return 1; done
}
all_built() {
  local name
  for name in etcd kwok kube-apiserver kube-controller-manager kube-scheduler helm; do
    [ -x "$BIN/$name" ] || return 1
  done
  stages_complete
}
# Everything cached: no Go toolchain needed.
if all_built; then echo "$BIN"; exit 0; fi

# One build at a time per cache: two test processes asking at once (a chart test and
# the e2e bed, say) must not race on the same temporary files.
exec 9>"$CACHE/.build.lock"
flock 9
if all_built; then echo "$BIN"; exit 0; fi

if ! command -v go >/dev/null 2>&1; then
  for candidate in /usr/local/go/bin /usr/lib/go/bin; do
    [ -x "$candidate/go" ] && PATH="$candidate:$PATH"
  done
fi
command -v go >/dev/null 2>&1 || { echo "build-control-plane: no Go toolchain (install golang-go)" >&2; exit 1; }

log() { echo "build-control-plane: $*" >&2; }

build_kubernetes() {
  local work="$CACHE/wrap/kubernetes-$K8S_VERSION"
  mkdir -p "$work"
  local staging="v0${K8S_VERSION#v1}"
  ( cd "$work"
    if [ ! -f go.mod ]; then
      log "resolving k8s.io/kubernetes $K8S_VERSION"
      local gomod
      gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
      {
        echo "module asyncsched.test/kubernetes-wrapper"
        echo
        echo "go 1.25"
        echo
        echo "require k8s.io/kubernetes $K8S_VERSION"
        echo
        grep -E '^\s*k8s.io/[a-z0-9-]+ => ./staging/' "$gomod" \
          | awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
      } > go.mod
      cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
      go mod tidy -e >/dev/null 2>&1 || true
    fi
    for name in kube-apiserver kube-controller-manager kube-scheduler; do
      if [ ! -x "$BIN/$name" ]; then
        log "building $name (slow the first time)"
        go build -trimpath -ldflags="-s -w" -o "$BIN/$name.tmp" "k8s.io/kubernetes/cmd/$name"
        mv "$BIN/$name.tmp" "$BIN/$name"
      fi
    done )
}

build_etcd() {
  [ -x "$BIN/etcd" ] && return
  local work="$CACHE/wrap/etcd-$ETCD_VERSION"
  mkdir -p "$work"
  ( cd "$work"
    if [ ! -f go.mod ]; then
      cat > go.mod <<MOD
module asyncsched.test/etcd-wrapper

go 1.25

require go.etcd.io/etcd/server/v3 $ETCD_VERSION

replace go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 $ETCD_VERSION
replace go.etcd.io/etcd/client/pkg/v3 => go.etcd.io/etcd/client/pkg/v3 $ETCD_VERSION
replace go.etcd.io/etcd/client/v3 => go.etcd.io/etcd/client/v3 $ETCD_VERSION
replace go.etcd.io/etcd/pkg/v3 => go.etcd.io/etcd/pkg/v3 $ETCD_VERSION
MOD
      cat > tools.go <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
      go mod tidy -e >/dev/null 2>&1 || true
    fi
    log "building etcd"
    go build -trimpath -ldflags="-s -w" -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3
    mv "$BIN/etcd.tmp" "$BIN/etcd" )
}

build_kwok() {
  if [ ! -x "$BIN/kwok" ]; then
    log "building kwok"
    GOBIN="$BIN" go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  fi
  stages_complete && return
  # KWOK refuses to start without stages. Copy only the Stage documents of the
  # node/fast, node/heartbeat-with-lease and pod/fast sets (not kustomization.yaml,
  # README.md or testdata).
  local moddir
  moddir=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  local src="$moddir/kustomize/stage"
  rm -rf "$BIN/stages.tmp" && mkdir -p "$BIN/stages.tmp"
  local f
  for f in "$src"/node/fast/*.yaml "$src"/node/heartbeat-with-lease/*.yaml "$src"/pod/fast/*.yaml; do
    if grep -q '^kind: Stage$' "$f"; then cp "$f" "$BIN/stages.tmp/"; fi
  done
  chmod -R u+w "$BIN/stages.tmp"
  rm -rf "$BIN/stages" && mv "$BIN/stages.tmp" "$BIN/stages"
  stages_complete || { echo "build-control-plane: KWOK stages missing in $src" >&2; exit 1; }
}

build_helm() {
  # For the test that renders the Helm chart and compares it with deploy/scheduler.
  [ -x "$BIN/helm" ] && return
  log "building helm"
  GOBIN="$BIN" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}

build_etcd
build_kwok
build_kubernetes
build_helm
echo "$BIN"
