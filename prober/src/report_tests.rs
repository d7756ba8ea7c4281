use std::collections::BTreeMap;

use super::*;

fn judgement(verdict: Verdict, message: &str) -> Judgement {
    Judgement {
        verdict,
        message: message.into(),
    }
}

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).expect("in range")
}

fn taint(key: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        effect: effect.into(),
        ..Default::default()
    }
}

#[test]
fn verdicts_map_to_condition_statuses() {
    let cases = [
        (Verdict::Healthy, "True", "ProbesPassing"),
        (Verdict::Unhealthy, "False", "ProbesFailing"),
        (Verdict::Unknown, "Unknown", "ProbesInconclusive"),
        (Verdict::Cordoned, "Unknown", "NodeCordoned"),
    ];
    for (verdict, status, reason) in cases {
        let d = desired(&judgement(verdict, "m"));
        assert_eq!(
            (d.status, d.reason, d.message.as_str()),
            (status, reason, "m")
        );
    }
}

#[test]
fn the_condition_is_written_on_change_or_heartbeat_only() {
    let heartbeat = SignedDuration::from_mins(5);
    let healthy = desired(&judgement(Verdict::Healthy, "ok"));
    assert!(needs_write(None, &healthy, at(100), heartbeat), "absent");
    let (_, shown) = patch(None, &healthy, at(100));
    assert!(!needs_write(Some(&shown), &healthy, at(200), heartbeat));
    assert!(
        needs_write(Some(&shown), &healthy, at(400), heartbeat),
        "heartbeat due"
    );
    let other_message = desired(&judgement(Verdict::Healthy, "ok too"));
    assert!(needs_write(
        Some(&shown),
        &other_message,
        at(101),
        heartbeat
    ));
    let sick = desired(&judgement(Verdict::Unhealthy, "ro"));
    assert!(needs_write(Some(&shown), &sick, at(101), heartbeat));
}

#[test]
fn transition_time_moves_only_when_the_status_does() {
    let healthy = desired(&judgement(Verdict::Healthy, "ok"));
    let (body, first) = patch(None, &healthy, at(100));
    assert_eq!(first.transition, at(100));
    let c = &body["status"]["conditions"][0];
    assert_eq!(c["type"], CONDITION_TYPE);
    assert_eq!(c["status"], "True");
    assert_eq!(c["lastTransitionTime"], at(100).to_string());

    let (_, beat) = patch(Some(&first), &healthy, at(400));
    assert_eq!((beat.transition, beat.heartbeat), (at(100), at(400)));
    let sick = desired(&judgement(Verdict::Unhealthy, "ro"));
    let (body, flipped) = patch(Some(&beat), &sick, at(500));
    assert_eq!(flipped.transition, at(500));
    assert_eq!(body["status"]["conditions"][0]["status"], "False");
    assert_eq!(
        body["status"]["conditions"].as_array().map(Vec::len),
        Some(1),
        "the patch carries our condition only"
    );
}

#[test]
fn the_condition_is_read_back_from_the_node() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    let conditions = vec![
        NodeCondition {
            type_: "Ready".into(),
            status: "True".into(),
            ..Default::default()
        },
        NodeCondition {
            type_: CONDITION_TYPE.into(),
            status: "False".into(),
            reason: Some("ProbesFailing".into()),
            message: Some("ro".into()),
            last_heartbeat_time: Some(Time(at(300))),
            last_transition_time: Some(Time(at(200))),
        },
    ];
    let s = shown(&conditions).expect("ours is there");
    assert_eq!(
        (s.status.as_str(), s.transition, s.heartbeat),
        ("False", at(200), at(300))
    );
    assert_eq!(shown(&conditions[..1]), None);
}

#[test]
fn taints_change_only_ours_and_only_when_needed() {
    let other = taint("dedicated", "NoSchedule");
    let ours = taint(TAINT_KEY, TAINT_EFFECT);
    let same_key_other_effect = taint(TAINT_KEY, "NoExecute");

    let added = taints_after(std::slice::from_ref(&other), Verdict::Unhealthy).expect("added");
    assert_eq!(added.len(), 2);
    assert_eq!(added[0], other);
    assert_eq!(
        (added[1].key.as_str(), added[1].effect.as_str()),
        (TAINT_KEY, TAINT_EFFECT)
    );

    assert_eq!(
        taints_after(&added, Verdict::Unhealthy),
        None,
        "already there"
    );
    assert_eq!(
        taints_after(&added, Verdict::Unknown),
        None,
        "unknown keeps it"
    );
    assert_eq!(
        taints_after(std::slice::from_ref(&other), Verdict::Healthy),
        None,
        "nothing to remove"
    );
    assert_eq!(
        taints_after(
            &[other.clone(), ours, same_key_other_effect.clone()],
            Verdict::Healthy
        ),
        Some(vec![other, same_key_other_effect])
    );
    assert_eq!(taints_after(&[], Verdict::Unknown), None);
    assert_eq!(
        taints_after(&[], Verdict::Cordoned),
        None,
        "a cordoned node is not tainted"
    );
    assert_eq!(
        taints_after(&added, Verdict::Cordoned),
        None,
        "nor is a taint from before the cordon lifted"
    );
}

#[test]
fn events_mark_definitive_transitions() {
    use Verdict::*;
    assert_eq!(event(None, Unhealthy), Some(("NodeUnhealthy", true)));
    assert_eq!(
        event(Some(Healthy), Unhealthy),
        Some(("NodeUnhealthy", true))
    );
    assert_eq!(event(Some(Unhealthy), Unhealthy), None);
    assert_eq!(
        event(Some(Unhealthy), Healthy),
        Some(("NodeHealthy", false))
    );
    assert_eq!(event(Some(Healthy), Healthy), None);
    assert_eq!(event(None, Healthy), None);
    assert_eq!(event(Some(Healthy), Unknown), None);
    assert_eq!(event(Some(Healthy), Cordoned), None);
}

#[test]
fn the_label_mirrors_the_taint_in_the_same_patch() {
    let other = taint("dedicated", "NoSchedule");
    let ours = Taint {
        value: Some(TAINT_VALUE.into()),
        ..taint(TAINT_KEY, TAINT_EFFECT)
    };
    let label: BTreeMap<String, String> =
        [(TAINTED_LABEL.to_string(), TAINT_VALUE.to_string())].into();
    let unrelated: BTreeMap<String, String> = [("zone".to_string(), "a".to_string())].into();
    let with = |taints: &[Taint], labels: Option<&BTreeMap<String, String>>, verdict| {
        marks(taints, labels, verdict, Some("42"))
    };

    let add = with(
        std::slice::from_ref(&other),
        Some(&unrelated),
        Verdict::Unhealthy,
    )
    .expect("adds");
    assert!(add.adds_taint);
    assert_eq!(add.body["metadata"]["resourceVersion"], "42");
    assert_eq!(add.body["metadata"]["labels"][TAINTED_LABEL], TAINT_VALUE);
    assert_eq!(add.body["spec"]["taints"].as_array().map(Vec::len), Some(2));

    let remove = with(
        &[other.clone(), ours.clone()],
        Some(&label),
        Verdict::Healthy,
    )
    .expect("removes");
    assert!(!remove.adds_taint);
    assert!(remove.body["metadata"]["labels"][TAINTED_LABEL].is_null());
    assert!(
        remove.body["metadata"]["labels"]
            .as_object()
            .is_some_and(|l| l.contains_key(TAINTED_LABEL)),
        "null deletes the label in a merge patch"
    );
    assert_eq!(remove.body["spec"]["taints"], serde_json::json!([other]));

    assert_eq!(
        with(
            std::slice::from_ref(&ours),
            Some(&label),
            Verdict::Unhealthy
        ),
        None,
        "in line"
    );
    assert_eq!(with(&[], None, Verdict::Healthy), None, "in line");
    assert_eq!(
        with(std::slice::from_ref(&ours), Some(&label), Verdict::Unknown),
        None,
        "unknown keeps both"
    );

    let relabel =
        with(std::slice::from_ref(&ours), None, Verdict::Unknown).expect("label a hand-set taint");
    assert!(
        !relabel.adds_taint,
        "the taint is there already: no fleet check"
    );
    assert_eq!(
        relabel.body["metadata"]["labels"][TAINTED_LABEL],
        TAINT_VALUE
    );
    assert!(relabel.body.get("spec").is_none(), "taints untouched");

    let stale = with(&[], Some(&label), Verdict::Unknown).expect("drop a stale label");
    assert!(stale.body["metadata"]["labels"][TAINTED_LABEL].is_null());
    assert!(!stale.adds_taint);
}
