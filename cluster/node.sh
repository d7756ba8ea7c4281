# Node side of the local cluster: containerd, CNI and the kubelet. Sourced by lifeguard-cluster.

write_containerd_config() {
  mkdir -p "$LG_STATE/containerd" "$LG_STATE/cni/net.d" "$LG_RUN/containerd"
  # restrict_oom_score_adj: this sandbox forbids raising oom_score_adj, and runc fails
  # with "can't get final child's PID from pipe" without it.
  cat >"$LG_STATE/containerd/config.toml" <<CFG
version = 2
root = "$LG_STATE/containerd/root"
state = "$LG_RUN/containerd/state"
[grpc]
  address = "$LG_CONTAINERD_SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$LG_PAUSE_IMAGE"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "$LG_SNAPSHOTTER"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$LG_STATE/cni/net.d"
CFG
  # The default route (via the bridge, isGateway) takes pods to Service IPs and to the
  # node address, where kube-proxy's rules and the API server are.
  cat >"$LG_STATE/cni/net.d/10-lifeguard.conflist" <<CNI
{
  "cniVersion": "0.4.0",
  "name": "lifeguard",
  "plugins": [
    {"type": "bridge", "bridge": "lg-cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$LG_POD_CIDR"}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$LG_STATE/cni/ipam"}},
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
  mkdir -p "$LG_STATE/kubelet"
  cat >"$LG_STATE/kubelet/config.yaml" <<CFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $LG_NODE_IP
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$LG_STATE/pki/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "$LG_STATE/pki/kubelet.crt"
tlsPrivateKeyFile: "$LG_STATE/pki/kubelet.key"
cgroupDriver: cgroupfs
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
  if ! ip link show lg-node0 >/dev/null 2>&1; then
    ip link add lg-node0 type bridge || die "cannot create the lg-node0 interface"
  fi
  ip link set lg-node0 up
  # `replace` is idempotent: a bridge kept from an earlier run (the kernel's network state
  # outlives a clean checkout) already carries the address, and `add` would fail on it.
  ip addr replace "$LG_NODE_IP/32" dev lg-node0 || die "cannot add $LG_NODE_IP to lg-node0"
}
