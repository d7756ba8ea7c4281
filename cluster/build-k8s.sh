#!/usr/bin/env bash
# Builds the Kubernetes 1.20.2 server binaries from Debian bookworm's source package,
# once: the result is cached outside the work tree, keyed by the package version, because
# the build takes ~10 minutes on two cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
. "$here/config.sh"
. "$here/k8s-source.sh"
bin_dir=$LG_K8S_BIN
wanted=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)

have_all() {
  local b
  for b in "${wanted[@]}"; do [ -x "$bin_dir/$b" ] || return 1; done
}

if have_all; then
  say "kubernetes server binaries cached in $bin_dir"
  exit 0
fi

work="$LG_CACHE/k8s-src"
k8s_source_prepare "$work" "$LG_LOGS/build-k8s.log"
step "build kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy (about 12 min)"
k8s_source_make "$work" "$LG_LOGS/build-k8s.log" \
  "cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler cmd/kubelet cmd/kube-proxy"

mkdir -p "$bin_dir"
for b in "${wanted[@]}"; do
  install -m 0755 "$work/src/_output/bin/$b" "$bin_dir/$b"
done
# The pause source is all the rest of the tree is needed for; keep it beside the binaries.
install -m 0644 "$work/src/build/pause/linux/pause.c" "$bin_dir/../pause.c"
rm -rf "$work"
say "kubernetes server binaries built into $bin_dir"
