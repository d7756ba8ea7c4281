# Settings of the local cluster. Sourced; each can be overridden from the environment.
LG_NODE_NAME=${LG_NODE_NAME:-lifeguard-node}
# Addresses from the benchmarking range (RFC 2544): never routed, so nothing outside this
# machine is ever addressed. The node address sits on a port-less bridge because the
# kubelet refuses loopback node addresses and this kernel has no dummy interfaces.
LG_NODE_IP=${LG_NODE_IP:-198.18.0.1}
LG_POD_CIDR=${LG_POD_CIDR:-198.18.16.0/24}
# Every node's pod CIDR lies in here; kube-proxy masquerades traffic from outside it.
LG_CLUSTER_CIDR=${LG_CLUSTER_CIDR:-198.18.16.0/20}
LG_SERVICE_CIDR=${LG_SERVICE_CIDR:-198.18.32.0/24}
LG_SERVICE_IP=${LG_SERVICE_IP:-198.18.32.1}
LG_API_PORT=${LG_API_PORT:-6443}
LG_ETCD_PORT=${LG_ETCD_PORT:-2379}
LG_RUN=/run/lifeguard-cluster
LG_CONTAINERD_SOCK="$LG_RUN/containerd/containerd.sock"
LG_KUBECONFIG="$LG_STATE/kubeconfig"
LG_PAUSE_IMAGE=lifeguard.local/pause:3.2
LG_BUSYBOX_IMAGE=lifeguard.local/busybox:latest
LG_K8S_VERSION=1.20.5+really1.20.2-1.1+deb12u1
# Bump LG_K8S_BUILD when the build recipe changes, so caches built the old way are not used.
LG_K8S_BUILD=3
LG_K8S_BIN="$LG_CACHE/k8s-$LG_K8S_VERSION-b$LG_K8S_BUILD/bin"
