# Shared helpers for the local-cluster scripts. Sourced, not run.
LG_CACHE=${LIFEGUARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lifeguard}
LG_STATE=${LIFEGUARD_STATE:-/var/lib/lifeguard-cluster}
LG_LOGS="$LG_STATE/logs"
mkdir -p "$LG_CACHE" "$LG_LOGS"

say() { printf '%s\n' "$*"; }
step() { printf '==> %s\n' "$*"; }
# die MESSAGE [LOG]: name the failed step and the log that explains it.
die() {
  printf 'error: %s\n' "$1" >&2
  if [ -n "${2:-}" ]; then
    # A Go program that dies (klog's Fatal, a panic) ends its log with every goroutine's
    # stack, which hides the reason: show the first fatal lines before the tail.
    if grep -qE '^(F[0-9]{4} |panic: |fatal error: )' "$2" 2>/dev/null; then
      printf '       the first fatal lines of %s:\n' "$2" >&2
      grep -m 5 -E '^(F[0-9]{4} |panic: |fatal error: )' "$2" | sed 's/^/       ! /' >&2
    fi
    printf '       see %s; its last lines:\n' "$2" >&2
    tail -n 20 "$2" 2>/dev/null | sed 's/^/       | /' >&2
  fi
  exit 1
}

apt_updated=""
apt_install() {
  local missing=() p
  for p in "$@"; do
    # Not `| grep -q`: under pipefail an early-exiting grep can fail the pipeline by SIGPIPE.
    [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == *"install ok installed"* ]] || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ -z "$apt_updated" ]; then
    step "apt-get update"
    apt-get update >>"$LG_LOGS/apt.log" 2>&1 || die "apt-get update failed" "$LG_LOGS/apt.log"
    apt_updated=1
  fi
  step "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" \
    >>"$LG_LOGS/apt.log" 2>&1 || die "apt-get install ${missing[*]} failed" "$LG_LOGS/apt.log"
}

# Compiled dependencies are kept outside the work tree, so a fresh clone builds quickly.
# Cargo records a workspace member's sources by path relative to the checkout and judges
# them by mtime, so after another checkout built into the same directory it would take
# that checkout's binaries for this one's. When the checkout changes, lifeguard's own
# sources are touched so they are rebuilt; dependencies stay cached.
use_shared_target_dir() {
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$LG_CACHE/cargo-target}
  mkdir -p "$CARGO_TARGET_DIR"
  local stamp="$CARGO_TARGET_DIR/.lifeguard-checkout" here
  here=$(pwd -P)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$here" ]; then
    find api webhook controller prober cli tests -name '*.rs' -exec touch {} +
    printf '%s\n' "$here" >"$stamp"
  fi
}
