# Settings of the local cluster. Sourced; each can be overridden from the environment.
# Nodes are lifeguard-node-1 .. lifeguard-node-N (`lifeguard-cluster up --nodes N`), each a
# kubelet with its own containerd, directories, mount namespace, address,
# pod CIDR and ports (cluster/node.sh). `up` records the names in $LG_STATE/node-names.
LG_NODE_PREFIX=lifeguard-node
LG_MAX_NODES=8
# Addresses from the benchmarking range (RFC 2544): never routed, so nothing outside this
# machine is ever addressed. Node i is 198.18.0.i with pods in 198.18.(15+i).0/24; the
# addresses sit on a port-less bridge because the kubelet refuses loopback node addresses
# and this kernel has no dummy interfaces. The API server listens on node 1's address.
LG_NODE_IP=198.18.0.1
# Every node's pod CIDR lies in here; kube-proxy masquerades traffic from outside it.
LG_CLUSTER_CIDR=${LG_CLUSTER_CIDR:-198.18.16.0/20}
LG_SERVICE_CIDR=${LG_SERVICE_CIDR:-198.18.32.0/24}
LG_SERVICE_IP=${LG_SERVICE_IP:-198.18.32.1}
LG_API_PORT=${LG_API_PORT:-6443}
LG_ETCD_PORT=${LG_ETCD_PORT:-2379}
# kube-apiserver's /debug/pprof (CPU profiles for the scale benchmarks, RBAC-gated like any
# non-resource URL). Off by default; it takes effect when the API server (re)starts.
LG_APISERVER_PROFILING=${LG_APISERVER_PROFILING:-false}
# kube-apiserver's audit log at Metadata level (who made each request: for the scale
# benchmarks' counts by client, bench/apiserver-audit-report). Off by default: it costs the
# API server CPU and disk. It takes effect when the API server (re)starts.
LG_APISERVER_AUDIT=${LG_APISERVER_AUDIT:-false}
LG_RUN=/run/lifeguard-cluster
LG_KUBECONFIG="$LG_STATE/kubeconfig"
LG_PAUSE_IMAGE=lifeguard.local/pause:3.2
LG_BUSYBOX_IMAGE=lifeguard.local/busybox:latest
LG_K8S_VERSION=1.20.5+really1.20.2-1.1+deb12u1
# Bump LG_K8S_BUILD when the build recipe changes, so caches built the old way are not used.
LG_K8S_BUILD=3
LG_K8S_BIN="$LG_CACHE/k8s-$LG_K8S_VERSION-b$LG_K8S_BUILD/bin"
# kubemark's hollow node, built from the same source (cluster/build-kubemark.sh), cached
# apart so that adding it did not invalidate the server binaries above.
LG_KUBEMARK_BUILD=3
LG_KUBEMARK_BIN="$LG_CACHE/kubemark-$LG_K8S_VERSION-b$LG_KUBEMARK_BUILD/bin"
