//! The one next step the workspace plan chooses and the reconciler performs. Its own module,
//! apart from the plan, so the deciders that return one (`disposal`, `stuck_terminating`,
//! `steering`) need not import the plan that calls them.

use jiff::Timestamp;
use lifeguard_api::WorkspaceStatus;

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    AddWorkspaceFinalizer,
    /// Create the pod; `recreation` is the attempt number when it replaces a rejected one.
    CreatePod {
        start: u32,
        recreation: Option<u32>,
    },
    /// Write this status (it differs from the stored one).
    UpdateStatus(Box<WorkspaceStatus>),
    /// Record a rejection (status written, Event emitted). A permanent one also makes the
    /// workspace Failed.
    RecordRejection(Box<WorkspaceStatus>),
    /// Record that the kubelet refused a pod after it had run (Warning Event); the pod is
    /// not re-created.
    RecordRejectedAfterRunning(Box<WorkspaceStatus>),
    /// The workspace has used up its retries.
    GiveUp(Box<WorkspaceStatus>),
    /// The workspace's namespace is refused (`namespace_policy`): Failed, with an Event.
    Refuse(Box<WorkspaceStatus>),
    /// The pod did not start (a permanent blocker, or its start deadline passed): the
    /// workspace failed, or its pod is to be re-created elsewhere (`start`).
    RecordStartFailure {
        status: Box<WorkspaceStatus>,
        blocker: &'static str,
        class: &'static str,
    },
    /// Delete, without grace, a pod lifeguard released once the kubelet reports all its
    /// containers terminated (`stuck_terminating`): routine, so no Event.
    RemoveStoppedPod,
    /// Delete, without grace, a released pod still Terminating long after its grace period
    /// with no container running (`stuck_terminating`).
    ForceDeletePod {
        cause: String,
    },
    /// Delete the pod; `Some(0)` for rejected pods, where nothing ran. `cause` says why,
    /// for the Event.
    DeletePod {
        grace_seconds: Option<i64>,
        cause: String,
    },
    /// Remove our finalizer from the pod (final state recorded, disposal done).
    ReleasePod,
    /// Record that an evicted workspace's pod is gone (status written, an Event naming who
    /// evicted it): it starts again, or stays Stopped (`eviction`).
    RecordEviction {
        status: Box<WorkspaceStatus>,
        note: String,
    },
    /// Record how a confirmed disposal ended (`DisposalConfirmed`, an Event, and when the
    /// work may be lost a counter); the pod is released next.
    RecordDisposal(Box<WorkspaceStatus>),
    RemoveWorkspaceFinalizer,
    /// Nothing to do before this instant (unless a watch event comes first).
    WaitUntil(Timestamp),
    /// Nothing to do until something changes.
    Idle,
}
