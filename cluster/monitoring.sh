# A real Prometheus (Debian's package) on the host, scraping lifeguard's pods, with
# lifeguard's alert rules loaded. Sourced by local-up after the components are started.

LG_PROMETHEUS_ADDR=${LG_PROMETHEUS_ADDR:-127.0.0.1:9090}
LG_PROMETHEUS_DIR="$LG_STATE/prometheus"
# Short, so the end-to-end tests see counters move within seconds.
LG_PROMETHEUS_INTERVAL=${LG_PROMETHEUS_INTERVAL:-2s}

# One scrape job per component; its targets are lifeguard's pods (every replica and every
# node's prober, on their pod IPs, as a ServiceMonitor would give them). Debian's
# Prometheus is built without Kubernetes discovery, so a small loop on this machine
# (lifeguard-prometheus-targets) writes the pods it lists into file_sd files.
# scrape_job JOB
scrape_job() {
  cat <<YAML
  - job_name: $1
    file_sd_configs:
      - files: ["$LG_PROMETHEUS_DIR/targets/$1.json"]
        refresh_interval: 2s
YAML
}

# write_job JOB APP PORT LINES: APP's pods among LINES ("app ip node pod" each) as JOB's
# file_sd target list.
write_job() {
  local job=$1 app=$2 port=$3 lines=$4 sep="" name ip node pod
  local out="$LG_PROMETHEUS_DIR/targets/$job.json"
  {
    printf '['
    while read -r name ip node pod; do
      [ "$name" = "$app" ] && [ -n "$ip" ] || continue
      printf '%s{"targets": ["%s:%s"], "labels": {"node": "%s", "pod": "%s"}}' "$sep" "$ip" "$port" "$node" "$pod"
      sep=,
    done <<<"$lines"
    printf ']\n'
  } >"$out.tmp" && mv "$out.tmp" "$out"
}

# write_targets: the Running pods of the three components, from one list of
# lifeguard-system's pods. Each such list is read from etcd; one per component every 2 s
# was most of the pod reads an idle local cluster made (docs/benchmarks.md).
write_targets() {
  local lines
  lines=$(kubectl --kubeconfig "$LG_KUBECONFIG" -n lifeguard-system get pods \
    -l 'app.kubernetes.io/name in (lifeguard-webhook,lifeguard-controller,lifeguard-workspace-node)' \
    --field-selector=status.phase=Running \
    -o jsonpath='{range .items[*]}{.metadata.labels.app\.kubernetes\.io/name} {.status.podIP} {.spec.nodeName} {.metadata.name}{"\n"}{end}' 2>/dev/null) || return 0
  write_job lifeguard-webhook lifeguard-webhook 8080 "$lines"
  write_job lifeguard-controller lifeguard-controller 8080 "$lines"
  write_job lifeguard-prober lifeguard-workspace-node 8089 "$lines"
}

refresh_targets_forever() {
  while true; do
    write_targets
    sleep 2
  done
}

prometheus_config() {
  local rules
  rules="$(pwd)/manifests/monitoring/alerts.yaml"
  cat <<YAML
# Written by cluster/monitoring.sh (start_prometheus); rewritten on every local-up.
global:
  scrape_interval: $LG_PROMETHEUS_INTERVAL
  scrape_timeout: $LG_PROMETHEUS_INTERVAL
  evaluation_interval: $LG_PROMETHEUS_INTERVAL
rule_files:
  - $rules
scrape_configs:
  # The job names the alert rules use (the ServiceMonitors give the same ones in a cluster).
YAML
  scrape_job lifeguard-webhook
  scrape_job lifeguard-controller
  scrape_job lifeguard-prober
  cat <<YAML
  - job_name: prometheus
    static_configs: [{targets: ["$LG_PROMETHEUS_ADDR"]}]
YAML
}

prometheus_ready() { curl -fsS "http://$LG_PROMETHEUS_ADDR/-/ready"; }

start_prometheus() {
  step "start Prometheus on http://$LG_PROMETHEUS_ADDR (scrape every $LG_PROMETHEUS_INTERVAL)"
  apt_install prometheus curl
  # The package enables a systemd unit on :9090; where systemd runs, it would hold the port.
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
    systemctl disable --now prometheus >>"$LG_LOGS/lifeguard-prometheus.log" 2>&1 || true
  fi
  mkdir -p "$LG_PROMETHEUS_DIR/data" "$LG_PROMETHEUS_DIR/targets"
  prometheus_config >"$LG_PROMETHEUS_DIR/prometheus.yml"
  stop_process lifeguard-prometheus-targets
  start lifeguard-prometheus-targets bash -c "$(declare -f write_job write_targets refresh_targets_forever); LG_KUBECONFIG='$LG_KUBECONFIG' LG_PROMETHEUS_DIR='$LG_PROMETHEUS_DIR' refresh_targets_forever"
  promtool check config "$LG_PROMETHEUS_DIR/prometheus.yml" >>"$LG_LOGS/lifeguard-prometheus.log" 2>&1 ||
    die "the Prometheus configuration is invalid" "$LG_LOGS/lifeguard-prometheus.log"
  # Named lifeguard-* so that 'lifeguard-cluster down' stops it with lifeguard.
  start lifeguard-prometheus prometheus --config.file "$LG_PROMETHEUS_DIR/prometheus.yml" \
    --storage.tsdb.path "$LG_PROMETHEUS_DIR/data" --storage.tsdb.retention.time 2d \
    --web.listen-address "$LG_PROMETHEUS_ADDR" --web.enable-lifecycle
  wait_for "lifeguard-prometheus" 60 "$LG_LOGS/lifeguard-prometheus.log" lifeguard-prometheus prometheus_ready
  # Already running: pick up the configuration and rules just written.
  curl -fsS -X POST "http://$LG_PROMETHEUS_ADDR/-/reload" >>"$LG_LOGS/lifeguard-prometheus.log" 2>&1 ||
    die "Prometheus did not reload its configuration" "$LG_LOGS/lifeguard-prometheus.log"
  step "wait for Prometheus to scrape the webhook, the controller and the prober"
  wait_for "Prometheus targets" 60 "$LG_LOGS/lifeguard-prometheus.log" lifeguard-prometheus prometheus_targets_up
}

# Each of the three lifeguard jobs has a target that is up.
prometheus_targets_up() {
  local out
  out=$(curl -fsS "http://$LG_PROMETHEUS_ADDR/api/v1/query" \
    --data-urlencode 'query=count(count by (job) (up{job=~"lifeguard-.*"} == 1))') || return 1
  grep -q '"value":\[[0-9.]*,"3"\]' <<<"$out"
}
