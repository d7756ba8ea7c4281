#!/usr/bin/env bash
# Builds helm from the Go module proxy (its wrapper module cluster/go/helm pins every
# dependency), once: the result is cached outside the work tree under a key of its version
# and module files (cluster/config.sh, LG_HELM_BIN, which is on PATH), so a second run, or a
# fresh clone, builds nothing. The chart's checks (tests/check-chart) and its e2e test
# (tests/tests/helm.rs) run it before they use helm; the cluster itself does not need helm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
. "$here/config.sh"
. "$here/go-env.sh"

if [ -x "$LG_HELM_BIN/helm" ]; then
  say "helm $LG_HELM_VERSION cached in $LG_HELM_BIN"
  exit 0
fi
ensure_go
step "build helm $LG_HELM_VERSION from the Go module proxy (about 3 min cold on two cores)"
t0=$SECONDS
# helm reports its version (`helm version`) from this variable, not from Kubernetes' version
# variables, which it links in with client-go and which keep their defaults.
LG_GO_VERSION_VARIABLES=helm.sh/helm/v4/internal/version.version \
  go_build "$LG_GO_MODULES/helm" "$LG_HELM_BIN" "$LG_LOGS/build-helm.log" "$LG_HELM_VERSION" helm.sh/helm/v4/cmd/helm
say "    built in $((SECONDS - t0)) s into $LG_HELM_BIN"
