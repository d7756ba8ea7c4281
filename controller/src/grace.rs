//! How long a workspace pod's containers get to stop, pure: every timeout of a stop counts
//! from the end of the grace period, so a template's own would let its author hold a
//! drain's budget slot as long as they like (`--max-grace-period`).

use jiff::SignedDuration;
use k8s_openapi::api::core::v1::Pod;

/// The grace period the pod's containers get when stopped, at most `max` (whole seconds):
/// every timeout of a stop (the disposal's, the backup agent's) counts from the end of the
/// grace period, so an uncapped template value would hold a drain's budget slot as long as
/// its author likes. A template without one gets Kubernetes' default of 30 s, or `max`
/// when that is shorter.
pub fn cap_grace_period(pod: &mut Pod, max: SignedDuration) {
    let max = max.as_secs().max(0);
    let Some(spec) = pod.spec.as_mut() else {
        return;
    };
    let wanted = spec
        .termination_grace_period_seconds
        .unwrap_or(KUBERNETES_DEFAULT_GRACE_SECONDS);
    if wanted > max {
        spec.termination_grace_period_seconds = Some(max);
    }
}

/// The grace period the API server gives a pod whose spec sets none.
const KUBERNETES_DEFAULT_GRACE_SECONDS: i64 = 30;

/// The grace period to delete `pod` with: `None` (its own) unless that is longer than
/// `max`, as it can be for a pod created before the cap (`cap_grace_period`).
pub fn delete_grace_seconds(pod: &Pod, max: SignedDuration) -> Option<i64> {
    let own = pod
        .spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
        .unwrap_or(KUBERNETES_DEFAULT_GRACE_SECONDS);
    let max = max.as_secs().max(0);
    (own > max).then_some(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grace_period_is_capped() {
        let pod = |grace: Option<i64>| Pod {
            spec: Some(k8s_openapi::api::core::v1::PodSpec {
                termination_grace_period_seconds: grace,
                ..Default::default()
            }),
            ..Pod::default()
        };
        let five_minutes = SignedDuration::from_mins(5);
        // (what, template's grace, cap, the pod's grace, the drain's delete grace for a pod
        // built before the cap)
        let cases = [
            (
                "a year",
                Some(31_536_000),
                five_minutes,
                Some(300),
                Some(300),
            ),
            ("at the cap", Some(300), five_minutes, Some(300), None),
            ("below", Some(20), five_minutes, Some(20), None),
            ("none: Kubernetes' 30 s", None, five_minutes, None, None),
            (
                "none, cap below 30 s",
                None,
                SignedDuration::from_secs(10),
                Some(10),
                Some(10),
            ),
            ("cap zero", Some(5), SignedDuration::ZERO, Some(0), Some(0)),
        ];
        for (what, grace, max, want_spec, want_delete) in cases {
            assert_eq!(
                delete_grace_seconds(&pod(grace), max),
                want_delete,
                "{what}"
            );
            let mut capped = pod(grace);
            cap_grace_period(&mut capped, max);
            let got = capped.spec.and_then(|s| s.termination_grace_period_seconds);
            assert_eq!(got, want_spec, "{what}");
        }
    }
}
