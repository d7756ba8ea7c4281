# Installing lifeguard into the local cluster the way users do: its own images, imported
# into every node's containerd, and `kubectl apply -k` of the local overlay over
# manifests/install. Sourced by local-up after cluster/lifeguard-cluster up.

LG_NAMESPACE=lifeguard-system
# Where local-up writes the kustomization that pins the images it just built.
LG_INSTALL_DIR="$LG_STATE/install"

# The images images/build made, imported into every node's containerd (no registry here).
import_lifeguard_images() {
  images/build
  # shellcheck disable=SC1091
  . "$LG_STATE/images.env"
  step "import lifeguard's images into containerd"
  local ref name tag
  for ref in "$LG_IMAGE_WEBHOOK" "$LG_IMAGE_CONTROLLER" "$LG_IMAGE_PROBER"; do
    name=${ref%:*} tag=${ref##*:}
    import_image "$LG_CACHE/images/$(basename "$name")-$tag.tar" "$ref"
  done
}

# The generated overlay: manifests/local plus the exact image tags just built.
write_install_kustomization() {
  mkdir -p "$LG_INSTALL_DIR"
  cat >"$LG_INSTALL_DIR/kustomization.yaml" <<YAML
# Written by local-up (cluster/lifeguard.sh): the local overlay with the images it built.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  # kustomize takes only relative paths to other kustomizations.
  - $(realpath --relative-to="$LG_INSTALL_DIR" "$(pwd)/manifests/local")
images:
  - {name: lifeguard.local/lifeguard-webhook, newTag: "${LG_IMAGE_WEBHOOK##*:}"}
  - {name: lifeguard.local/lifeguard-controller, newTag: "${LG_IMAGE_CONTROLLER##*:}"}
  - {name: lifeguard.local/lifeguard-prober, newTag: "${LG_IMAGE_PROBER##*:}"}
YAML
}

# A server-side dry run of a MaintenanceWindow goes through the validating webhook via
# its Service: it succeeds once the API server can reach a ready replica over TLS.
webhook_admits() {
  kubectl create --dry-run=server -o name -f - >/dev/null 2>&1 <<'YAML'
apiVersion: lifeguard.dev/v1alpha1
kind: MaintenanceWindow
metadata: {name: local-up-admission-check}
spec: {start: "2030-01-01T00:00:00Z", end: "2030-01-01T01:00:00Z", suspend: true}
YAML
}

lifeguard_logs() {
  local out="$LG_LOGS/lifeguard-install.log"
  {
    kubectl -n "$LG_NAMESPACE" get pods -o wide
    kubectl -n "$LG_NAMESPACE" describe pods
    local d
    for d in deploy/lifeguard-webhook deploy/lifeguard-controller ds/lifeguard-workspace-node; do
      kubectl -n "$LG_NAMESPACE" logs "$d" --all-containers --tail=40
    done
  } >"$out" 2>&1 || true
  printf '%s' "$out"
}

prober_condition() {
  kubectl get nodes -l lifeguard.dev/local-cluster=true \
    -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="LifeguardProbesHealthy")].status}{" "}{end}'
}

# Every node of the local cluster has LifeguardProbesHealthy=True.
all_nodes_probed_healthy() {
  local statuses s
  statuses=$(prober_condition 2>/dev/null) || return 1
  [ -n "${statuses// /}" ] || return 1
  for s in $statuses; do [ "$s" = True ] || return 1; done
}

install_lifeguard() {
  import_lifeguard_images
  write_install_kustomization
  step "kubectl apply -k (manifests/local over manifests/install)"
  kubectl apply -k "$LG_INSTALL_DIR" >>"$LG_LOGS/kubectl.log" 2>&1 || die "kubectl apply -k failed" "$LG_LOGS/kubectl.log"
  kubectl wait --for condition=established --timeout=60s crd/workspaces.lifeguard.dev crd/maintenancewindows.lifeguard.dev \
    >>"$LG_LOGS/kubectl.log" 2>&1 || die "lifeguard's CRDs not established" "$LG_LOGS/kubectl.log"
  step "wait for the webhook (2), the controller (2) and the prober DaemonSet"
  local w
  for w in deploy/lifeguard-webhook deploy/lifeguard-controller ds/lifeguard-workspace-node; do
    kubectl -n "$LG_NAMESPACE" rollout status "$w" --timeout=180s >>"$LG_LOGS/kubectl.log" 2>&1 ||
      die "$w did not become ready" "$(lifeguard_logs)"
  done
  step "wait for the first admission through the webhook's Service"
  local deadline=$((SECONDS + 120))
  until webhook_admits; do
    [ $SECONDS -lt $deadline ] || die "the API server cannot reach the webhook through its Service" "$(lifeguard_logs)"
    sleep 1
  done
  step "wait for the node condition LifeguardProbesHealthy=True"
  deadline=$((SECONDS + 120))
  until all_nodes_probed_healthy; do
    [ $SECONDS -lt $deadline ] || die "lifeguard-prober: node condition not True after 120s" "$(lifeguard_logs)"
    sleep 1
  done
}
