# Hollow nodes: kubemark's hollow kubelet (a real kubelet of the cluster's version over
# kubemark's fake CRI runtime, cluster/build-kubemark.sh) joining the local cluster beside the real nodes, so
# benchmarks can "run" thousands of pods on two cores. Sourced by lifeguard-cluster.
#
# Every hollow node carries the label and the NoSchedule taint $LG_HOLLOW_LABEL=true: only
# pods that tolerate the taint and select the label land there (the benchmarks' pods).
# The prober DaemonSet tolerates every taint (manifests/prober), but the local overlay
# (manifests/local) selects nodes labelled lifeguard.dev/local-cluster=true, which hollow
# nodes are not: no lifeguard pod runs on them, and the e2e tests, which count the real
# nodes by that label, do not see them. Do not give them that label: a prober pod on a
# hollow node would never pass its HTTP probes (the fake runtime gives every pod the same
# unroutable IP). Remove them when the benchmark is done.
#
# Names: lifeguard-sim-1 .. N. They sort after lifeguard-node-*, so a harness that takes
# the first Ready node of a list (tests/src/cluster.rs node_name) still gets a real one.

LG_HOLLOW_PREFIX=lifeguard-sim
LG_HOLLOW_LABEL=lifeguard.dev/hollow
LG_HOLLOW_FILE="$LG_STATE/hollow-names"
LG_HOLLOW_MAX=200
# How often each hollow kubelet syncs every pod it runs. kubemark hardcodes 10 s; a real
# kubelet's default is 1 min (syncFrequency), which takes 15 % off the CPU of hollow
# nodes holding pods (docs/local-cluster.md, "Cost"). A sync only re-checks a pod nothing
# has changed: a pod's start, stop and deletion are handled as they happen, whatever
# this says.
LG_HOLLOW_SYNC_FREQUENCY=${LG_HOLLOW_SYNC_FREQUENCY:-1m}
# Hollow node i serves its (fake) kubelet API on 127.0.0.1:$((LG_HOLLOW_PORT_BASE + i)).
LG_HOLLOW_PORT_BASE=${LG_HOLLOW_PORT_BASE:-11250}

hollow_names() { [ -s "$LG_HOLLOW_FILE" ] && cat "$LG_HOLLOW_FILE"; return 0; }
hollow_name() { printf '%s-%s\n' "$LG_HOLLOW_PREFIX" "$1"; }
hollow_dir() { printf '%s\n' "$LG_STATE/hollow/$1"; }

start_hollow_node() {
  local name=$1 max_pods=$2 sync=$3 dir index
  dir=$(hollow_dir "$name") index=${name##*-}
  # The Node authorizer and NodeRestriction know a kubelet by this client certificate.
  issue_cert "kubelet-client-$name" "/O=system:nodes/CN=system:node:$name" "$LG_CLIENT_EXT"
  mkdir -p "$dir/tmp"
  write_kubeconfig "$dir/kubeconfig" "kubelet-client-$name"
  # Each hollow node runs in its own mount namespace with its node directory's tmp/ over
  # /tmp: the kubelet's mktemp root directory and its fake runtime's socket land there, so
  # hollow nodes never meet in /tmp and `hollow-nodes down` removes what each left. unshare
  # and sh exec, so the recorded pid is the kubelet's. Images come from the fake runtime
  # (there is no containerd behind a hollow node).
  start "hollow-$name" unshare --mount --propagation private -- \
    sh -c 'mount --bind "$1" /tmp && shift && exec "$@"' hollow-tmp "$dir/tmp" \
    "$LG_KUBEMARK_BIN/kubemark" --morph kubelet \
    --name "$name" --kubeconfig "$dir/kubeconfig" \
    --kubelet-port "$((LG_HOLLOW_PORT_BASE + index))" --kubelet-read-only-port 0 \
    --max-pods "$max_pods" --sync-frequency "$sync" --use-host-image-service=false \
    --node-labels "$LG_HOLLOW_LABEL=true" --register-with-taints "$LG_HOLLOW_LABEL=true:NoSchedule"
}

# Every kubelet (real or hollow) opens several inotify instances (cAdvisor, its config and plugin watchers)
# and dies with klog's Fatal when it cannot: the kernel's default of 128 instances per
# user, shared with everything else root runs on the machine, lasts for a few hollow nodes
# only (a CI run lost its smoke stage to it). kubemark's own hollow-node pods raise the
# same limit in an init container. Only raised, never lowered.
raise_inotify_limits() {
  local key want have
  for key in fs.inotify.max_user_instances:8192 fs.inotify.max_user_watches:1048576; do
    want=${key#*:} key=${key%%:*}
    have=$(sysctl -n "$key" 2>/dev/null || echo 0)
    if [ "$have" -lt "$want" ]; then
      sysctl -qw "$key=$want" >/dev/null 2>&1 ||
        say "warning: could not raise $key from $have to $want; hollow kubelets may die with 'too many open files'"
    fi
  done
}

hollow_nodes_up() {
  local count=$1 max_pods=$2 sync=$3 n i
  running kube-apiserver || die "the cluster is not running (cluster/lifeguard-cluster up first)"
  "$here/build-kubemark.sh"
  raise_inotify_limits
  # Hollow nodes beyond the new count go.
  for n in $(hollow_names); do
    if [ "${n##*-}" -gt "$count" ]; then remove_hollow_node "$n"; fi
  done
  : >"$LG_HOLLOW_FILE.new"
  for i in $(seq 1 "$count"); do hollow_name "$i" >>"$LG_HOLLOW_FILE.new"; done
  mv "$LG_HOLLOW_FILE.new" "$LG_HOLLOW_FILE"
  step "start $count hollow node(s), up to $max_pods pods each, each pod synced every $sync"
  for n in $(hollow_names); do start_hollow_node "$n" "$max_pods" "$sync"; done
  for n in $(hollow_names); do
    wait_for "hollow node $n" 180 "$LG_LOGS/hollow-$n.log" "hollow-$n" node_ready "$n"
  done
  say "$count hollow node(s) Ready: label and taint $LG_HOLLOW_LABEL=true (NoSchedule)"
}

# Pods still bound to node NAME (any namespace).
pods_on_node() {
  kc get pods -A --field-selector "spec.nodeName=$1" -o name 2>/dev/null | grep -c . || true
}

no_pods_on_node() { [ "$(pods_on_node "$1")" = 0 ]; }

# Deletes the Node first, while its hollow kubelet still runs, so the pods the DaemonSet
# put there are deleted and confirmed at once (a node whose kubelet is gone would leave
# them to the pod garbage collector); then stops the kubelet. A hollow node keeps no state.
remove_hollow_node() {
  local name=$1
  if running kube-apiserver; then
    kc delete node "$name" --ignore-not-found --wait=false >>"$LG_LOGS/kubectl.log" 2>&1 ||
      say "warning: could not delete node $name (see $LG_LOGS/kubectl.log)"
    if running "hollow-$name"; then
      local deadline=$((SECONDS + 60))
      until no_pods_on_node "$name" || [ $SECONDS -ge $deadline ]; do sleep 1; done
    fi
    if ! no_pods_on_node "$name"; then
      # Nothing will ever confirm these deletions now: the node is gone.
      say "warning: $(pods_on_node "$name") pod(s) still on $name; deleting them without grace"
      kc get pods -A --field-selector "spec.nodeName=$name" \
        -o jsonpath='{range .items[*]}{.metadata.namespace} {.metadata.name}{"\n"}{end}' 2>/dev/null |
        while read -r ns pod; do
          kc -n "$ns" delete pod "$pod" --grace-period=0 --force --wait=false >>"$LG_LOGS/kubectl.log" 2>&1 || true
        done
    fi
  fi
  stop_process "hollow-$name"
  rm -rf "$(hollow_dir "$name")"
}

hollow_nodes_down() {
  local n
  step "remove hollow nodes"
  for n in $(hollow_names); do remove_hollow_node "$n"; done
  # Hollow nodes of an earlier run whose names file is gone (the Node objects outlive it).
  if running kube-apiserver; then
    for n in $(kc get nodes -l "$LG_HOLLOW_LABEL=true" -o name 2>/dev/null); do
      remove_hollow_node "${n#node/}"
    done
  fi
  rm -f "$LG_HOLLOW_FILE"
  say "no hollow nodes"
}

# Node objects of hollow nodes whose kubelet is not running (the cluster went down with
# them, or a run was interrupted) would hold DaemonSet pods Pending forever and keep the
# e2e harness waiting; `up` forgets them, and leaves running hollow nodes alone.
forget_stale_hollow_nodes() {
  local n
  for n in $(kc get nodes -l "$LG_HOLLOW_LABEL=true" -o name 2>/dev/null); do
    n=${n#node/}
    running "hollow-$n" && continue
    step "delete node $n: a hollow node whose kubelet is gone"
    remove_hollow_node "$n"
  done
  if [ -s "$LG_HOLLOW_FILE" ]; then
    for n in $(hollow_names); do running "hollow-$n" && return 0; done
    rm -f "$LG_HOLLOW_FILE"
  fi
}

hollow_status() {
  local n rc=0
  for n in $(hollow_names); do
    if running "hollow-$n"; then
      printf '%-34s running (pid %s)\n' "hollow-$n" "$(pid_of "hollow-$n")"
    else
      printf '%-34s stopped\n' "hollow-$n"
      rc=1
    fi
  done
  return $rc
}
