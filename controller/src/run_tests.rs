use kube::runtime::watcher::Event;
use lifeguard_api::Workspace;
use serde_json::json;

use super::*;

#[test]
fn the_reconcilers_cache_keeps_a_workspaces_identity_and_fingerprint_only() {
    let ws: Workspace = serde_json::from_value(json!({
        "apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
        "metadata": {"name": "ide", "namespace": "dev", "uid": "u-1", "resourceVersion": "7",
                     "labels": {"team": "a"}, "managedFields": [{"manager": "kubectl"}]},
        "spec": {"podTemplate": {}},
        "status": {"phase": "Running"},
    }))
    .expect("workspace literal");
    let fingerprint = trigger::fingerprint(&ws.metadata);
    for (what, event) in [
        ("apply", Event::Apply(ws.clone().into())),
        ("listed", Event::InitApply(ws.clone().into())),
        ("deleted", Event::Delete(ws.clone().into())),
    ] {
        let (Event::Apply(kept) | Event::InitApply(kept) | Event::Delete(kept)) =
            identity_event(event)
        else {
            panic!("{what}: the same kind of event");
        };
        assert!(kept.types.is_none(), "{what}: no type strings");
        let want = ObjectMeta {
            name: Some("ide".into()),
            namespace: Some("dev".into()),
            generation: Some(fingerprint),
            ..ObjectMeta::default()
        };
        assert_eq!(kept.metadata, want, "{what}");
    }
    assert!(matches!(identity_event(Event::Init), Event::Init));
    assert!(matches!(identity_event(Event::InitDone), Event::InitDone));
}
