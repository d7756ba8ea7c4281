#!/usr/bin/env bash
# Builds kwok from the Go module proxy (its wrapper module cluster/go/kwok pins every
# dependency), once: the result is cached outside the work tree under a key of its version
# and module files (cluster/config.sh, LG_KWOK_BIN), so a second run, or a fresh clone,
# builds nothing. `lifeguard-cluster fake-nodes` runs it before it starts kwok; the cluster
# itself does not need kwok.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
. "$here/config.sh"
. "$here/go-env.sh"

if [ -x "$LG_KWOK_BIN/kwok" ]; then
  say "kwok $LG_KWOK_VERSION cached in $LG_KWOK_BIN"
  exit 0
fi
ensure_go
step "build kwok $LG_KWOK_VERSION from the Go module proxy (about 3 min cold on two cores)"
t0=$SECONDS
# kwok reports its version from this variable, not from Kubernetes' version variables, which
# it links in with client-go and which keep their defaults.
LG_GO_VERSION_VARIABLES=sigs.k8s.io/kwok/pkg/consts.Version \
  go_build "$LG_GO_MODULES/kwok" "$LG_KWOK_BIN" "$LG_LOGS/build-kwok.log" "$LG_KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
say "    built in $((SECONDS - t0)) s into $LG_KWOK_BIN"
