//! Admission decisions as plain functions of the request, the windows and the time, and
//! what they answer (`Decision`).

use std::cell::OnceCell;
use std::collections::BTreeMap;

use jiff::Timestamp;
use lifeguard_api::maintenance::Enforcement;
use lifeguard_api::names::{
    GROUP, POD_FINALIZER, POSTPONE_DRAIN_ANNOTATION, RECREATION_ANNOTATION, START_ANNOTATION,
    WORKSPACE_FINALIZER, WORKSPACE_LABEL, WORKSPACE_LABELS_ANNOTATION,
};
use lifeguard_api::schedule::Occurrence;
use lifeguard_api::validation::{
    check_postpone_request, validate_maintenance_window_object, validate_workspace_object,
};
use lifeguard_api::window::CompiledWindow;
use serde_json::{Value, json};

use crate::object::{AdmittedObject, Finalizers};
use crate::review::{AdmissionRequest, Operation};

/// What the webhook answers for one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Allow,
    /// Allowed, with warnings the client shows (kubectl prints them as `Warning: ...`).
    Warn(Vec<String>),
    Patch(json_patch::Patch),
    Deny {
        code: u16,
        reason: &'static str,
        message: String,
    },
}

impl Decision {
    /// Metric label.
    pub fn decision(&self) -> &'static str {
        match self {
            Self::Allow | Self::Warn(_) => "allowed",
            Self::Patch(_) => "patched",
            Self::Deny { reason, .. } if *reason == "Invalid" => "denied_invalid",
            Self::Deny { .. } => "denied_maintenance",
        }
    }
}

/// What the handler learnt about the request's namespace before deciding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamespaceLabels {
    /// From the cache, or looked up in the API on a cache miss (empty for cluster-scoped
    /// requests).
    Known(BTreeMap<String, String>),
    /// Neither the cache nor a bounded API lookup could tell; `reason` says why.
    Unknown { namespace: String, reason: String },
    /// Not looked up: no window active at the decision's time selects namespaces
    /// (`needs_namespace_labels`). Read as `Unknown` (fail closed) should a decision ever
    /// need them after all.
    NotLookedUp,
}

/// Whether a decision at `now` can read the namespace's labels: only a window active then
/// with a `namespaceSelector` does. Most admissions meet none, and the lookup copies the
/// labels (or asks the API server, on a cache miss).
pub fn needs_namespace_labels(windows: &[CompiledWindow], now: Timestamp) -> bool {
    windows
        .iter()
        .any(|w| w.selects_namespaces() && w.active_at(now).is_some())
}

/// Everything a validation decision may look at besides the request itself.
pub struct Inputs<'a> {
    pub windows: &'a [CompiledWindow],
    /// Labels of the request's namespace. A gate fails closed: while they are unknown, an
    /// active window with a `namespaceSelector` is taken to cover the namespace.
    pub namespace: &'a NamespaceLabels,
    pub now: Timestamp,
    /// Who may re-create rejected pods during an `allowRecreation` window; empty = anyone
    /// (restrict with RBAC on pods then).
    pub recreation_users: &'a [String],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subject {
    Workspace,
    MaintenanceWindow,
    WorkspacePod,
    Other,
}

fn subject(request: &AdmissionRequest) -> Subject {
    match (request.group.as_str(), request.kind.as_str()) {
        (GROUP, "Workspace") => Subject::Workspace,
        (GROUP, "MaintenanceWindow") => Subject::MaintenanceWindow,
        ("", "Pod") if has_workspace_label(request.object.as_ref()) => Subject::WorkspacePod,
        _ => Subject::Other,
    }
}

fn has_workspace_label(object: Option<&AdmittedObject>) -> bool {
    object.is_some_and(|o| o.metadata.labels.contains_key(WORKSPACE_LABEL))
}

fn labels(object: Option<&AdmittedObject>) -> BTreeMap<String, String> {
    object
        .map(|o| o.metadata.labels.clone())
        .unwrap_or_default()
}

pub fn validate(request: &AdmissionRequest, ctx: &Inputs) -> Decision {
    validate_audited(request, ctx).0
}

/// The validation decision, and the names of the `Warn` and `DryRun` windows that would
/// have denied the request had they been `Enforce` (the server counts them).
pub fn validate_audited(request: &AdmissionRequest, ctx: &Inputs) -> (Decision, Vec<String>) {
    let writes = matches!(request.operation, Operation::Create | Operation::Update);
    let subject = subject(request);
    if matches!(subject, Subject::Workspace | Subject::MaintenanceWindow)
        && metadata_only_or_deleting(request)
    {
        // An owner's postpone request is an annotation: checked when a write changes it.
        if matches!(subject, Subject::Workspace)
            && let Some(errors) = changed_postpone_request_refused(request)
        {
            return (invalid(format!("invalid Workspace: {errors}")), Vec::new());
        }
        return (Decision::Allow, Vec::new());
    }
    let decision = match subject {
        Subject::Workspace if writes => {
            let Some(object) = &request.object else {
                return (
                    invalid("the request carries no Workspace object".into()),
                    Vec::new(),
                );
            };
            if let Err(errors) = validate_workspace_object(&object.validation_view()) {
                return (invalid(format!("invalid Workspace: {errors}")), Vec::new());
            }
            if request.operation == Operation::Create {
                return gate(request, ctx, false);
            }
            Decision::Allow
        }
        Subject::MaintenanceWindow if writes => match &request.object {
            None => invalid("the request carries no MaintenanceWindow object".into()),
            Some(object) => match validate_maintenance_window_object(&object.validation_view()) {
                Ok(warnings) if warnings.is_empty() => Decision::Allow,
                Ok(warnings) => Decision::Warn(warnings),
                Err(errors) => invalid(format!("invalid MaintenanceWindow: {errors}")),
            },
        },
        Subject::WorkspacePod if request.operation == Operation::Create => {
            return gate(request, ctx, is_recreation(request, ctx));
        }
        _ => Decision::Allow,
    };
    (decision, Vec::new())
}

/// The errors of a Workspace UPDATE that sets a postpone request it cannot read; `None`
/// when the request is unchanged (a stored bad one never blocks a finalizer's removal) or
/// the object is being deleted.
fn changed_postpone_request_refused(request: &AdmissionRequest) -> Option<String> {
    let object = request.object.as_ref().filter(|_| !deleting(request))?;
    let new = object.metadata.annotations.get(POSTPONE_DRAIN_ANNOTATION)?;
    if request.old_postpone_request.as_ref() == Some(new) {
        return None;
    }
    check_postpone_request(&object.validation_view())
        .err()
        .map(|e| e.to_string())
}

/// Whether the request's object carries a deletionTimestamp.
fn deleting(request: &AdmissionRequest) -> bool {
    request.object.as_ref().is_some_and(|o| o.metadata.deleting)
}

/// An UPDATE that leaves the spec as it was (finalizer patches, drain annotations, label
/// edits, status writes), or that is part of a deletion. These must go through even when the
/// object's stored spec would fail today's validation: otherwise a Workspace created while
/// the webhook was unregistered could never lose its finalizer, and deletion would hang.
/// The UPDATE webhook entry is also `failurePolicy: Ignore` for the same reason
/// (manifests/webhook/webhooks.yaml).
fn metadata_only_or_deleting(request: &AdmissionRequest) -> bool {
    request.operation == Operation::Update && (request.spec_unchanged || deleting(request))
}

/// A replacement for a rejected pod: made by the controller for an existing Workspace.
///
/// The webhook keeps no Workspace cache, so it cannot read the Workspace's status itself.
/// It trusts markers only the controller can set, and only from status it owns: the
/// attempt number (`lifeguard.dev/recreation`, from `status.podRecreated + 1`) and the
/// start number (`lifeguard.dev/start`, from `status.podStarts + 1`). A re-creation
/// replaces a pod that existed, so its start number is at least 2: a first start never
/// counts, whatever annotations it carries. Template keys under `lifeguard.dev/` are
/// refused by validation and dropped by the controller, so a Workspace author cannot set
/// either marker; the requester must also be one of `--recreation-user`.
fn is_recreation(request: &AdmissionRequest, ctx: &Inputs) -> bool {
    let Some(object) = &request.object else {
        return false;
    };
    let number = |key: &str| {
        object
            .metadata
            .annotations
            .get(key)
            .and_then(|v| v.parse::<u32>().ok())
    };
    let annotated = number(RECREATION_ANNOTATION).is_some_and(|attempt| attempt >= 1)
        && number(START_ANNOTATION).is_some_and(|start| start >= 2);
    let owned_by_workspace = object.metadata.owner_references.iter().any(|r| {
        r.kind.as_deref() == Some("Workspace")
            && r.api_version
                .as_deref()
                .and_then(|v| v.strip_prefix(GROUP))
                .is_some_and(|rest| rest.starts_with('/'))
    });
    let trusted =
        ctx.recreation_users.is_empty() || ctx.recreation_users.contains(&request.username);
    annotated && owned_by_workspace && trusted
}

/// The labels a `workspaceSelector` is matched against: the Workspace's own, on both
/// paths. A workspace pod carries them in an annotation the controller writes (its own
/// labels are the template's, which may differ); a pod without a readable annotation
/// (made by an older controller) falls back to its own labels.
fn workspace_labels_of(request: &AdmissionRequest) -> BTreeMap<String, String> {
    let object = request.object.as_ref();
    if request.kind == "Pod"
        && let Some(carried) = object
            .and_then(|o| o.metadata.annotations.get(WORKSPACE_LABELS_ANNOTATION))
            .and_then(|text| serde_json::from_str::<BTreeMap<String, String>>(text).ok())
    {
        return carried;
    }
    labels(object)
}

/// Whether `window` covers the request's workspace; while the namespace's labels are
/// unknown, the namespaceSelector is taken to match (fail closed).
fn covers(request_labels: &BTreeMap<String, String>, ctx: &Inputs, w: &CompiledWindow) -> bool {
    match ctx.namespace {
        NamespaceLabels::Known(labels) => w.covers(labels, request_labels),
        NamespaceLabels::Unknown { .. } | NamespaceLabels::NotLookedUp => {
            w.covers_workspace(request_labels)
        }
    }
}

/// Denies while a covering `Enforce` window is active; names the window that stays
/// longest. Covering `Warn` windows admit with a warning each, `DryRun` ones silently;
/// both are returned for the count of what they would have denied. A node-scoped window
/// denies nothing: it steers pods off its nodes (`mutate`).
fn gate(request: &AdmissionRequest, ctx: &Inputs, recreation: bool) -> (Decision, Vec<String>) {
    // Read only once a window is active: most requests meet none, and reading them parses
    // an annotation and copies every label.
    let workspace_labels = OnceCell::new();
    let covers = |w: &CompiledWindow| {
        covers(
            workspace_labels.get_or_init(|| workspace_labels_of(request)),
            ctx,
            w,
        )
    };
    let active: Vec<(&CompiledWindow, Occurrence)> = ctx
        .windows
        .iter()
        .filter(|w| !w.node_scoped())
        .filter(|w| !(recreation && w.allow_recreation))
        .filter_map(|w| w.active_at(ctx.now).map(|occurrence| (w, occurrence)))
        .filter(|(w, _)| covers(w))
        .collect();
    let (enforced, audited): (Vec<_>, Vec<_>) = active.into_iter().partition(|(w, _)| w.enforces());
    let would_deny = audited.iter().map(|(w, _)| w.name.clone()).collect();
    if let Some((window, occurrence)) = enforced.into_iter().max_by_key(|(_, o)| o.end) {
        let decision = Decision::Deny {
            code: 403,
            reason: "Forbidden",
            message: denial(request, ctx, window, occurrence),
        };
        return (decision, would_deny);
    }
    let warnings: Vec<String> = audited
        .iter()
        .filter(|(w, _)| w.enforcement == Enforcement::Warn)
        .map(|(w, o)| {
            format!(
                "maintenance window {:?} is in Warn mode and admitted this; enforced, it would deny: {}",
                w.name,
                denial(request, ctx, w, *o)
            )
        })
        .collect();
    let decision = if warnings.is_empty() {
        Decision::Allow
    } else {
        Decision::Warn(warnings)
    };
    (decision, would_deny)
}

/// What a denial by `window` says: the window, when it ends, its message.
fn denial(
    request: &AdmissionRequest,
    ctx: &Inputs,
    window: &CompiledWindow,
    occurrence: Occurrence,
) -> String {
    let what = match request.kind.as_str() {
        "Pod" => "workspace pods",
        _ => "new workspaces",
    };
    let mut message = format!(
        "{what} cannot start during maintenance window {:?} (until {})",
        window.name,
        occurrence.end.strftime("%Y-%m-%dT%H:%M:%SZ")
    );
    if let Some(text) = &window.message {
        message.push_str(": ");
        message.push_str(text);
    }
    if let NamespaceLabels::Unknown { namespace, reason } = ctx.namespace
        && window.selects_namespaces()
    {
        message.push_str(&format!(
            " (the labels of namespace {namespace:?} could not be read: {reason}; the window's namespaceSelector is assumed to match until they can)"
        ));
    }
    message
}

fn invalid(message: String) -> Decision {
    Decision::Deny {
        code: 422,
        reason: "Invalid",
        message,
    }
}

/// A JSON Patch of one `add` at the path made of `tokens` (escaped as JSON Pointer needs).
fn add(tokens: &[&str], value: Value) -> Decision {
    Decision::Patch(json_patch::Patch(vec![json_patch::PatchOperation::Add(
        json_patch::AddOperation {
            path: json_patch::jsonptr::PointerBuf::from_tokens(tokens.iter().copied()),
            value,
        },
    )]))
}

/// `finalizer` added to `object`'s finalizers, keeping every other one where it is; `Allow`
/// when it is there already (or the list is not a list, which the API server refuses anyway).
fn stamp_finalizer(object: &AdmittedObject, finalizer: &str) -> Decision {
    match &object.metadata.finalizers {
        Finalizers::Absent => add(&["metadata", "finalizers"], json!([finalizer])),
        Finalizers::List(list) if list.iter().any(|f| f == finalizer) => Decision::Allow,
        Finalizers::List(_) => add(&["metadata", "finalizers", "-"], json!(finalizer)),
        Finalizers::NotAList => Decision::Allow,
    }
}

/// Stamps the disposal finalizer on a workspace pod at creation and keeps the pod off the
/// nodes of every active node-scoped window that covers it (`steer`). A new Workspace gets
/// its own finalizer here too, so the controller's first reconcile can create the pod
/// straight away instead of patching the Workspace first (one write and one admission less
/// per start; the controller still adds it where this webhook is not called).
pub fn mutate(request: &AdmissionRequest, ctx: &Inputs) -> Decision {
    if request.operation != Operation::Create {
        return Decision::Allow;
    }
    let Some(object) = request.object.as_ref() else {
        return Decision::Allow;
    };
    match subject(request) {
        Subject::WorkspacePod => {}
        Subject::Workspace => return stamp_finalizer(object, WORKSPACE_FINALIZER),
        Subject::MaintenanceWindow | Subject::Other => return Decision::Allow,
    }
    let pod = object;
    let finalizer = stamp_finalizer(pod, POD_FINALIZER);
    // Read only once a window may steer (see `gate`).
    let workspace_labels = OnceCell::new();
    let steering: Vec<&CompiledWindow> = ctx
        .windows
        .iter()
        // A `Warn` or `DryRun` window steers nothing: trying one must not move pods.
        .filter(|w| w.node_scoped() && w.enforces() && w.active_at(ctx.now).is_some())
        .filter(|w| {
            let labels = workspace_labels.get_or_init(|| workspace_labels_of(request));
            covers(labels, ctx, w)
        })
        .collect();
    let steer = crate::steer::steer(pod.affinity.as_ref(), &steering);
    match finalizer {
        _ if steer.is_empty() => finalizer,
        Decision::Patch(mut patch) => {
            patch.0.extend(steer);
            Decision::Patch(patch)
        }
        _ => Decision::Patch(json_patch::Patch(steer)),
    }
}

#[cfg(test)]
#[path = "decision_enforcement_tests.rs"]
mod enforcement_tests;
#[cfg(test)]
#[path = "decision_tests.rs"]
mod tests;
#[cfg(test)]
#[path = "decision_update_tests.rs"]
mod update_tests;
