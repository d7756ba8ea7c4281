# The nodes of the local cluster. Sourced by lifeguard-cluster (and by local-up, for the
# names and paths).
#
# Every node is a kubelet and a containerd of its own on this machine. They share the
# machine's network namespace (so one kube-proxy serves them all, as the host's iptables
# are shared) but each runs in a mount namespace of its own, where:
#   - /var/log/pods and /var/log/containers are the node's own: a kubelet garbage-collects
#     every pod log directory there that is not one of its pods, so nodes sharing them
#     would delete each other's logs;
#   - $LG_PROBER_STORAGE is the node's own workspace disk (a loop-mounted ext4 image, so
#     tests can make one node's storage read-only or freeze it), exactly the path a real
#     node's workspace daemon would use.

# The path every node's prober mounts (manifests/local). On the machine itself it stays an
# empty directory; inside node N it is that node's disk, kept at $(node_storage N).
LG_PROBER_STORAGE="$LG_STATE/workspace-storage"
LG_NODES_FILE="$LG_STATE/node-names"

node_names() { [ -s "$LG_NODES_FILE" ] && cat "$LG_NODES_FILE"; return 0; }
node_name() { printf '%s-%s\n' "$LG_NODE_PREFIX" "$1"; }
node_index() { printf '%s\n' "${1##*-}"; }
node_ip() { printf '198.18.0.%s\n' "$(node_index "$1")"; }
node_pod_cidr() { printf '198.18.%s.0/24\n' "$((15 + $(node_index "$1")))"; }
node_dir() { printf '%s\n' "$LG_STATE/nodes/$1"; }
node_run() { printf '%s\n' "$LG_RUN/nodes/$1"; }
node_socket() { printf '%s\n' "$LG_RUN/nodes/$1/containerd.sock"; }
node_storage() { printf '%s\n' "$LG_STATE/nodes/$1/workspace-storage"; }
node_bridge() { printf 'lg-cni%s\n' "$(node_index "$1")"; }

# The skew node, the last of two or more, runs the older kubelet ($LG_KUBELET_OLD_VERSION)
# from each `up` that starts it until `node kubelet NAME VERSION` switches it (the upgrade
# drill does, to $LG_K8S_VERSION); every other node runs $LG_K8S_VERSION. A node's record
# of its version outlives a stopped kubelet, so `node start` keeps what the drill chose.
is_skew_node() {
  local count
  count=$(node_names | wc -l)
  [ "$count" -ge 2 ] && [ "$(node_index "$1")" = "$count" ]
}
node_kubelet_record() { printf '%s\n' "$(node_dir "$1")/kubelet-version"; }
node_kubelet_version() { cat "$(node_kubelet_record "$1")" 2>/dev/null || printf '%s\n' "$LG_K8S_VERSION"; }
set_node_kubelet_version() {
  mkdir -p "$(node_dir "$1")"
  printf '%s\n' "$2" >"$(node_kubelet_record "$1")"
}
# kubelet_bin VERSION: the binary of a kubelet version the cluster knows.
kubelet_bin() {
  case "$1" in
    "$LG_K8S_VERSION") printf '%s\n' "$LG_K8S_BIN/kubelet" ;;
    "$LG_KUBELET_OLD_VERSION") printf '%s\n' "$LG_KUBELET_OLD_BIN/kubelet" ;;
    *) die "no kubelet $1 here (known: $LG_K8S_VERSION, $LG_KUBELET_OLD_VERSION)" ;;
  esac
}

is_node() {
  local n
  for n in $(node_names); do [ "$n" = "$1" ] && return 0; done
  return 1
}

write_containerd_config() {
  local name=$1 dir run
  dir=$(node_dir "$name") run=$(node_run "$name")
  mkdir -p "$dir/containerd" "$dir/cni/net.d" "$run"
  # restrict_oom_score_adj: this sandbox forbids raising oom_score_adj, and runc fails
  # with "can't get final child's PID from pipe" without it. Every node's containerd runs
  # on this one machine, so nothing may sit at a fixed path: NRI's socket is one (NRI is
  # unused here), and the pod sandbox and CNI paths are the node's own.
  cat >"$dir/containerd/config.toml" <<CFG
version = 3
root = "$dir/containerd/root"
state = "$run/containerd-state"
[grpc]
  address = "$(node_socket "$name")"
[ttrpc]
  address = "$(node_socket "$name").ttrpc"
[plugins.'io.containerd.nri.v1.nri']
  disable = true
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "$LG_SNAPSHOTTER"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$LG_PAUSE_IMAGE"
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
    SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$dir/cni/net.d"
CFG
  # The default route (via the bridge, isGateway) takes pods to Service IPs, to the node
  # addresses and to other nodes' bridges: all on this machine, which forwards between them.
  cat >"$dir/cni/net.d/10-lifeguard.conflist" <<CNI
{
  "cniVersion": "0.4.0",
  "name": "lifeguard",
  "plugins": [
    {"type": "bridge", "bridge": "$(node_bridge "$name")", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$(node_pod_cidr "$name")"}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$dir/cni/ipam"}},
    {"type": "loopback"}
  ]
}
CNI
}

# overlayfs needs a backing filesystem that supports it; fall back to native copies.
choose_snapshotter() {
  local probe="$LG_STATE/overlay-probe"
  rm -rf "$probe" && mkdir -p "$probe"/{l,u,w,m}
  if mount -t overlay overlay -o "lowerdir=$probe/l,upperdir=$probe/u,workdir=$probe/w" "$probe/m" 2>/dev/null; then
    umount "$probe/m"
    LG_SNAPSHOTTER=overlayfs
  else
    LG_SNAPSHOTTER=native
  fi
  rm -rf "$probe"
}

write_kubelet_config() {
  local name=$1 dir ip
  dir=$(node_dir "$name") ip=$(node_ip "$name")
  mkdir -p "$dir/kubelet"
  # Ports: every kubelet listens on its own node address (10250, healthz 10248), so the
  # numbers repeat; the read-only port is off. Without QoS cgroups (this sandbox cannot
  # create them; ../shared/LOCAL-CLUSTER.md) the kubelet passes no cgroup parent, so
  # cgroupRoot would change nothing (measured): each containerd puts a container in
  # /k8s.io/<container id>, unique across nodes.
  cat >"$dir/kubelet/config.yaml" <<CFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
healthzBindAddress: $ip
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$LG_STATE/pki/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "$LG_STATE/pki/kubelet-$name.crt"
tlsPrivateKeyFile: "$LG_STATE/pki/kubelet-$name.key"
containerRuntimeEndpoint: "unix://$(node_socket "$name")"
cgroupDriver: cgroupfs
# This sandbox mounts cgroup v1 only. Kubernetes 1.35+ refuses v1 unless told otherwise;
# it is the test bed's constraint, not a recommendation (docs/local-cluster.md).
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
evictionHard: {}
# No disk-pressure evictions or image GC in a test bed whose images cannot be pulled again.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
resolvConf: /etc/resolv.conf
serializeImagePulls: false
syncFrequency: 10s
maxPods: 250
CFG
}

ensure_node_address() {
  local name=$1
  if ! ip link show lg-node0 >/dev/null 2>&1; then
    ip link add lg-node0 type bridge || die "cannot create the lg-node0 interface"
  fi
  ip link set lg-node0 up
  # `replace` is idempotent: a bridge kept from an earlier run (the kernel's network state
  # outlives a clean checkout) already carries the address, and `add` would fail on it.
  ip addr replace "$(node_ip "$name")/32" dev lg-node0 || die "cannot add $(node_ip "$name") to lg-node0"
}

# The node's workspace disk, mounted on the machine at $(node_storage NAME). The mount is
# shared, so the node's bind of it (and the prober's HostToContainer mount) sees changes.
node_storage_up() {
  local name=$1 storage img log="$LG_LOGS/storage-$1.log"
  storage=$(node_storage "$name") img="$(node_dir "$name")/workspace-storage.img"
  mkdir -p "$storage"
  if ! findmnt -rn -o TARGET "$storage" | grep -qx "$storage"; then
    mount --bind "$storage" "$storage" >>"$log" 2>&1 || die "bind-mounting $storage failed" "$log"
  fi
  mount --make-rshared "$storage" >>"$log" 2>&1 || die "making $storage shared failed" "$log"
  if ! findmnt -rn -o SOURCE --mountpoint "$storage" | grep -q '^/dev/loop'; then
    if [ ! -s "$img" ]; then
      { truncate -s 64M "$img" && mkfs.ext4 -q -F "$img"; } >>"$log" 2>&1 ||
        die "creating $img failed" "$log"
    fi
    mount -o loop "$img" "$storage" >>"$log" 2>&1 || die "mounting $img failed" "$log"
  fi
  # An interrupted test may have left it frozen or read-only.
  fsfreeze -u "$storage" 2>/dev/null || true
  mount -o remount,rw "$storage" >>"$log" 2>&1 || die "making $storage writable failed" "$log"
}

mount_namespace_ready() {
  [ "$(readlink "/proc/$1/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ]
}

# The node's mount namespace, held open by a sleeping process. The node's own mounts (its
# log directories, volumes, container filesystems) stay inside. Slave propagation only
# brings in mounts made later under a shared mount: this machine's / is private, so a
# mount made on the machine (say, over a binary) does not reach the node; make it with
# `lifeguard-cluster node exec NAME mount ...`. Changes to a filesystem itself (a
# read-only remount or fsfreeze of the node's workspace disk) reach the node anyway.
node_mounts_up() {
  local name=$1 dir pid log="$LG_LOGS/mounts-$1.log"
  dir=$(node_dir "$name")
  running "mounts-$name" && return 0
  mkdir -p "$dir/pod-logs" "$dir/container-logs" /var/log/pods /var/log/containers "$LG_PROBER_STORAGE"
  start "mounts-$name" unshare --mount --propagation slave sleep infinity
  pid=$(pid_of "mounts-$name")
  wait_for "mount namespace of $name" 10 "$log" "mounts-$name" mount_namespace_ready "$pid"
  nsenter -t "$pid" -m -- sh -euc '
    mount --bind "$1" /var/log/pods
    mount --bind "$2" /var/log/containers
    mount --rbind "$3" "$4"
    mount --make-rshared "$4"' sh "$dir/pod-logs" "$dir/container-logs" "$(node_storage "$name")" \
    "$LG_PROBER_STORAGE" >>"$log" 2>&1 || die "setting up the mounts of $name failed" "$log"
}

# in_node NAME CMD...: CMD inside the node's mount namespace.
in_node() {
  local name=$1
  shift
  nsenter -t "$(pid_of "mounts-$name")" -m -- "$@"
}

start_node() {
  local name=$1 dir
  dir=$(node_dir "$name")
  step "start node $name ($(node_ip "$name"), pods $(node_pod_cidr "$name"))"
  ensure_node_address "$name"
  node_storage_up "$name"
  node_mounts_up "$name"
  local ns
  ns=$(pid_of "mounts-$name")
  start "containerd-$name" nsenter -t "$ns" -m -- "$LG_CONTAINERD_BIN/containerd" --config "$dir/containerd/config.toml"
  wait_for "containerd of $name" 60 "$LG_LOGS/containerd-$name.log" "containerd-$name" \
    ctr --address "$(node_socket "$name")" version
  mkdir -p "$dir/kubelet/root" "$dir/kubelet/pki"
  # A node registers unproven (docs/prober.md, "Unproven nodes"): no workspace lands on it
  # before its prober's first healthy verdict removes the taint and the label. The kubelet
  # applies both only when it creates the Node object, not on a restart.
  start "kubelet-$name" nsenter -t "$ns" -m -- "$(kubelet_bin "$(node_kubelet_version "$name")")" --config "$dir/kubelet/config.yaml" \
    --kubeconfig "$dir/kubelet.kubeconfig" \
    --hostname-override "$name" --node-ip "$(node_ip "$name")" \
    --root-dir "$dir/kubelet/root" --cert-dir "$dir/kubelet/pki" \
    --node-labels lifeguard.dev/local-cluster=true,lifeguard.dev/unproven=true \
    --register-with-taints lifeguard.dev/unproven=true:NoSchedule
}

# Stops the node's kubelet and runtime, and with them its containers: to the cluster the
# node is lost. Its directories, disk and mount namespace stay for `node start`.
stop_node() {
  local name=$1
  stop_process "kubelet-$name"
  stop_node_containers "$name"
  stop_process "containerd-$name"
}

# Every live process below the given ones, children before grandchildren (zombies, which
# only wait for their parent to reap them, are left out).
process_descendants() {
  local table queue=("$@") p kid
  table=$(ps -eo pid=,ppid=,stat= | awk '$3 !~ /^Z/')
  while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]}
    queue=("${queue[@]:1}")
    for kid in $(awk -v p="$p" '$2 == p {print $1}' <<<"$table"); do
      printf '%s\n' "$kid"
      queue+=("$kid")
    done
  done
}

# Kills the node's containers and their shims. Shims outlive containerd by design, and a
# container outlives its shim: killed alone, the shim leaves its container's processes
# running, re-parented to init, where they keep serving (a prober, a webhook) as if the
# node were up. So every process under the shims goes first, until none is left (a
# container may fork while it is killed), then the shims.
stop_node_containers() {
  local name=$1 shims rest i
  shims=$(pgrep -f "containerd-shim-runc-v2 .*-address $(node_socket "$name")" || true)
  [ -n "$shims" ] || return 0
  for i in $(seq 1 50); do
    # shellcheck disable=SC2086 # one pid per word
    rest=$(process_descendants $shims)
    [ -n "$rest" ] || break
    # shellcheck disable=SC2086
    kill -9 $rest 2>/dev/null || true
    sleep 0.1
  done
  # shellcheck disable=SC2086
  rest=$(process_descendants $shims)
  [ -z "$rest" ] || say "warning: node $name: processes still under its shims: $(echo $rest)"
  # shellcheck disable=SC2086
  kill -9 $shims 2>/dev/null || true
}

# After stop_node (and for `down`): the mount namespace and the disk go too.
remove_node_mounts() {
  local name=$1 storage
  stop_process "mounts-$name"
  storage=$(node_storage "$name")
  fsfreeze -u "$storage" 2>/dev/null || true
  findmnt -rn -o TARGET | { grep -E "^$storage(/|$)" || true; } | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
  ip link show "$(node_bridge "$name")" >/dev/null 2>&1 && ip link delete "$(node_bridge "$name")"
  rm -rf "$(node_dir "$name")/cni/ipam"
}

node_kubelet_reports() {
  [ "$(kc get node "$1" -o jsonpath='{.status.nodeInfo.kubeletVersion}')" = "$2" ]
}

node_ready() {
  [ "$(kc get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

wait_node_ready() {
  local name=$1
  step "wait for node $name to be Ready"
  wait_for "node $name" 180 "$LG_LOGS/kubelet-$name.log" "kubelet-$name" node_ready "$name"
}

# switch_kubelet NAME VERSION (or `current`, `skew`): an in-place kubelet upgrade (or
# downgrade) as an operator does it: stop the kubelet (its containers keep running), swap
# the binary, start it, and wait until the Node reports the new version and is Ready.
switch_kubelet() {
  local name=$1 version=$2
  case "$version" in
    current) version=$LG_K8S_VERSION ;;
    skew) version=$LG_KUBELET_OLD_VERSION ;;
  esac
  kubelet_bin "$version" >/dev/null
  step "switch the kubelet of $name to $version"
  stop_process "kubelet-$name"
  set_node_kubelet_version "$name" "$version"
  start_node "$name"
  wait_for "node $name reporting kubelet $version" 120 "$LG_LOGS/kubelet-$name.log" "kubelet-$name" \
    node_kubelet_reports "$name" "$version"
  wait_node_ready "$name"
}
