//! A Workspace as the controller's watch decodes it: its metadata and status, not its spec.
//!
//! The watch feeds the reconciler's triggers (`trigger`: metadata) and the window's survey
//! index (`window::survey_index`: metadata and status). Neither reads the pod template,
//! which is most of a decoded Workspace: a `PodSpec` and its containers are large structs
//! even when nearly empty. Left out of the type, the spec is skipped while the JSON is
//! parsed, and nothing is allocated for it: a controller taking over among 10,000
//! workspaces decodes its relist a page at a time, and a drain sends several events a
//! workspace. The reconciler reads every Workspace whole, with a GET, before it acts.

use std::borrow::Cow;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use lifeguard_api::{Workspace, WorkspaceStatus};
use serde::Deserialize;

#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
pub struct WatchedWorkspace {
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub status: Option<WorkspaceStatus>,
}

/// The same resource as `Workspace`, so the watch's URL and kind are the Workspace's.
impl Resource for WatchedWorkspace {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        Workspace::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        Workspace::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        Workspace::version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        Workspace::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// What the watch would have kept of `ws`: for tests and benches that build Workspaces.
impl From<Workspace> for WatchedWorkspace {
    fn from(ws: Workspace) -> Self {
        Self {
            metadata: ws.metadata,
            status: ws.status,
        }
    }
}

#[cfg(test)]
#[path = "watched_workspace_tests.rs"]
mod tests;
