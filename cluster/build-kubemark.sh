#!/usr/bin/env bash
# Builds kubemark (cmd/kubemark: the hollow node, a real kubelet over a fake container
# runtime) from the same Kubernetes module as the cluster (cluster/go/kubernetes), once,
# with two changes made to a copy of the module's source, which a copy of the wrapper module
# replaces k8s.io/kubernetes with (the module cache stays as published):
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
step "copy the k8s.io/kubernetes module's source to edit kubemark"
cp -r "$src" "$work/kubernetes"
chmod -R u+w "$work/kubernetes"
kubelet_go="$work/kubernetes/pkg/kubemark/hollow_kubelet.go"
node_go="$work/kubernetes/cmd/kubemark/app/hollow_node.go"
sed -i -e 's|^\tc.Address = "0.0.0.0" /\* bind address \*/$|\tc.Address = "127.0.0.1" /* bind address */|' \
  -e 's|^\(\tMaxPods  *int\)$|\1\n\tSyncFrequency time.Duration|' \
  -e 's|^\tc.SyncFrequency.Duration = 10 \* time.Second$|\tc.SyncFrequency.Duration = opt.SyncFrequency|' \
  "$kubelet_go"
sed -i -e 's|^\(\tMaxPods  *int\)$|\1\n\tSyncFrequency time.Duration|' \
  -e 's|^\(\tfs.IntVar(&c.MaxPods, "max-pods".*\)$|\1\n\tfs.DurationVar(\&c.SyncFrequency, "sync-frequency", 10*time.Second, "How often the hollow kubelet syncs every pod it runs (a real kubelet'"'"'s default is 1m).")|' \
  -e 's|^\(\t\tMaxPods: *c.MaxPods,\)$|\1\n\t\tSyncFrequency: c.SyncFrequency,|' \
  "$node_go"
grep -q '^.c.Address = "127.0.0.1"' "$kubelet_go" &&
  grep -q '^.c.SyncFrequency.Duration = opt.SyncFrequency$' "$kubelet_go" &&
  grep -q '^.SyncFrequency time.Duration$' "$kubelet_go" &&
  [ "$(grep -c 'SyncFrequency' "$node_go")" = 3 ] ||
  die "editing kubemark's source failed (the upstream source changed?)"
mkdir -p "$work/module"
cp "$LG_GO_MODULES/kubernetes/go.mod" "$LG_GO_MODULES/kubernetes/go.sum" "$work/module/"
(cd "$work/module" && "$LG_GO" mod edit -replace "k8s.io/kubernetes=$work/kubernetes") ||
  die "pointing the module copy at the edited source failed"

step "build kubemark $LG_K8S_VERSION (about 5 minutes on two cores after the cluster's binaries)"
go_build "$work/module" "$LG_KUBEMARK_BIN" "$log" "$LG_K8S_VERSION" k8s.io/kubernetes/cmd/kubemark
say "kubemark built into $LG_KUBEMARK_BIN"
