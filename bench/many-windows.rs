//! Benchmark: admission and window cost as MaintenanceWindows pile up. The webhook decides
//! each workspace-pod CREATE against every compiled window, so its cost grows with their
//! number; this measures by how much, with K = 0 to 5,000 windows of which none covers the
//! request (the common case: windows for other teams, other namespaces, other times) and
//! one that does, not active now (so the whole gate runs).
//!
//!   cargo run --release -p lifeguard-webhook --example many-windows [ITERATIONS]
//!
//! Prints, per K: the median and p99 of one validation and one mutation decision (the
//! parsed request in, the decision out, in process: the part that grows with K; the TLS,
//! HTTP and parsing around it do not), and the time to compile the K windows (what a
//! replica does on each window change). Windows: a third one-off (in 2030), a third
//! recurring cron in a time zone, a third recurring with exclusions; each selects its own
//! team's namespaces, so none covers the request's namespace.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use lifeguard_api::MaintenanceWindow;
use lifeguard_api::window::CompiledWindow;
use lifeguard_webhook::decision::{self, Inputs, NamespaceLabels};
use lifeguard_webhook::review;
use serde_json::json;

fn window(i: usize) -> anyhow::Result<MaintenanceWindow> {
    let team = json!({"matchLabels": {"team": format!("team-{i}")}});
    let spec = match i % 3 {
        0 => json!({"start": "2030-01-01T02:00:00Z", "end": "2030-01-01T04:00:00Z",
                    "namespaceSelector": team}),
        1 => json!({"schedule": format!("{} 3 * * 6", i % 60), "duration": "2h",
                    "timeZone": "Europe/Berlin", "namespaceSelector": team}),
        _ => json!({"schedule": "0 2 1 * *", "duration": "4h", "timeZone": "America/New_York",
                    "exclusions": [{"start": "2026-12-24", "end": "2026-12-26", "reason": "holidays"}],
                    "namespaceSelector": team}),
    };
    Ok(serde_json::from_value(
        json!({"metadata": {"name": format!("w{i:05}")}, "spec": spec}),
    )?)
}

/// One that covers the request's workspaces but is not active now.
fn covering() -> anyhow::Result<MaintenanceWindow> {
    Ok(serde_json::from_value(
        json!({"metadata": {"name": "covering"}, "spec": {
        "schedule": "0 4 1 1 *", "duration": "1h", "timeZone": "UTC",
        "workspaceSelector": {"matchLabels": {"team": "blue"}}}}),
    )?)
}

const REQUEST: &str = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"bench-0001",
"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
"operation":"CREATE","namespace":"default","userInfo":{"username":"bench"},
"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ws-bench","namespace":"default",
"labels":{"lifeguard.dev/workspace":"bench","team":"blue"}},
"spec":{"containers":[{"name":"ide","image":"lifeguard.local/busybox:latest"}]}}}}"#;

fn quantiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    (at(0.5), at(0.99))
}

fn main() -> anyhow::Result<()> {
    let iterations: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(2000);
    let request = review::parse(REQUEST.as_bytes()).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let namespace = NamespaceLabels::Known(BTreeMap::from([(
        "kubernetes.io/metadata.name".to_string(),
        "default".to_string(),
    )]));
    println!("windows   validate p50    p99        mutate p50    p99        compile all");
    let mut baseline = None;
    for k in [0usize, 10, 100, 1000, 5000] {
        let sources: Vec<MaintenanceWindow> = (0..k)
            .map(window)
            .chain(std::iter::once(covering()))
            .collect::<anyhow::Result<_>>()?;
        let compile_started = Instant::now();
        let windows: Vec<CompiledWindow> = sources
            .iter()
            .map(|w| CompiledWindow::compile(w).map_err(|e| anyhow::anyhow!("{e}")))
            .collect::<anyhow::Result<_>>()?;
        let compiled_in = compile_started.elapsed();
        let now = Timestamp::now();
        let inputs = Inputs {
            windows: &windows,
            namespace: &namespace,
            now,
            recreation_users: &[],
        };
        let mut validate = Vec::with_capacity(iterations);
        let mut mutate = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let started = Instant::now();
            let decision = decision::validate(&request, &inputs);
            validate.push(started.elapsed());
            std::hint::black_box(decision);
            let started = Instant::now();
            let decision = decision::mutate(&request, &inputs);
            mutate.push(started.elapsed());
            std::hint::black_box(decision);
        }
        let (v50, v99) = quantiles(validate);
        let (m50, m99) = quantiles(mutate);
        println!(
            "{:>7}   {:>10.1?} {:>10.1?}   {:>10.1?} {:>10.1?}   {:>10.1?}",
            k + 1,
            v50,
            v99,
            m50,
            m99,
            compiled_in
        );
        if k == 0 {
            baseline = Some(v50);
        } else if let Some(base) = baseline {
            println!(
                "          validate p50 is {:.1}x the one-window case; {:.2} µs per window",
                v50.as_secs_f64() / base.as_secs_f64(),
                (v50.as_secs_f64() - base.as_secs_f64()) * 1e6 / k as f64
            );
        }
    }
    Ok(())
}
