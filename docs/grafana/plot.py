#!/usr/bin/python3
"""Renders the dashboard's key queries from a running Prometheus into a PNG.

    docs/grafana/plot.py [--minutes 15] [--prometheus http://127.0.0.1:9090] [--out docs/img/dashboard.png]

Needs python3-matplotlib (apt-get install python3-matplotlib). The queries are the ones
of docs/grafana/lifeguard.json, with a fixed rate window instead of $__rate_interval.
"""
import argparse
import datetime as dt
import json
import time
import urllib.parse
import urllib.request

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

PANELS = [
    ("Admissions per second by decision (webhook)", "req/s", [
        ('sum by (decision) (rate(lifeguard_webhook_admissions_total{job="lifeguard-webhook"}[30s]))', "{decision}"),
    ]),
    ("Admission latency p99 (webhook)", "seconds", [
        ('histogram_quantile(0.99, sum by (le, webhook) (rate(lifeguard_webhook_admission_duration_seconds_bucket{job="lifeguard-webhook"}[1m])))', "p99 {webhook}"),
    ]),
    ("Kubelet rejections and re-creations (controller, per 30s)", "count", [
        ('sum(increase(lifeguard_controller_pod_rejections_total{job="lifeguard-controller"}[30s]))', "rejections"),
        ('sum(increase(lifeguard_controller_recreations_total{job="lifeguard-controller"}[30s]))', "re-creations"),
        ('sum(increase(lifeguard_controller_give_ups_total{job="lifeguard-controller"}[30s]))', "give-ups"),
    ]),
    ("Drain progress: workspaces a window still waits for", "workspaces", [
        ('max by (window) (lifeguard_controller_drain_remaining{job="lifeguard-controller"})', "{window}"),
    ]),
    ("Workspaces by phase (controller)", "workspaces", [
        ('max by (phase) (lifeguard_controller_workspaces{job="lifeguard-controller"}) > 0', "{phase}"),
    ]),
    ("Node verdict and checks (prober)", "", [
        ('max by (verdict) (lifeguard_prober_verdict{job="lifeguard-prober"})', "verdict {verdict}"),
        ('sum by (outcome) (increase(lifeguard_prober_checks_total{job="lifeguard-prober"}[1m]))', "checks/min {outcome}"),
    ]),
]


def query_range(base, expr, start, end, step):
    params = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": step})
    with urllib.request.urlopen(f"{base}/api/v1/query_range?{params}", timeout=10) as r:
        body = json.load(r)
    if body["status"] != "success":
        raise SystemExit(f"{expr}: {body}")
    return body["data"]["result"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=15)
    ap.add_argument("--prometheus", default="http://127.0.0.1:9090")
    ap.add_argument("--out", default="docs/img/dashboard.png")
    args = ap.parse_args()
    end = time.time()
    start = end - args.minutes * 60
    step = max(2, int(args.minutes * 60 / 400))
    fig, axes = plt.subplots(3, 2, figsize=(14, 10), sharex=True)
    for ax, (title, unit, queries) in zip(axes.flat, PANELS):
        for expr, legend in queries:
            for series in query_range(args.prometheus, expr, start, end, step):
                xs = [dt.datetime.fromtimestamp(float(t), dt.timezone.utc) for t, _ in series["values"]]
                ys = [float(v) for _, v in series["values"]]
                ax.plot(xs, ys, label=legend.format_map(series["metric"]), drawstyle="steps-post")
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(unit)
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7, loc="upper left")
        else:
            ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center")
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M", tz=dt.timezone.utc))
    fig.suptitle(f"lifeguard on the local cluster: the last {args.minutes:g} minutes (UTC), from {args.prometheus}")
    fig.tight_layout()
    fig.savefig(args.out, dpi=90)
    print(args.out)


if __name__ == "__main__":
    main()
