use super::*;
use serde_json::json;

fn pod() -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "ws-alice", "namespace": "team-a", "uid": "u-1"}
    }))
    .expect("pod literal")
}

fn saved() -> DisposalReceipt {
    for_pod(&pod(), ReceiptResult::Saved, None).expect("a pod with a name and UID")
}

#[test]
fn a_receipt_counts_only_for_the_pod_that_owns_it() {
    let failed = |reason: Option<&str>| {
        for_pod(&pod(), ReceiptResult::Failed, reason.map(str::to_string)).expect("receipt")
    };
    let edited = |change: fn(&mut DisposalReceipt)| {
        let mut r = saved();
        change(&mut r);
        r
    };
    let cases: [(&str, DisposalReceipt, Result<DisposalResult, &str>); 8] = [
        ("saved", saved(), Ok(DisposalResult::Saved)),
        (
            "failed, with the agent's words",
            failed(Some(" disk full ")),
            Ok(DisposalResult::Failed("disk full".into())),
        ),
        (
            "failed without a reason",
            failed(Some("  ")),
            Ok(DisposalResult::Failed("no reason given".into())),
        ),
        (
            "named after another UID",
            edited(|r| r.metadata.name = Some("u-2".into())),
            Err("names pod UID"),
        ),
        (
            "podUID of another pod",
            edited(|r| r.spec.pod_uid = "u-2".into()),
            Err("names pod UID"),
        ),
        (
            "podName of another pod",
            edited(|r| r.spec.pod_name = "ws-bob".into()),
            Err("names pod \"ws-bob\""),
        ),
        (
            "not owned: it would outlive the pod",
            edited(|r| r.metadata.owner_references = None),
            Err("is not owned by pod ws-alice"),
        ),
        (
            "owned by another pod of the same name",
            edited(|r| {
                if let Some(o) = r.metadata.owner_references.as_mut() {
                    o[0].uid = "u-old".into();
                }
            }),
            Err("is not owned by pod ws-alice"),
        ),
    ];
    for (what, receipt, want) in cases {
        match (read(&receipt, &pod()), want) {
            (ReceiptReading::Answer(got), Ok(want)) => assert_eq!(got, want, "{what}"),
            (ReceiptReading::Ignored(why), Err(part)) => {
                assert!(why.contains(part), "{what}: {why:?} lacks {part:?}")
            }
            (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn the_receipt_an_agent_makes_is_named_and_owned_by_the_pod() {
    let r = for_pod(&pod(), ReceiptResult::Failed, Some("x".repeat(5000))).expect("receipt");
    assert_eq!(r.metadata.name.as_deref(), Some("u-1"));
    assert_eq!(r.metadata.namespace.as_deref(), Some("team-a"));
    let owner = &r.metadata.owner_references.as_ref().expect("owner")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("Pod", "ws-alice", "u-1")
    );
    assert_eq!(
        owner.block_owner_deletion, None,
        "needs no right on the pod"
    );
    assert_eq!(
        r.spec.reason.map(|s| s.chars().count()),
        Some(MAX_REASON_LEN)
    );
    let nameless: Pod = serde_json::from_value(json!({"metadata": {"name": "ws-a"}})).expect("pod");
    assert!(for_pod(&nameless, ReceiptResult::Saved, None).is_none());
}
