# Starting, stopping and watching the cluster's processes. Sourced by lifeguard-cluster.

pid_of() { cat "$LG_RUN/$1.pid" 2>/dev/null; }
running() { local pid; pid=$(pid_of "$1") && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }

# start NAME CMD...: start once (idempotent), detached, logging to logs/NAME.log.
start() {
  local name=$1
  shift
  mkdir -p "$LG_RUN"
  if running "$name"; then
    say "    $name already running (pid $(pid_of "$name"))"
    return 0
  fi
  printf '\n=== %s start %s\n' "$(date -Is)" "$name" >>"$LG_LOGS/$name.log"
  # Descriptors 3-9 are closed: a daemon must not keep what its starter held open (a lock
  # taken with `flock FILE ./local-up` would otherwise stay held as long as the daemon runs).
  setsid "$@" >>"$LG_LOGS/$name.log" 2>&1 </dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! >"$LG_RUN/$name.pid"
}

# wait_for WHAT SECONDS LOG CMD...: poll CMD until it succeeds, or fail naming the log.
wait_for() {
  local what=$1 secs=$2 log=$3 name=$4
  shift 4
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ -n "$name" ] && ! running "$name"; then
      die "$what: $name exited" "$log"
    fi
    [ $SECONDS -lt $deadline ] || die "$what: not ready after ${secs}s" "$log"
    sleep 1
  done
}

kc() { kubectl --kubeconfig "$LG_KUBECONFIG" "$@"; }

# Who asked what, one line per request, once each is answered: the request's metadata
# only, never a body. Watches are long-running and say nothing about the work done.
write_audit_policy() {
  cat > "$1" <<'POLICY'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: None
  verbs: ["watch"]
- level: Metadata
POLICY
}

start_control_plane() {
  local pki="$LG_STATE/pki" bin="$LG_K8S_BIN"
  step "start etcd"
  start etcd "$LG_ETCD_BIN/etcd" --name lifeguard --data-dir "$LG_STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$LG_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$LG_ETCD_PORT" \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster lifeguard=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381
  wait_for "etcd" 60 "$LG_LOGS/etcd.log" etcd curl -fsS "http://127.0.0.1:$LG_ETCD_PORT/health"

  step "start kube-apiserver"
  local audit=()
  if [ "$LG_APISERVER_AUDIT" = true ]; then
    write_audit_policy "$LG_STATE/audit-policy.yaml"
    audit=(--audit-policy-file "$LG_STATE/audit-policy.yaml" --audit-log-format json
      --audit-log-path "$LG_LOGS/kube-apiserver-audit.log" --audit-log-maxsize 2000 --audit-log-maxbackup 1)
  fi
  start kube-apiserver "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$LG_ETCD_PORT" \
    --secure-port "$LG_API_PORT" --bind-address 0.0.0.0 --advertise-address "$LG_NODE_IP" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" --kubelet-certificate-authority "$pki/ca.crt" \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$pki/apiserver-kubelet-client.key" --kubelet-preferred-address-types InternalIP \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range "$LG_SERVICE_CIDR" --authorization-mode Node,RBAC \
    --enable-admission-plugins NamespaceLifecycle,LimitRanger,ServiceAccount,DefaultStorageClass,ResourceQuota,NodeRestriction,MutatingAdmissionWebhook,ValidatingAdmissionWebhook \
    --allow-privileged=true --profiling="$LG_APISERVER_PROFILING" --event-ttl 1h "${audit[@]}"
  wait_for "kube-apiserver" 120 "$LG_LOGS/kube-apiserver.log" kube-apiserver kc get --raw /readyz

  # The default (lease) endpoint reconciler publishes $LG_NODE_IP:$LG_API_PORT as the
  # endpoint of the `kubernetes` Service, so pods reach the API server through it.
  step "start kube-controller-manager and kube-scheduler"
  start kube-controller-manager "$bin/kube-controller-manager" \
    --kubeconfig "$LG_STATE/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$LG_STATE/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$LG_STATE/controller-manager.kubeconfig" \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --controllers '*,-nodeipam' --use-service-account-credentials \
    --leader-elect=false --bind-address 127.0.0.1
  start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$LG_STATE/scheduler.kubeconfig" \
    --authentication-kubeconfig "$LG_STATE/scheduler.kubeconfig" \
    --authorization-kubeconfig "$LG_STATE/scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1
}

# kube-proxy in iptables mode makes Service IPs route: pods reach the API server through
# the `kubernetes` Service, and the API server reaches the webhook through its Service.
start_kube_proxy() {
  step "start kube-proxy (iptables mode)"
  # Pods on one node's bridge reach pods of another bridge, and Service DNAT on the host
  # forwards between them. The nodes share this machine's network namespace, so one
  # kube-proxy writes the rules for all of them (it runs as node 1's).
  sysctl -qw net.ipv4.ip_forward=1 >>"$LG_LOGS/kube-proxy.log" 2>&1 ||
    die "cannot enable IPv4 forwarding" "$LG_LOGS/kube-proxy.log"
  start kube-proxy "$LG_K8S_BIN/kube-proxy" --kubeconfig "$LG_STATE/kube-proxy.kubeconfig" \
    --proxy-mode iptables --hostname-override "$(node_name 1)" --cluster-cidr "$LG_CLUSTER_CIDR" \
    --healthz-bind-address 127.0.0.1:10256 --metrics-bind-address 127.0.0.1:10249 \
    --conntrack-max-per-core 0 --iptables-sync-period 10s
  wait_for "kube-proxy" 60 "$LG_LOGS/kube-proxy.log" kube-proxy curl -fsS http://127.0.0.1:10256/healthz
}

# The node lifecycle controller taints a node not-ready until its kubelet reports Ready,
# and marks a node whose kubelet stopped reporting (`node stop`) NotReady after 40 s.
wait_service_account() {
  step "wait for the default service account"
  wait_for "service-account controller" 120 "$LG_LOGS/kube-controller-manager.log" kube-controller-manager \
    kc -n default get serviceaccount default
}

# Node objects of nodes this cluster no longer has (fewer --nodes, or the single node of
# an older layout) would keep DaemonSet pods pending forever.
forget_removed_nodes() {
  local n
  for n in $(kc get nodes -l lifeguard.dev/local-cluster=true -o name 2>/dev/null); do
    is_node "${n#node/}" && continue
    step "delete ${n}: not part of this cluster any more"
    kc delete "$n" --wait=false >>"$LG_LOGS/kubectl.log" 2>&1 || true
  done
}

stop_process() {
  local name=$1 pid
  pid=$(pid_of "$name") || return 0
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    local i
    for i in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$LG_RUN/$name.pid"
}

stop_all() {
  step "stop lifeguard"
  local p n
  for p in "$LG_RUN"/lifeguard-*.pid; do
    [ -e "$p" ] && stop_process "$(basename "$p" .pid)"
  done
  # Hollow nodes (cluster/hollow.sh); their Node objects are deleted by the next `up`.
  for p in "$LG_RUN"/hollow-*.pid; do
    [ -e "$p" ] && stop_process "$(basename "$p" .pid)"
  done
  # kwok (cluster/kwok.sh); its fake Nodes are deleted by the next `up`.
  stop_process kwok
  step "stop kube-proxy"
  stop_process kube-proxy
  # Drop the Service rules, so a stopped cluster leaves no NAT behind.
  [ -x "$LG_K8S_BIN/kube-proxy" ] && "$LG_K8S_BIN/kube-proxy" --cleanup >>"$LG_LOGS/kube-proxy.log" 2>&1 || true
  for n in $(node_names); do
    step "stop node $n (kubelet, containers, containerd)"
    stop_node "$n"
  done
  step "stop the control plane"
  local c
  for c in kube-scheduler kube-controller-manager kube-apiserver etcd; do stop_process "$c"; done
  step "unmount and remove pod networking"
  for n in $(node_names); do remove_node_mounts "$n"; done
  findmnt -rn -o TARGET | { grep -E "^($LG_STATE|$LG_RUN)/" || true; } | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
  for ns in $(ip netns list 2>/dev/null | awk '/^cni-/ {print $1}'); do ip netns delete "$ns" 2>/dev/null || true; done
  # lg-cni0 is the single node's bridge of an older layout.
  ip link show lg-cni0 >/dev/null 2>&1 && ip link delete lg-cni0
  ip link show lg-node0 >/dev/null 2>&1 && ip link delete lg-node0
  say "cluster is down (state kept in $LG_STATE; 'reset' forgets it)"
}

show_status() {
  local c n rc=0
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
    if running "$c"; then
      printf '%-34s running (pid %s)\n' "$c" "$(pid_of "$c")"
    else
      printf '%-34s stopped\n' "$c"
      rc=1
    fi
  done
  for n in $(node_names); do
    for c in "containerd-$n" "kubelet-$n"; do
      if running "$c"; then
        printf '%-34s running (pid %s)\n' "$c" "$(pid_of "$c")"
      else
        printf '%-34s stopped\n' "$c"
        rc=1
      fi
    done
    if running kube-apiserver && node_ready "$n"; then
      say "node $n ($(node_ip "$n")): Ready"
    else
      say "node $n ($(node_ip "$n")): not ready"
      rc=1
    fi
  done
  [ -n "$(node_names)" ] || { say "no nodes (lifeguard-cluster up)"; rc=1; }
  # Hollow nodes, when there are any; a stopped one fails the status like a real node.
  hollow_status || rc=1
  fake_status || rc=1
  say "kubeconfig: $LG_KUBECONFIG   logs: $LG_LOGS"
  return $rc
}
