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
    printf '       see %s; its last lines:\n' "$2" >&2
    tail -n 20 "$2" 2>/dev/null | sed 's/^/       | /' >&2
  fi
  exit 1
}

apt_updated=""
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
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
