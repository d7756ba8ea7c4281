#!/usr/bin/env bash
# Builds the Kubernetes 1.20.2 server binaries from Debian bookworm's source package,
# once: the result is cached outside the work tree, keyed by the package version, because
# the build takes ~10 minutes on two cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"

. "$here/config.sh"
k8s_deb_version=$LG_K8S_VERSION
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

step "enable bookworm source packages"
if ! grep -rqs '^Types: deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
  cat >/etc/apt/sources.list.d/lifeguard-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
apt_install golang-1.19-go rsync dpkg-dev make golang-github-modern-go-reflect2-dev
# The source index may predate the deb-src entry even when every package was installed.
step "apt-get update (source index)"
apt-get update >>"$LG_LOGS/apt.log" 2>&1 || die "apt-get update failed" "$LG_LOGS/apt.log"

work="$LG_CACHE/k8s-src"
step "download kubernetes source package $k8s_deb_version"
rm -rf "$work" && mkdir -p "$work"
(cd "$work" && apt-get source --download-only "kubernetes=$k8s_deb_version") >>"$LG_LOGS/build-k8s.log" 2>&1 ||
  die "apt-get source kubernetes=$k8s_deb_version failed" "$LG_LOGS/build-k8s.log"
orig=$(ls "$work"/kubernetes_*.orig.tar.* | head -n1)
step "unpack $(basename "$orig")"
mkdir -p "$work/src"
tar -xf "$orig" -C "$work/src" --strip-components=1

# Kubernetes 1.20 vendors reflect2 1.0.1, whose map iteration crashes binaries built with
# Go >= 1.18 (the API server dies with "fatal error: fault" in mapiternext on the first
# watch). Debian's reflect2 1.0.2 is the upstream fix and is API-compatible.
step "replace vendored reflect2 1.0.1 with Debian's 1.0.2"
reflect2_src=/usr/share/gocode/src/github.com/modern-go/reflect2
[ -f "$reflect2_src/reflect2.go" ] || die "reflect2 sources missing at $reflect2_src"
rm -rf "$work/src/vendor/github.com/modern-go/reflect2"
mkdir -p "$work/src/vendor/github.com/modern-go/reflect2"
find "$reflect2_src" -maxdepth 1 -name '*.go' ! -name '*_test.go' -exec cp {} "$work/src/vendor/github.com/modern-go/reflect2/" \;

step "build kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy (about 12 min)"
(
  cd "$work/src"
  export PATH="/usr/lib/go-1.19/bin:$PATH" GOFLAGS=-mod=vendor GOCACHE="$LG_CACHE/go-build"
  make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler cmd/kubelet cmd/kube-proxy"
) >>"$LG_LOGS/build-k8s.log" 2>&1 || die "kubernetes build failed" "$LG_LOGS/build-k8s.log"

mkdir -p "$bin_dir"
for b in "${wanted[@]}"; do
  install -m 0755 "$work/src/_output/bin/$b" "$bin_dir/$b"
done
# The pause source is all the rest of the tree is needed for; keep it beside the binaries.
install -m 0644 "$work/src/build/pause/linux/pause.c" "$bin_dir/../pause.c"
rm -rf "$work"
say "kubernetes server binaries built into $bin_dir"
