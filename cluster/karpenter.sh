#!/usr/bin/env bash
# Karpenter (its kwok cloud provider, cluster/build-karpenter.sh) as a process of the local
# cluster, for the e2e test of an upgrade tool's own drain (tests/tests/karpenter.rs):
#
#   cluster/karpenter.sh up     CRDs, the chart's own ServiceAccount and RBAC, then the process
#   cluster/karpenter.sh down   the process stops (CRDs, RBAC and the namespace stay)
#
# Karpenter acts as the ServiceAccount karpenter/karpenter with exactly the rights its chart
# grants (rendered from the chart in the same module, by the helm cluster/build-helm.sh
# builds), through a kubeconfig holding a token of that account: its evictions, Events and
# node deletions name `system:serviceaccount:karpenter:karpenter`, as in a real install.
# Its NodeClaims become Nodes annotated `kwok.x-k8s.io/node: fake`, which kwok
# (`lifeguard-cluster fake-nodes`) must be running to make Ready.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
. "$here/config.sh"
. "$here/processes.sh"

KARPENTER_NAMESPACE=karpenter
KARPENTER_ACCOUNT=karpenter
KARPENTER_KUBECONFIG="$LG_STATE/karpenter.kubeconfig"
# Off the ports of lifeguard's components and of kwok.
KARPENTER_METRICS_PORT=${KARPENTER_METRICS_PORT:-18090}
KARPENTER_HEALTH_PORT=${KARPENTER_HEALTH_PORT:-18091}
log="$LG_LOGS/karpenter.log"

# The chart of the version built, from the module cache the build filled.
chart_dir() {
  . "$here/go-env.sh"
  LG_GO_MIN=$LG_KARPENTER_GO_MIN
  LG_GO_TOOLCHAIN_MODULE=golang.org/toolchain@v0.0.1-go$LG_GO_MIN.linux-amd64
  ensure_go
  local src
  src=$(cd "$LG_GO_MODULES/karpenter" && GOFLAGS=-mod=readonly "$LG_GO" list -m -f '{{.Dir}}' sigs.k8s.io/karpenter) ||
    die "cannot find the karpenter module's directory" "$log"
  printf '%s/kwok/charts' "$src"
}

# A kubeconfig that authenticates as the ServiceAccount, with a token the API server issues
# for it (bound to nothing else, valid for a day: longer than any test run).
write_account_kubeconfig() {
  local token
  token=$(kc -n "$KARPENTER_NAMESPACE" create token "$KARPENTER_ACCOUNT" --duration 24h) ||
    die "cannot issue a token for $KARPENTER_NAMESPACE/$KARPENTER_ACCOUNT" "$LG_LOGS/kubectl.log"
  (
    umask 077
    cat >"$KARPENTER_KUBECONFIG" <<KC
apiVersion: v1
kind: Config
clusters:
- name: lifeguard-local
  cluster:
    server: https://127.0.0.1:$LG_API_PORT
    certificate-authority-data: $(base64 -w0 "$LG_STATE/pki/ca.crt")
users:
- name: $KARPENTER_ACCOUNT
  user:
    token: $token
contexts:
- name: lifeguard-local
  context: {cluster: lifeguard-local, user: $KARPENTER_ACCOUNT}
current-context: lifeguard-local
KC
  )
}

up() {
  "$here/build-karpenter.sh"
  "$here/build-helm.sh" >/dev/null
  step "install Karpenter's CRDs, namespace, ServiceAccount and RBAC (its chart's)"
  kc apply --server-side --force-conflicts -f "$LG_KARPENTER_BIN/crds" >>"$LG_LOGS/kubectl.log" 2>&1 ||
    die "applying Karpenter's CRDs failed" "$LG_LOGS/kubectl.log"
  kc wait --for condition=Established --timeout 60s -f "$LG_KARPENTER_BIN/crds" >>"$LG_LOGS/kubectl.log" 2>&1 ||
    die "Karpenter's CRDs were not established" "$LG_LOGS/kubectl.log"
  kc create namespace "$KARPENTER_NAMESPACE" --dry-run=client -o yaml | kc apply -f - >>"$LG_LOGS/kubectl.log" 2>&1 ||
    die "creating namespace $KARPENTER_NAMESPACE failed" "$LG_LOGS/kubectl.log"
  local chart
  chart=$(chart_dir)
  "$LG_HELM_BIN/helm" template karpenter "$chart" --namespace "$KARPENTER_NAMESPACE" \
    --show-only templates/serviceaccount.yaml --show-only templates/clusterrole.yaml \
    --show-only templates/clusterrole-kwok.yaml --show-only templates/role.yaml \
    --show-only templates/rolebinding.yaml --show-only templates/aggregate-clusterrole.yaml \
    >"$LG_STATE/karpenter-rbac.yaml" 2>>"$log" || die "rendering Karpenter's RBAC failed" "$log"
  kc apply -f "$LG_STATE/karpenter-rbac.yaml" >>"$LG_LOGS/kubectl.log" 2>&1 ||
    die "applying Karpenter's RBAC failed" "$LG_LOGS/kubectl.log"
  write_account_kubeconfig

  step "start karpenter (kwok provider) as $KARPENTER_NAMESPACE/$KARPENTER_ACCOUNT"
  # The settings the chart's Deployment passes, for one replica outside the cluster.
  start karpenter env KUBECONFIG="$KARPENTER_KUBECONFIG" SYSTEM_NAMESPACE="$KARPENTER_NAMESPACE" \
    KUBERNETES_MIN_VERSION=1.19.0-0 DISABLE_LEADER_ELECTION=true \
    METRICS_PORT="$KARPENTER_METRICS_PORT" HEALTH_PROBE_PORT="$KARPENTER_HEALTH_PORT" \
    LOG_LEVEL=debug BATCH_IDLE_DURATION=1s BATCH_MAX_DURATION=5s \
    "$LG_KARPENTER_BIN/kwok"
  wait_for "karpenter" 120 "$log" karpenter curl -fsS "http://127.0.0.1:$KARPENTER_HEALTH_PORT/readyz"
  say "    karpenter ready (log: $log)"
}

down() {
  step "stop karpenter"
  stop_process karpenter
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) die "usage: $0 up|down" ;;
esac
