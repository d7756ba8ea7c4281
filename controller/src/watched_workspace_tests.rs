use kube::Resource;
use lifeguard_api::Workspace;
use serde_json::json;

use super::WatchedWorkspace;

fn full(spec: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
        "metadata": {"name": "ide", "namespace": "dev", "uid": "u-1", "resourceVersion": "7",
                     "labels": {"team": "a"},
                     "annotations": {"lifeguard.dev/drained-by": "upgrade"},
                     "deletionTimestamp": "2026-11-29T10:00:00Z"},
        "spec": spec,
        "status": {"phase": "Running", "nodeName": "node-1",
                   "maintenanceNotice": {"window": "upgrade", "start": "2026-11-29T11:00:00Z",
                                         "end": "2026-11-29T12:00:00Z"}},
    })
}

#[test]
fn keeps_the_metadata_and_status_a_full_decode_has() {
    let body = full(json!({"podTemplate": {"spec": {"containers": [
        {"name": "ide", "image": "ide:1", "command": ["sleep", "infinity"],
         "env": [{"name": "A", "value": "b"}]}]}}}));
    let ws: Workspace = serde_json::from_value(body.clone()).expect("full workspace");
    let watched: WatchedWorkspace = serde_json::from_value(body).expect("watched workspace");
    assert_eq!(watched.metadata, ws.metadata);
    assert_eq!(watched.status, ws.status);
    assert_eq!(WatchedWorkspace::from(ws), watched);
}

#[test]
fn a_spec_it_does_not_read_cannot_fail_the_watch() {
    // A page of the watch's list fails as a whole if one item fails to decode; the
    // reconciler's own read of the Workspace reports a spec it cannot read.
    let watched: WatchedWorkspace =
        serde_json::from_value(full(json!({"podTemplate": "not a template"})))
            .expect("spec skipped");
    assert_eq!(watched.metadata.name.as_deref(), Some("ide"));
    assert!(serde_json::from_value::<Workspace>(full(json!({"podTemplate": "x"}))).is_err());
}

#[test]
fn a_workspace_without_a_status_has_none() {
    let mut body = full(json!({"podTemplate": {}}));
    if let Some(object) = body.as_object_mut() {
        object.remove("status");
    }
    let watched: WatchedWorkspace = serde_json::from_value(body).expect("no status");
    assert_eq!(watched.status, None);
}

#[test]
fn is_watched_at_the_workspaces_url() {
    assert_eq!(
        WatchedWorkspace::url_path(&(), Some("dev")),
        Workspace::url_path(&(), Some("dev"))
    );
    assert_eq!(
        WatchedWorkspace::url_path(&(), None),
        Workspace::url_path(&(), None)
    );
    assert_eq!(WatchedWorkspace::kind(&()), "Workspace");
    assert_eq!(WatchedWorkspace::api_version(&()), "lifeguard.dev/v1alpha1");
}
