# Certificates for the local cluster. Sourced by lifeguard-cluster.
# Every certificate is X.509 v3 (rustls rejects v1 client certs), signed by one local CA.

# issue_cert NAME SUBJECT EXT: key + cert signed by the cluster CA, kept when already there.
issue_cert() {
  local name=$1 subject=$2 ext=$3 dir="$LG_STATE/pki"
  [ -s "$dir/$name.crt" ] && [ -s "$dir/$name.key" ] && return 0
  openssl req -new -newkey rsa:2048 -nodes -keyout "$dir/$name.key" -subj "$subject" \
    -out "$dir/$name.csr" 2>>"$LG_LOGS/pki.log"
  printf '%s\n' "$ext" >"$dir/$name.ext"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 825 -sha256 -extfile "$dir/$name.ext" -out "$dir/$name.crt" 2>>"$LG_LOGS/pki.log" ||
    die "signing the $name certificate failed" "$LG_LOGS/pki.log"
  rm -f "$dir/$name.csr" "$dir/$name.ext"
}

LG_CLIENT_EXT="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"

make_pki() {
  local dir="$LG_STATE/pki"
  mkdir -p "$dir" && chmod 700 "$dir"
  step "certificates in $dir"
  if [ ! -s "$dir/ca.crt" ]; then
    openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$dir/ca.key" -days 3650 -sha256 \
      -subj "/CN=lifeguard-local-ca" -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" -out "$dir/ca.crt" 2>>"$LG_LOGS/pki.log" ||
      die "creating the cluster CA failed" "$LG_LOGS/pki.log"
  fi
  local client=$LG_CLIENT_EXT
  local server="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth"
  issue_cert apiserver "/CN=kube-apiserver" "$server
subjectAltName=IP:127.0.0.1,IP:$LG_NODE_IP,IP:$LG_SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  issue_cert admin "/O=system:masters/CN=lifeguard-admin" "$client"
  # The API server reaches kubelets (logs, exec) as a cluster admin in this local cluster.
  issue_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
  issue_cert controller-manager "/CN=system:kube-controller-manager" "$client"
  issue_cert scheduler "/CN=system:kube-scheduler" "$client"
  # system:kube-proxy is bound to the built-in system:node-proxier ClusterRole.
  issue_cert kube-proxy "/CN=system:kube-proxy" "$client"
  if [ ! -s "$dir/sa.key" ]; then
    openssl genrsa -out "$dir/sa.key" 2048 2>>"$LG_LOGS/pki.log" &&
      openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>>"$LG_LOGS/pki.log" ||
      die "creating the service-account key failed" "$LG_LOGS/pki.log"
  fi
}

# make_node_pki NAME: the node's kubelet client certificate (the Node authorizer knows it
# by its name) and serving certificate (for its address), and its kubeconfig.
make_node_pki() {
  local name=$1 ip
  ip=$(node_ip "$name")
  issue_cert "kubelet-client-$name" "/O=system:nodes/CN=system:node:$name" "$LG_CLIENT_EXT"
  issue_cert "kubelet-$name" "/CN=$name" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:$ip,DNS:$name"
  mkdir -p "$(node_dir "$name")"
  write_kubeconfig "$(node_dir "$name")/kubelet.kubeconfig" "kubelet-client-$name"
}

# write_kubeconfig FILE CERT-NAME: a kubeconfig that authenticates with that client cert.
write_kubeconfig() {
  local file=$1 name=$2 dir="$LG_STATE/pki"
  cat >"$file" <<KC
apiVersion: v1
kind: Config
clusters:
- name: lifeguard-local
  cluster:
    server: https://127.0.0.1:$LG_API_PORT
    certificate-authority-data: $(base64 -w0 "$dir/ca.crt")
users:
- name: $name
  user:
    client-certificate-data: $(base64 -w0 "$dir/$name.crt")
    client-key-data: $(base64 -w0 "$dir/$name.key")
contexts:
- name: lifeguard-local
  context: {cluster: lifeguard-local, user: $name}
current-context: lifeguard-local
KC
  chmod 600 "$file"
}
