use std::time::Duration;

use super::*;

fn api_error(code: u16) -> Error {
    Error::Kube(kube::Error::Api(Box::new(kube::core::Status {
        code,
        message: "m".into(),
        ..Default::default()
    })))
}

#[test]
fn failures_are_labelled_and_retried_by_what_they_mean() {
    let cases = [
        (api_error(409), "conflict", 1),
        (api_error(404), "gone", 1),
        (api_error(403), "api_error", 5),
        (api_error(500), "api_error", 5),
        (Error::NoNamespace, "no_namespace", 5),
    ];
    for (error, label, wait) in cases {
        assert_eq!(error.reason(), label, "{error}");
        assert_eq!(
            retry_wait(error.reason()),
            Duration::from_secs(wait),
            "{error}"
        );
    }
}

#[test]
fn a_deletion_mid_reconcile_does_not_page_but_real_failures_do() {
    // The alert's own matcher, as shipped: a Workspace deleted while its reconcile ran is
    // routine, so its label must stay outside LifeguardControllerReconcileErrors.
    const ALERTS: &str = include_str!("../../manifests/monitoring/alerts.yaml");
    const SERIES: &str = "lifeguard_controller_reconciles_total{result=~\"";
    let matcher = ALERTS
        .split_once(SERIES)
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(alternatives, _)| alternatives.split('|').collect::<Vec<_>>())
        .unwrap_or_default();
    assert!(
        !matcher.is_empty(),
        "the reconcile error alert is in alerts.yaml"
    );
    assert!(!matcher.contains(&api_error(404).reason()));
    for error in [api_error(500), Error::NoNamespace] {
        assert!(matcher.contains(&error.reason()), "{error} pages");
    }
}
