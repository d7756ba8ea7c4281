#!/usr/bin/env bash
# Builds Karpenter with its kwok cloud provider (sigs.k8s.io/karpenter/kwok: a real Karpenter
# whose instances are kwok's fake nodes) from the Go module proxy (its wrapper module
# cluster/go/karpenter pins every dependency), once: the result is cached outside the work
# tree under a key of its version and module files (cluster/config.sh, LG_KARPENTER_BIN), so
# a second run, or a fresh clone, builds nothing. Its CRDs come from the same module (the
# module cache keeps it). The e2e test tests/tests/karpenter.rs runs it before it starts
# Karpenter (cluster/karpenter.sh); the cluster itself does not need Karpenter.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
. "$here/config.sh"
. "$here/go-env.sh"

if [ -x "$LG_KARPENTER_BIN/kwok" ] && [ -d "$LG_KARPENTER_BIN/crds" ]; then
  say "karpenter $LG_KARPENTER_VERSION cached in $LG_KARPENTER_BIN"
  exit 0
fi
# Karpenter's go.mod asks for go 1.26.9; the toolchain module serves the next approved Go.
LG_GO_MIN=$LG_KARPENTER_GO_MIN
LG_GO_TOOLCHAIN_MODULE=golang.org/toolchain@v0.0.1-go$LG_GO_MIN.linux-amd64
ensure_go
step "build karpenter $LG_KARPENTER_VERSION (kwok provider) from the Go module proxy (measured 6.6 min cold on two cores shared with another Go build; 4 CPU-minutes)"
t0=$SECONDS
LG_GO_VERSION_VARIABLES=sigs.k8s.io/karpenter/pkg/operator.Version \
  go_build "$LG_GO_MODULES/karpenter" "$LG_KARPENTER_BIN" "$LG_LOGS/build-karpenter.log" "$LG_KARPENTER_VERSION" sigs.k8s.io/karpenter/kwok
# The CRDs of exactly the version built (NodePool, NodeClaim, NodeOverlay and the kwok
# provider's KWOKNodeClass), from the module the build downloaded.
src=$(cd "$LG_GO_MODULES/karpenter" && GOFLAGS=-mod=readonly "$LG_GO" list -m -f '{{.Dir}}' sigs.k8s.io/karpenter) ||
  die "cannot find the karpenter module's directory" "$LG_LOGS/build-karpenter.log"
mkdir -p "$LG_KARPENTER_BIN/crds"
cp "$src"/kwok/charts/crds/*.yaml "$src"/kwok/apis/crds/*.yaml "$LG_KARPENTER_BIN/crds/"
say "    built in $((SECONDS - t0)) s into $LG_KARPENTER_BIN"
