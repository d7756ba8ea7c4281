# Fake nodes: kwok (cluster/build-kwok.sh) keeps Nodes and their pods' status against the
# real API server and scheduler, with no kubelet and no runtime, so benchmarks and the kwok
# smoke can hold thousands of pods on two cores. Sourced by lifeguard-cluster.
#
# One kwok process (`kwok`, a background process of the cluster like the others) manages
# every Node annotated kwok.x-k8s.io/node=fake (kwok's own annotation, which Karpenter's kwok
# provider also puts on the nodes it creates) and nothing else: the real nodes are never
# touched. It plays the Stage objects of cluster/kwok/stages.yaml (kwok's "general" pod
# stages: start, readiness, and a graceful delete that waits for every finalizer and for
# the grace period; the file says what it adds).
#
# The fake nodes this script creates also carry the label and the NoSchedule taint
# $LG_FAKE_LABEL=true: only pods that tolerate the taint and select the label land there
# (the benchmarks' pods). They are not labelled lifeguard.dev/local-cluster=true, which the
# local overlay's prober DaemonSet selects (manifests/local) and the e2e tests count real
# nodes by, so no lifeguard pod runs on them and the e2e tests do not see them (a prober pod
# there would never pass its probes: nothing runs). Remove them when the benchmark is done.
#
# Names: lifeguard-sim-fake-1 .. N. They sort after lifeguard-node-*, so a harness that
# takes the first Ready node of a list (tests/src/cluster.rs node_name) still gets a real one.

LG_FAKE_PREFIX=lifeguard-sim-fake
LG_FAKE_LABEL=lifeguard.dev/fake
LG_KWOK_ANNOTATION=kwok.x-k8s.io/node
LG_FAKE_MAX=1000
LG_KWOK_STAGES="$here/kwok/stages.yaml"
# kwok's health and metrics (http://127.0.0.1:$LG_KWOK_PORT/healthz, /metrics), on loopback.
LG_KWOK_PORT=${LG_KWOK_PORT:-10247}
# The fake pods' addresses: from the benchmarking range (RFC 2544) like the real nodes',
# outside the cluster's pod and Service ranges (cluster/config.sh), never routed. Every fake
# node reports the one address LG_KWOK_NODE_IP (nothing listens there).
LG_KWOK_POD_CIDR=198.19.0.0/17
LG_KWOK_NODE_IP=198.19.128.1

fake_name() { printf '%s-%s\n' "$LG_FAKE_PREFIX" "$1"; }
# The fake nodes this script created, one per line (by their label, from the API server).
fake_names() {
  kc get nodes -l "$LG_FAKE_LABEL=true" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null
}

# kwok_up: start the kwok controller (idempotent) and wait until it serves its health.
kwok_up() {
  running kube-apiserver || die "the cluster is not running (cluster/lifeguard-cluster up first)"
  "$here/build-kwok.sh"
  # kwok sets every fake node's status, its Lease and its pods' status, and deletes their
  # pods: rights over every node and pod. Its own identity, so the API server's audit log
  # and metrics tell its requests from everyone else's.
  issue_cert kwok "/O=system:masters/CN=lifeguard-kwok" "$LG_CLIENT_EXT"
  write_kubeconfig "$LG_STATE/kwok.kubeconfig" kwok
  step "start kwok $LG_KWOK_VERSION for nodes annotated $LG_KWOK_ANNOTATION=fake"
  start kwok "$LG_KWOK_BIN/kwok" --kubeconfig "$LG_STATE/kwok.kubeconfig" \
    --config "$LG_KWOK_STAGES" \
    --manage-nodes-with-annotation-selector "$LG_KWOK_ANNOTATION=fake" \
    --cidr "$LG_KWOK_POD_CIDR" --node-ip "$LG_KWOK_NODE_IP" \
    --server-address "127.0.0.1:$LG_KWOK_PORT"
  wait_for "kwok" 60 "$LG_LOGS/kwok.log" kwok curl -fsS "http://127.0.0.1:$LG_KWOK_PORT/healthz"
}

# The Node object of fake node NAME with room for PODS pods: kwok's annotation, our label and
# taint. kwok's node-initialize stage keeps the capacity given here.
fake_node_manifest() {
  local name=$1 pods=$2
  cat <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $name
  annotations:
    $LG_KWOK_ANNOTATION: fake
  labels:
    $LG_FAKE_LABEL: "true"
    kubernetes.io/hostname: $name
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
spec:
  taints:
  - key: $LG_FAKE_LABEL
    value: "true"
    effect: NoSchedule
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "$pods"}
  capacity: {cpu: "32", memory: 256Gi, pods: "$pods"}
EOF
}

fake_nodes_ready() {
  local want=$1 ready
  ready=$(kc get nodes -l "$LG_FAKE_LABEL=true" \
    -o jsonpath='{range .items[*]}{range .status.conditions[?(@.type=="Ready")]}{.status}{"\n"}{end}{end}' |
    grep -c '^True$' || true)
  [ "$ready" -ge "$want" ]
}

fake_nodes_up() {
  local count=$1 pods=$2 n i
  kwok_up
  # Fake nodes beyond the new count go.
  for n in $(fake_names); do
    if [ "${n##*-}" -gt "$count" ]; then remove_fake_node "$n"; fi
  done
  step "create $count fake node(s), up to $pods pods each"
  for i in $(seq 1 "$count"); do
    printf -- '---\n'
    fake_node_manifest "$(fake_name "$i")" "$pods"
  done | kc apply --server-side --field-manager lifeguard-cluster -f - >>"$LG_LOGS/kubectl.log" 2>&1 ||
    die "creating the fake nodes failed" "$LG_LOGS/kubectl.log"
  wait_for "$count fake node(s) Ready" 180 "$LG_LOGS/kwok.log" kwok fake_nodes_ready "$count"
  say "$count fake node(s) Ready: label and taint $LG_FAKE_LABEL=true (NoSchedule)"
}

# Deletes the Node while kwok still runs, so the pods there are deleted as a kubelet would
# (kwok plays their graceful delete); pods still there after a minute are removed without
# grace: nothing would ever confirm their deletion once kwok is gone.
remove_fake_node() {
  local name=$1
  kc delete node "$name" --ignore-not-found --wait=false >>"$LG_LOGS/kubectl.log" 2>&1 ||
    say "warning: could not delete node $name (see $LG_LOGS/kubectl.log)"
  if running kwok; then
    local deadline=$((SECONDS + 60))
    until no_pods_on_node "$name" || [ $SECONDS -ge $deadline ]; do sleep 1; done
  fi
  if ! no_pods_on_node "$name"; then
    say "warning: $(pods_on_node "$name") pod(s) still on $name; deleting them without grace"
    kc get pods -A --field-selector "spec.nodeName=$name" \
      -o jsonpath='{range .items[*]}{.metadata.namespace} {.metadata.name}{"\n"}{end}' 2>/dev/null |
      while read -r ns pod; do
        kc -n "$ns" delete pod "$pod" --grace-period=0 --force --wait=false >>"$LG_LOGS/kubectl.log" 2>&1 || true
      done
  fi
}

# Pods bound to any fake node of this script (one list, whatever the number of nodes).
pods_on_fake_nodes() {
  kc get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace} {.metadata.name} {.spec.nodeName}{"\n"}{end}' \
    2>/dev/null | awk -v p="$LG_FAKE_PREFIX-" 'index($3, p) == 1 {print $1, $2}'
}

fake_nodes_down() {
  local others left
  step "remove fake nodes and stop kwok"
  if running kube-apiserver; then
    # All at once, while kwok still runs to play their pods' graceful delete (see
    # remove_fake_node); one list a second watches them go.
    kc delete nodes -l "$LG_FAKE_LABEL=true" --wait=false >>"$LG_LOGS/kubectl.log" 2>&1 ||
      say "warning: could not delete the fake nodes (see $LG_LOGS/kubectl.log)"
    local deadline=$((SECONDS + 120))
    while left=$(pods_on_fake_nodes | grep -c . || true); [ "$left" -gt 0 ] && [ $SECONDS -lt $deadline ]; do
      sleep 1
    done
    if [ "$left" -gt 0 ]; then
      say "warning: $left pod(s) still on fake nodes; deleting them without grace"
      pods_on_fake_nodes | while read -r ns pod; do
        kc -n "$ns" delete pod "$pod" --grace-period=0 --force --wait=false >>"$LG_LOGS/kubectl.log" 2>&1 || true
      done
    fi
    others=$(kc get nodes -o jsonpath="{range .items[*]}{.metadata.annotations.kwok\.x-k8s\.io/node}{\"\n\"}{end}" 2>/dev/null |
      grep -c '^fake$' || true)
    [ "$others" = 0 ] ||
      say "warning: $others other node(s) annotated $LG_KWOK_ANNOTATION=fake (Karpenter's?) stay; without kwok they go NotReady"
  fi
  stop_process kwok
  say "no fake nodes; kwok stopped"
}

# Fake nodes whose kwok is not running (the cluster went down with it, or a run was
# interrupted) go NotReady and would keep the e2e harness waiting; `up` forgets them.
forget_stale_fake_nodes() {
  running kwok && return 0
  local n
  for n in $(fake_names); do
    step "delete node $n: a fake node whose kwok is gone"
    remove_fake_node "$n"
  done
}

# kwok, when it runs or fake nodes are there; fake nodes without kwok fail the status.
fake_status() {
  local count=0
  running kube-apiserver && count=$(fake_names | grep -c . || true)
  if running kwok; then
    printf '%-34s running (pid %s), %s fake node(s)\n' kwok "$(pid_of kwok)" "$count"
  elif [ "$count" -gt 0 ]; then
    printf '%-34s stopped, %s fake node(s) left\n' kwok "$count"
    return 1
  fi
}
