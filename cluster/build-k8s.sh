#!/usr/bin/env bash
# Builds the local cluster's binaries from the Go module proxy, each from its wrapper module
# in cluster/go/, once: Kubernetes (servers, kube-proxy, kubelet, kubectl), the skew node's
# older kubelet, etcd and containerd (with its runc shim and ctr). Each result is cached
# outside the work tree under a key of its version and its module files (cluster/config.sh),
# so a second run, or a fresh clone, builds nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
. "$here/config.sh"
. "$here/go-env.sh"

log="$LG_LOGS/build-k8s.log"
k8s=k8s.io/kubernetes/cmd

# have DIR BINARY...: every BINARY is built in DIR.
have() {
  local dir=$1 b
  shift
  for b in "$@"; do [ -x "$dir/$b" ] || return 1; done
}

# build NAME VERSION MODULE OUT_DIR MINUTES PACKAGE...: build unless cached.
build() {
  local name=$1 version=$2 module=$3 out=$4 minutes=$5
  shift 5
  local bins=() p
  for p in "$@"; do bins+=("${p##*/}"); done
  if have "$out" "${bins[@]}"; then
    say "$name $version cached in $out"
    return 0
  fi
  [ -n "${LG_GO:-}" ] || ensure_go
  step "build $name $version from the Go module proxy (${bins[*]}; about $minutes min cold on two cores)"
  local t0=$SECONDS
  go_build "$LG_GO_MODULES/$module" "$out" "$log" "$version" "$@"
  say "    built in $((SECONDS - t0)) s into $out"
}

build etcd "$LG_ETCD_VERSION" etcd "$LG_ETCD_BIN" 2 lifeguard.dev/local-cluster/etcd
build containerd "$LG_CONTAINERD_VERSION" containerd "$LG_CONTAINERD_BIN" 4 \
  github.com/containerd/containerd/v2/cmd/containerd \
  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
  github.com/containerd/containerd/v2/cmd/ctr
build kubernetes "$LG_K8S_VERSION" kubernetes "$LG_K8S_BIN" 20 \
  "$k8s/kube-apiserver" "$k8s/kube-controller-manager" "$k8s/kube-scheduler" \
  "$k8s/kubelet" "$k8s/kube-proxy" "$k8s/kubectl"
build "the skew node's kubelet" "$LG_KUBELET_OLD_VERSION" kubelet-old "$LG_KUBELET_OLD_BIN" 8 "$k8s/kubelet"

# The pod sandbox's source, for the pause image (cluster/images.sh), from the same module.
if [ ! -s "$LG_K8S_BIN/pause.c" ]; then
  [ -n "${LG_GO:-}" ] || ensure_go
  src=$(cd "$LG_GO_MODULES/kubernetes" && GOFLAGS=-mod=readonly "$LG_GO" list -m -f '{{.Dir}}' k8s.io/kubernetes) ||
    die "cannot find the k8s.io/kubernetes module's source"
  install -m 0644 "$src/build/pause/linux/pause.c" "$LG_K8S_BIN/pause.c"
fi
