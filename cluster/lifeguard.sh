# Running lifeguard's own components on the local cluster as host processes.
# Sourced by local-up after cluster/lifeguard-cluster up.

LG_WEBHOOK_ADDR=127.0.0.1:8443
LG_WEBHOOK_OPS_ADDR=127.0.0.1:8081
LG_WEBHOOK_TLS="$LG_STATE/webhook-tls"
LG_CONTROLLER_OPS_ADDR=127.0.0.1:8082
# Short enough for the end-to-end tests to see several re-creations in a minute.
LG_CONTROLLER_BACKOFF=${LG_CONTROLLER_BACKOFF:-3s}
# The prober runs as a real DaemonSet pod on the host network: its port is on this machine.
LG_PROBER_OPS_ADDR=127.0.0.1:8089
# A loop-mounted ext4 image, so tests can make the storage read-only or freeze it.
LG_PROBER_STORAGE="$LG_STATE/workspace-storage"
# Short, so the end-to-end tests see a broken node within seconds.
LG_PROBER_INTERVAL=${LG_PROBER_INTERVAL:-5s}

build_lifeguard() {
  step "build lifeguard (release)"
  cargo build --release --locked -p lifeguard-webhook -p lifeguard-controller -p lifeguard-prober -p lifeguard-cli >>"$LG_LOGS/cargo.log" 2>&1 ||
    die "building lifeguard failed" "$LG_LOGS/cargo.log"
}

# component_kubeconfig NAME USER: a client certificate for USER, so each component runs
# with exactly the RBAC its manifests grant, not as cluster admin.
component_kubeconfig() {
  issue_cert "$1" "/CN=$2" "$LG_CLIENT_EXT"
  write_kubeconfig "$LG_STATE/$1.kubeconfig" "$1"
}

start_webhook() {
  step "start lifeguard-webhook on $LG_WEBHOOK_ADDR"
  kubectl apply -f manifests/namespace/namespace.yaml -f manifests/webhook/rbac.yaml >>"$LG_LOGS/kubectl.log" 2>&1 ||
    die "applying the webhook's RBAC failed" "$LG_LOGS/kubectl.log"
  kubectl label namespace kube-system lifeguard.dev/admission=disabled --overwrite >>"$LG_LOGS/kubectl.log" 2>&1
  component_kubeconfig lifeguard-webhook lifeguard:webhook
  certs/webhook-cert issue "$LG_WEBHOOK_TLS"
  stop_process lifeguard-webhook
  start lifeguard-webhook env KUBECONFIG="$LG_STATE/lifeguard-webhook.kubeconfig" \
    "$CARGO_TARGET_DIR/release/lifeguard-webhook" --listen "$LG_WEBHOOK_ADDR" \
    --metrics-listen "$LG_WEBHOOK_OPS_ADDR" --tls-cert "$LG_WEBHOOK_TLS/tls.crt" \
    --tls-key "$LG_WEBHOOK_TLS/tls.key" --cert-poll-interval 2s --recreation-user lifeguard:controller
  wait_for "lifeguard-webhook" 60 "$LG_LOGS/lifeguard-webhook.log" lifeguard-webhook \
    curl -fsS "http://$LG_WEBHOOK_OPS_ADDR/readyz"
  step "register the webhooks (url https://$LG_WEBHOOK_ADDR)"
  local bundle
  bundle=$(certs/webhook-cert ca-bundle "$LG_WEBHOOK_TLS")
  # No kube-proxy here, so the API server calls the host process by URL.
  sed -E -e "s#service: \\{name: lifeguard-webhook, namespace: lifeguard-system, path: (/[a-z]+), port: 443\\}#url: https://$LG_WEBHOOK_ADDR\\1#" \
    -e "s#caBundle: \"\"#caBundle: $bundle#" manifests/webhook/webhooks.yaml |
    kubectl apply -f - >>"$LG_LOGS/kubectl.log" 2>&1 || die "registering the webhooks failed" "$LG_LOGS/kubectl.log"
}

start_controller() {
  step "start lifeguard-controller (health and metrics on $LG_CONTROLLER_OPS_ADDR)"
  kubectl apply -f manifests/namespace/namespace.yaml -f manifests/controller/rbac.yaml >>"$LG_LOGS/kubectl.log" 2>&1 ||
    die "applying the controller's RBAC failed" "$LG_LOGS/kubectl.log"
  component_kubeconfig lifeguard-controller lifeguard:controller
  stop_process lifeguard-controller
  # Two malloc arenas: glibc otherwise keeps one per thread and their fragments.
  start lifeguard-controller env MALLOC_ARENA_MAX=2 KUBECONFIG="$LG_STATE/lifeguard-controller.kubeconfig" \
    "$CARGO_TARGET_DIR/release/lifeguard-controller" --metrics-listen "$LG_CONTROLLER_OPS_ADDR" \
    --backoff "$LG_CONTROLLER_BACKOFF" --sweep-interval 30s
  wait_for "lifeguard-controller" 60 "$LG_LOGS/lifeguard-controller.log" lifeguard-controller \
    curl -fsS "http://$LG_CONTROLLER_OPS_ADDR/readyz"
}

prober_storage() {
  local img="$LG_STATE/workspace-storage.img"
  mkdir -p "$LG_PROBER_STORAGE"
  if ! mountpoint -q "$LG_PROBER_STORAGE"; then
    if [ ! -s "$img" ]; then
      { truncate -s 64M "$img" && mkfs.ext4 -q -F "$img"; } >>"$LG_LOGS/prober-storage.log" 2>&1 ||
        die "creating the workspace storage image failed" "$LG_LOGS/prober-storage.log"
    fi
    mount -o loop "$img" "$LG_PROBER_STORAGE" >>"$LG_LOGS/prober-storage.log" 2>&1 ||
      die "mounting the workspace storage failed" "$LG_LOGS/prober-storage.log"
    LG_PROBER_STORAGE_MOUNTED_NOW=1
  fi
  # An interrupted test may have left it frozen or read-only.
  fsfreeze -u "$LG_PROBER_STORAGE" 2>/dev/null || true
  mount -o remount,rw "$LG_PROBER_STORAGE" >>"$LG_LOGS/prober-storage.log" 2>&1 ||
    die "making the workspace storage writable failed" "$LG_LOGS/prober-storage.log"
}

# The image holds the release binary and the shared libraries ldd names; its tag is the
# binary's hash, so a rebuilt prober rolls out and an unchanged one is not rebuilt.
prober_image() {
  local bin="$CARGO_TARGET_DIR/release/lifeguard-prober" sum root tar lib
  sum=$(sha256sum "$bin" | cut -c1-12) || die "no prober binary at $bin"
  LG_PROBER_IMAGE="lifeguard.local/prober:$sum"
  tar="$LG_CACHE/images/prober-$sum.tar"
  if [ ! -s "$tar" ]; then
    step "build the prober image $LG_PROBER_IMAGE"
    mkdir -p "$LG_CACHE/images"
    rm -f "$LG_CACHE"/images/prober-*.tar
    root=$(mktemp -d)
    cp "$bin" "$root/lifeguard-prober"
    for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
    build_image "$LG_PROBER_IMAGE" "$root" '["/lifeguard-prober"]' "$tar"
    rm -rf "$root"
  fi
  import_image "$tar" "$LG_PROBER_IMAGE"
}

prober_condition() {
  kubectl get node "$LG_NODE_NAME" \
    -o jsonpath='{.status.conditions[?(@.type=="LifeguardProbesHealthy")].status}'
}

start_prober() {
  step "start lifeguard-prober (DaemonSet on the host network, http://$LG_PROBER_OPS_ADDR)"
  apt_install e2fsprogs util-linux mount
  prober_storage
  prober_image
  kubectl apply -f manifests/namespace/namespace.yaml -f manifests/prober/rbac.yaml >>"$LG_LOGS/kubectl.log" 2>&1 ||
    die "applying the prober's RBAC failed" "$LG_LOGS/kubectl.log"
  # The local overlay: the local image, no Service routing (no kube-proxy), so the host
  # network with the API server on 127.0.0.1 (a SAN of its certificate; the service
  # account's ca.crt is the cluster CA), short intervals, the loop-mounted storage; only
  # on the real node (benchmarks add phantom Nodes that would block a rolling update).
  local patch
  patch=$(cat <<JSON
{"spec": {"template": {"spec": {
  "hostNetwork": true,
  "dnsPolicy": "ClusterFirstWithHostNet",
  "nodeSelector": {"kubernetes.io/hostname": "$LG_NODE_NAME"},
  "containers": [
    {"name": "workspace-daemon", "image": "$LG_BUSYBOX_IMAGE", "imagePullPolicy": "Never"},
    {"name": "prober", "image": "$LG_PROBER_IMAGE", "imagePullPolicy": "Never",
     "args": ["--log-format=json", "--interval=$LG_PROBER_INTERVAL", "--volume-deadline=3s", "--container-deadline=20s",
              "--ttl=30s", "--heartbeat=1m", "--taint",
              "--probe-image=$LG_BUSYBOX_IMAGE", "--probe-image-pull-policy=Never"],
     "env": [{"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
             {"name": "KUBERNETES_SERVICE_PORT", "value": "$LG_API_PORT"}]}],
  "volumes": [{"name": "workspace-storage",
               "hostPath": {"path": "$LG_PROBER_STORAGE", "type": "Directory"}}]
}}}}
JSON
)
  kubectl patch --local -f manifests/prober/daemonset.yaml --type strategic -p "$patch" -o yaml 2>>"$LG_LOGS/kubectl.log" |
    kubectl apply -f - >>"$LG_LOGS/kubectl.log" 2>&1 || die "applying the prober's DaemonSet failed" "$LG_LOGS/kubectl.log"
  # After `down` and `up` the kubelet restarts the kept prober pod before the storage is
  # mounted again, binding the bare directory underneath: that pod would probe the wrong
  # filesystem. A fresh pod binds the mounted one.
  if [ -n "${LG_PROBER_STORAGE_MOUNTED_NOW:-}" ]; then
    kubectl -n lifeguard-system delete pods -l app.kubernetes.io/name=lifeguard-workspace-node \
      --ignore-not-found --timeout=60s >>"$LG_LOGS/kubectl.log" 2>&1 || true
    local ready_by=$((SECONDS + 120))
    until [ "$(kubectl -n lifeguard-system get pods -l app.kubernetes.io/name=lifeguard-workspace-node \
      -o jsonpath='{.items[*].status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] ||
      [ $SECONDS -ge $ready_by ]; do
      sleep 1
    done
  fi
  if ! kubectl -n lifeguard-system rollout status daemonset/lifeguard-workspace-node --timeout=180s \
    >>"$LG_LOGS/kubectl.log" 2>&1; then
    kubectl -n lifeguard-system logs daemonset/lifeguard-workspace-node -c prober --tail=50 \
      >"$LG_LOGS/lifeguard-prober.log" 2>&1 || true
    kubectl -n lifeguard-system describe pods -l app.kubernetes.io/name=lifeguard-workspace-node \
      >>"$LG_LOGS/lifeguard-prober.log" 2>&1 || true
    die "lifeguard-prober: DaemonSet pod not Ready" "$LG_LOGS/lifeguard-prober.log"
  fi
  step "wait for the node condition LifeguardProbesHealthy=True"
  local deadline=$((SECONDS + 120))
  until [ "$(prober_condition 2>/dev/null)" = True ]; do
    if [ $SECONDS -ge $deadline ]; then
      kubectl -n lifeguard-system logs daemonset/lifeguard-workspace-node -c prober --tail=50 \
        >"$LG_LOGS/lifeguard-prober.log" 2>&1 || true
      curl -sS "http://$LG_PROBER_OPS_ADDR/status" >>"$LG_LOGS/lifeguard-prober.log" 2>&1 || true
      die "lifeguard-prober: node condition not True after 120s" "$LG_LOGS/lifeguard-prober.log"
    fi
    sleep 1
  done
}
