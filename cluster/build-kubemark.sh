#!/usr/bin/env bash
# Builds kubemark (cmd/kubemark: the hollow node, a real kubelet over a fake container
# runtime) from the same Kubernetes module as the cluster (cluster/go/kubernetes), once,
# with two changes made through `go build -overlay` (the module cache stays as published):
#   - the hollow kubelet serves its API on loopback: upstream binds 0.0.0.0 without TLS
#     options, so anyone who reaches the machine could read pod specs, and nothing real
#     runs behind it;
#   - a --sync-frequency flag: upstream hardcodes a pod sync every 10 s, six times as often
#     as a real kubelet's default (1 min); cluster/hollow.sh chooses (docs/local-cluster.md,
#     "Cost").
# Each edit is checked to have applied, so a new upstream source fails the build loudly.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
. "$here/config.sh"
. "$here/go-env.sh"

if [ -x "$LG_KUBEMARK_BIN/kubemark" ]; then
  say "kubemark cached in $LG_KUBEMARK_BIN"
  exit 0
fi
log="$LG_LOGS/build-kubemark.log"
ensure_go
src=$(cd "$LG_GO_MODULES/kubernetes" && GOFLAGS=-mod=readonly "$LG_GO" list -m -f '{{.Dir}}' k8s.io/kubernetes) ||
  die "cannot find the k8s.io/kubernetes module's source"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

kubelet_go="$src/pkg/kubemark/hollow_kubelet.go"
node_go="$src/cmd/kubemark/app/hollow_node.go"
sed -e 's|^\tc.Address = "0.0.0.0" /\* bind address \*/$|\tc.Address = "127.0.0.1" /* bind address */|' \
  -e 's|^\(\tMaxPods  *int\)$|\1\n\tSyncFrequency time.Duration|' \
  -e 's|^\tc.SyncFrequency.Duration = 10 \* time.Second$|\tc.SyncFrequency.Duration = opt.SyncFrequency|' \
  "$kubelet_go" >"$work/hollow_kubelet.go"
sed -e 's|^\(\tMaxPods  *int\)$|\1\n\tSyncFrequency time.Duration|' \
  -e 's|^\(\tfs.IntVar(&c.MaxPods, "max-pods".*\)$|\1\n\tfs.DurationVar(\&c.SyncFrequency, "sync-frequency", 10*time.Second, "How often the hollow kubelet syncs every pod it runs (a real kubelet'"'"'s default is 1m).")|' \
  -e 's|^\(\t\tMaxPods: *c.MaxPods,\)$|\1\n\t\tSyncFrequency: c.SyncFrequency,|' \
  "$node_go" >"$work/hollow_node.go"
grep -q '^.c.Address = "127.0.0.1"' "$work/hollow_kubelet.go" &&
  grep -q '^.c.SyncFrequency.Duration = opt.SyncFrequency$' "$work/hollow_kubelet.go" &&
  grep -q '^.SyncFrequency time.Duration$' "$work/hollow_kubelet.go" &&
  [ "$(grep -c 'SyncFrequency' "$work/hollow_node.go")" = 4 ] ||
  die "editing kubemark's source failed (the upstream source changed?); see $work"
printf '{"Replace": {"%s": "%s", "%s": "%s"}}\n' "$kubelet_go" "$work/hollow_kubelet.go" \
  "$node_go" "$work/hollow_node.go" >"$work/overlay.json"

step "build kubemark $LG_K8S_VERSION (a few minutes on two cores after the cluster's binaries)"
LG_GO_BUILD_FLAGS="-overlay=$work/overlay.json" go_build "$LG_GO_MODULES/kubernetes" "$LG_KUBEMARK_BIN" "$log" \
  "$LG_K8S_VERSION" k8s.io/kubernetes/cmd/kubemark
say "kubemark built into $LG_KUBEMARK_BIN"
