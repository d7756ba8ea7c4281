#!/usr/bin/env bash
# Builds kubemark (cmd/kubemark: the hollow node, a real kubelet over a fake container
# runtime) from the same Kubernetes 1.20.2 source package as build-k8s.sh, once. Cached
# apart from the server binaries, keyed by the package version and LG_KUBEMARK_BUILD, so
# adding it never rebuilds those.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
. "$here/config.sh"
. "$here/k8s-source.sh"

if [ -x "$LG_KUBEMARK_BIN/kubemark" ]; then
  say "kubemark cached in $LG_KUBEMARK_BIN"
  exit 0
fi
log="$LG_LOGS/build-kubemark.log"
work="$LG_CACHE/kubemark-src"
k8s_source_prepare "$work" "$log"
# The hollow node of 1.20 hardcodes 110 pods per node (upstream made it a flag later, as
# --max-pods); a flag lets a few hollow nodes hold the thousands of pods a benchmark starts.
step "hollow node: --max-pods flag"
hollow="$work/src/cmd/kubemark/hollow-node.go"
sed -i -e 's/^\tRegisterWithTaints   \[\]core.Taint$/&\n\tMaxPods              int/' \
  -e 's/^\(\tfs.Var(utiltaints.NewTaintsVar(&c.RegisterWithTaints).*\)$/\1\n\tfs.IntVar(\&c.MaxPods, "max-pods", maxPods, "Number of pods this hollow node can run.")/' \
  -e 's/^\(\t\tMaxPods: *\)maxPods,$/\1c.MaxPods,/' "$hollow"
[ "$(grep -c 'MaxPods' "$hollow")" = 3 ] && grep -q '"max-pods"' "$hollow" ||
  die "patching $hollow for --max-pods failed (the source changed?)"
# Without TLS options the hollow kubelet serves its API (pods, exec, run) as plain HTTP
# without authentication; on 0.0.0.0, as upstream binds it, anyone who reaches the machine
# could read pod specs. Loopback is enough: nothing real runs behind it.
step "hollow kubelet: serve on loopback only"
kubelet_go="$work/src/pkg/kubemark/hollow_kubelet.go"
sed -i 's|^\tc.Address = "0.0.0.0" /\* bind address \*/$|\tc.Address = "127.0.0.1" /* bind address */|' "$kubelet_go"
grep -q '^.c.Address = "127.0.0.1"' "$kubelet_go" ||
  die "patching $kubelet_go for a loopback address failed (the source changed?)"
# kubemark 1.20's fake OS (pkg/kubelet/container/testing) keeps the files its pod workers
# create in a map without a lock; with a few hundred pods starting on one hollow node,
# two workers wrote at once and the node died ("fatal error: concurrent map writes" in
# FakeOS.Create, during a 1,000-pod mass start). Later releases lock it too.
step "hollow kubelet: lock the fake OS"
(cd "$work/src" && git apply --verbose "$here/kubemark-fakeos-lock.patch") >>"$log" 2>&1 ||
  die "patching the fake OS failed (the source changed?)" "$log"
# kubemark 1.20 hardcodes the hollow kubelet's pod sync to every 10 s, six times as often
# as a real kubelet's default (1 min); each sync of each pod is a round of calls into the
# fake runtime. A --sync-frequency flag (default kept at kubemark's 10 s) lets
# cluster/hollow.sh choose; at 1 min, hollow nodes holding pods take 15 % less CPU
# (docs/local-cluster.md, "Cost").
# Applied after the --max-pods edit above, whose lines it has as context.
step "hollow node: --sync-frequency flag"
(cd "$work/src" && git apply --verbose "$here/kubemark-sync-frequency.patch") >>"$log" 2>&1 ||
  die "patching the hollow node for --sync-frequency failed (the source changed?)" "$log"
step "build kubemark (several minutes on two cores)"
k8s_source_make "$work" "$log" cmd/kubemark
mkdir -p "$LG_KUBEMARK_BIN"
install -m 0755 "$work/src/_output/bin/kubemark" "$LG_KUBEMARK_BIN/kubemark"
rm -rf "$work"
say "kubemark built into $LG_KUBEMARK_BIN"
