# Running lifeguard's own components on the local cluster as host processes.
# Sourced by local-up after cluster/lifeguard-cluster up.

LG_WEBHOOK_ADDR=127.0.0.1:8443
LG_WEBHOOK_OPS_ADDR=127.0.0.1:8081
LG_WEBHOOK_TLS="$LG_STATE/webhook-tls"
LG_CONTROLLER_OPS_ADDR=127.0.0.1:8082
# Short enough for the end-to-end tests to see several re-creations in a minute.
LG_CONTROLLER_BACKOFF=${LG_CONTROLLER_BACKOFF:-3s}

build_lifeguard() {
  step "build lifeguard (release)"
  cargo build --release --locked -p lifeguard-webhook -p lifeguard-controller >>"$LG_LOGS/cargo.log" 2>&1 ||
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
  kubectl apply -f manifests/namespace.yaml -f manifests/webhook/rbac.yaml >>"$LG_LOGS/kubectl.log" 2>&1 ||
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
  kubectl apply -f manifests/namespace.yaml -f manifests/controller/rbac.yaml >>"$LG_LOGS/kubectl.log" 2>&1 ||
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
