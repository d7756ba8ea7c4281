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
LG_PAUSE_IMAGE=lifeguard.local/pause:3.10
LG_BUSYBOX_IMAGE=lifeguard.local/busybox:latest
# The binaries of the cluster, each built from a wrapper module in cluster/go/ (its go.mod
# and go.sum pin every dependency) with the Go of cluster/go-env.sh, by
# cluster/build-k8s.sh. Each is cached by version and by a hash of its module files, so a
# change to a module (or LG_BUILD_RECIPE, for a change in how they are built) builds
# afresh and never takes an older build.
LG_BUILD_RECIPE=1
LG_GO_MODULES="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/go"
module_key() { cat "$LG_GO_MODULES/$1/go.mod" "$LG_GO_MODULES/$1/go.sum" | sha256sum | cut -c1-12; }
# Kubernetes: every server, kube-proxy, the kubelet of every node but the skew node, and
# kubectl (scripts and tests put this directory first on PATH).
LG_K8S_VERSION=v1.37.2
LG_K8S_BIN="$LG_CACHE/kubernetes-$LG_K8S_VERSION-$(module_key kubernetes)-r$LG_BUILD_RECIPE"
# The skew node (the last node of a cluster of two or more) starts with an older kubelet,
# three minors back as upstream supports, and the upgrade drill upgrades it to
# LG_K8S_VERSION (`lifeguard-cluster node kubelet NAME VERSION`).
LG_KUBELET_OLD_VERSION=v1.34.4
LG_KUBELET_OLD_BIN="$LG_CACHE/kubelet-$LG_KUBELET_OLD_VERSION-$(module_key kubelet-old)-r$LG_BUILD_RECIPE"
LG_ETCD_VERSION=v3.7.4
LG_ETCD_BIN="$LG_CACHE/etcd-$LG_ETCD_VERSION-$(module_key etcd)-r$LG_BUILD_RECIPE"
LG_CONTAINERD_VERSION=v2.3.7
LG_CONTAINERD_BIN="$LG_CACHE/containerd-$LG_CONTAINERD_VERSION-$(module_key containerd)-r$LG_BUILD_RECIPE"
# kubemark's hollow node, from the same Kubernetes module (cluster/build-kubemark.sh).
LG_KUBEMARK_BIN="$LG_CACHE/kubemark-$LG_K8S_VERSION-$(module_key kubernetes)-r$LG_BUILD_RECIPE"
export PATH="$LG_K8S_BIN:$LG_CONTAINERD_BIN:$LG_ETCD_BIN:$PATH"
# helm, for the chart's checks and its e2e test only (cluster/build-helm.sh builds it when
# they first need it).
LG_HELM_VERSION=v4.3.2
LG_HELM_BIN="$LG_CACHE/helm-$LG_HELM_VERSION-$(module_key helm)-r$LG_BUILD_RECIPE"
export PATH="$LG_HELM_BIN:$PATH"
# kwok (SIG Scheduling's node and pod simulator) for the fake nodes (`lifeguard-cluster
# fake-nodes`, cluster/kwok.sh): thousands of Nodes and their pods' status from one process,
# against the real API server and scheduler (cluster/build-kwok.sh builds it when they first
# need it).
LG_KWOK_VERSION=v0.8.0
LG_KWOK_BIN="$LG_CACHE/kwok-$LG_KWOK_VERSION-$(module_key kwok)-r$LG_BUILD_RECIPE"
# Karpenter with its kwok cloud provider, for the e2e test of an upgrade tool's own drain
# (tests/tests/karpenter.rs; cluster/build-karpenter.sh builds it when the test first needs
# it). Its module asks for a newer Go than the cluster's other binaries.
LG_KARPENTER_VERSION=v1.15.0
LG_KARPENTER_GO_MIN=1.27.3
LG_KARPENTER_BIN="$LG_CACHE/karpenter-$LG_KARPENTER_VERSION-$(module_key karpenter)-r$LG_BUILD_RECIPE"
