# Go for building the local cluster's binaries (Kubernetes, etcd, containerd, kubemark)
# from the Go module proxy. lifeguard itself is Rust; Go builds only the test bed.
# Sourced by build-k8s.sh and build-kubemark.sh.
#
# Modules and compiled packages are cached under $LG_CACHE/go, outside the work tree, so a
# second build (or a fresh clone) compiles nothing it compiled before.

# The oldest Go that builds every module the test bed pins (containerd 2.3 asks for it).
LG_GO_MIN=1.26.8
LG_GO_TOOLCHAIN_MODULE=golang.org/toolchain@v0.0.1-go$LG_GO_MIN.linux-amd64

go_version_of() { "$1" env GOVERSION 2>/dev/null | sed 's/^go//'; }

# version_at_least A B: A >= B, for dotted versions.
version_at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

# ensure_go: sets LG_GO to a go binary at least $LG_GO_MIN. The one on PATH if it is new
# enough; otherwise Debian's go (too old itself) downloads the toolchain, which the module
# proxy serves as a module, into the cache.
ensure_go() {
  export GOMODCACHE="$LG_CACHE/go/mod" GOCACHE="$LG_CACHE/go/build" GOTOOLCHAIN=local GOFLAGS=-mod=mod
  mkdir -p "$GOMODCACHE" "$GOCACHE"
  local found v
  found=$(command -v go || true)
  if [ -n "$found" ]; then
    v=$(go_version_of "$found")
    if [ -n "$v" ] && version_at_least "$v" "$LG_GO_MIN"; then
      LG_GO=$found
      return 0
    fi
  fi
  local cached="$GOMODCACHE/$LG_GO_TOOLCHAIN_MODULE/bin/go"
  if [ ! -x "$cached" ] || ! "$cached" version >/dev/null 2>&1; then
    apt_install golang-1.19-go ca-certificates
    step "download Go $LG_GO_MIN (the toolchain module) with Debian's Go"
    local tmp
    tmp=$(mktemp -d)
    # `go mod download` needs a module to run in, even for a module it only fetches.
    (cd "$tmp" && printf 'module bootstrap\n\ngo 1.19\n' >go.mod &&
      /usr/lib/go-1.19/bin/go mod download "$LG_GO_TOOLCHAIN_MODULE") >>"$LG_LOGS/build-go.log" 2>&1 ||
      die "downloading $LG_GO_TOOLCHAIN_MODULE failed" "$LG_LOGS/build-go.log"
    rm -rf "$tmp"
    # A module zip keeps no file modes: set the executable bits, as the go command does
    # for a toolchain it switches to.
    local root=${cached%/bin/go}
    [ -f "$cached" ] || die "the Go toolchain module has no bin/go at $cached" "$LG_LOGS/build-go.log"
    chmod +x "$root"/bin/* "$root"/pkg/tool/linux_amd64/*
  fi
  LG_GO=$cached
}

# go_build MODULE_DIR OUT_DIR LOG VERSION PACKAGE...: build the packages of the wrapper
# module in MODULE_DIR (its go.mod and go.sum pin every dependency) into OUT_DIR, statically
# (CGO off) as upstream releases them. VERSION (vX.Y.Z) goes into Kubernetes' version
# variables, so `kubectl version` and the Node's kubeletVersion tell the truth; other
# programs ignore them. LG_GO_VERSION_VARIABLES names other variables to set to VERSION
# instead (helm's). LG_GO_BUILD_FLAGS adds flags (kubemark's -overlay).
go_build() {
  local dir=$1 out=$2 log=$3 version=$4
  shift 4
  local minor=${version#v*.} major=${version#v}
  minor=${minor%%.*} major=${major%%.*}
  local ld="-s -w" p
  if [ -n "${LG_GO_VERSION_VARIABLES:-}" ]; then
    for p in $LG_GO_VERSION_VARIABLES; do ld="$ld -X $p=$version"; done
  else
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld="$ld -X $p.gitVersion=$version -X $p.gitMajor=$major -X $p.gitMinor=$minor"
      ld="$ld -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
    done
  fi
  mkdir -p "$out.tmp"
  # -mod=readonly: a go.sum that does not cover the build is an error, never a download
  # of something unpinned.
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=readonly "$LG_GO" build -trimpath ${LG_GO_BUILD_FLAGS:-} -tags selinux,notest \
    -ldflags "$ld" -o "$out.tmp/" "$@") >>"$log" 2>&1 || die "go build in $dir failed" "$log"
  rm -rf "$out" && mv "$out.tmp" "$out"
}
