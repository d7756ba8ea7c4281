# The Kubernetes 1.20.2 source tree from Debian bookworm's source package, patched so it
# builds and runs with Go 1.19. Sourced by build-k8s.sh and build-kubemark.sh, which each
# unpack their own copy (so the two builds never share a tree) and delete it afterwards.

# k8s_source_prepare WORK LOG: unpack the source package into WORK/src, with everything
# the build needs installed.
k8s_source_prepare() {
  local work=$1 log=$2
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

  step "download kubernetes source package $LG_K8S_VERSION"
  rm -rf "$work" && mkdir -p "$work"
  (cd "$work" && apt-get source --download-only "kubernetes=$LG_K8S_VERSION") >>"$log" 2>&1 ||
    die "apt-get source kubernetes=$LG_K8S_VERSION failed" "$log"
  local orig
  orig=$(ls "$work"/kubernetes_*.orig.tar.* | head -n1)
  step "unpack $(basename "$orig")"
  mkdir -p "$work/src"
  tar -xf "$orig" -C "$work/src" --strip-components=1

  # Kubernetes 1.20 vendors reflect2 1.0.1, whose map iteration crashes binaries built with
  # Go >= 1.18 (the API server dies with "fatal error: fault" in mapiternext on the first
  # watch). Debian's reflect2 1.0.2 is the upstream fix and is API-compatible.
  step "replace vendored reflect2 1.0.1 with Debian's 1.0.2"
  local reflect2_src=/usr/share/gocode/src/github.com/modern-go/reflect2
  [ -f "$reflect2_src/reflect2.go" ] || die "reflect2 sources missing at $reflect2_src"
  rm -rf "$work/src/vendor/github.com/modern-go/reflect2"
  mkdir -p "$work/src/vendor/github.com/modern-go/reflect2"
  find "$reflect2_src" -maxdepth 1 -name '*.go' ! -name '*_test.go' -exec cp {} "$work/src/vendor/github.com/modern-go/reflect2/" \;
}

# k8s_source_make WORK LOG TARGETS: `make WHAT=TARGETS` in the unpacked tree with Go 1.19.
k8s_source_make() {
  local work=$1 log=$2 targets=$3
  # The make rules set GOCACHE to _output/local/go/cache inside the tree, which is deleted
  # after the build: point it at a cache outside, so the next build (kubemark after the
  # server binaries share most packages) compiles only what changed.
  mkdir -p "$LG_CACHE/go-build" "$work/src/_output/local/go"
  ln -sfn "$LG_CACHE/go-build" "$work/src/_output/local/go/cache"
  (
    cd "$work/src"
    export PATH="/usr/lib/go-1.19/bin:$PATH" GOFLAGS=-mod=vendor
    make WHAT="$targets"
  ) >>"$log" 2>&1 || die "kubernetes build ($targets) failed" "$log"
}
