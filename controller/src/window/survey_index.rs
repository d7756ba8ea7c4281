//! The window's survey from the controller's own watch of Workspaces, not a list.
//!
//! A draining window surveys every Workspace again and again: to count what is left and in
//! flight, for the budget and for the status the platform team reads. As a list, a survey
//! costs the API server a page of 200 custom resources read from etcd, decoded, checked
//! against the schema and encoded, 50 pages at 10,000 workspaces; the pacing
//! (`pacing.rs`) holds it to a fifth of the window reconciler's time, and it was still
//! 12 to 27 % of the API server's CPU in the first 30 s of a drain of 5,000
//! (docs/benchmarks.md).
//!
//! The controller already watches every Workspace (`run.rs`) to trigger its reconciler.
//! That watch receives whole objects; this index keeps, of each, only the few fields a
//! survey reads (`SurveyFacts`: a few hundred bytes, where a stored Workspace with its pod
//! template would take kilobytes), and rebuilds a Workspace from them when a survey folds
//! them in, a page at a time, so the survey's rules (`plan`, `lifeguard_api::drain`) are
//! the same ones a list feeds.
//!
//! A watch lags the API server by its latency, so the index serves progress, not promises:
//! - A drain mark this controller just wrote is noted here at once (`note_marked`) and kept
//!   until the watch shows it: otherwise the next survey would mark the workspace again and
//!   count one stop less in flight than the budget allows.
//! - Likewise the end of a stop (`note_stop_ended`): the workspace reconciler wakes the
//!   window as soon as it has written `Stopped`, and a survey that still saw the stop in
//!   flight would hold a budget's freed slot until the window's next pass.
//! - `Drained` and a node's drained label are promises an upgrade tool acts on: a survey
//!   that would make one is taken again from a list (`needs_list`).
//! - A resume, which asks workspaces to start from what its survey saw, lists.
//! - Until the watch's first full list is in, every survey lists.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::ResourceExt;
use kube::runtime::watcher::Event;
use lifeguard_api::drain::is_done_phase;
use lifeguard_api::names::{
    DRAINED_BY_ANNOTATION, DRAINED_UNTIL_ANNOTATION, POSTPONE_DRAIN_ANNOTATION, RESUME_ANNOTATION,
};
use lifeguard_api::notice::MaintenanceNotice;
use lifeguard_api::{Workspace, WorkspacePhase, WorkspaceSpec, WorkspaceStatus};

use super::nodes::{NodeChange, NodeMeta, node_changes};
use super::plan::Survey;
use crate::watched_workspace::WatchedWorkspace;

/// Where a pass took its survey from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SurveySource {
    /// The watch's index: the drain's progress.
    Watch,
    /// A list, page by page: what a promise is made from, and what the index does not hold.
    List,
}

impl SurveySource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Watch => "watch",
            Self::List => "list",
        }
    }
}

/// Whether a survey shaped like `survey` (as `Survey::for_window` made it) may be taken from
/// the index: a drain's progress, a node-scoped window's per-node counts, a notice's count.
/// A resume asks workspaces to start from what its survey saw, so it lists.
pub fn may_use_index(survey: &Survey) -> bool {
    (survey.drain.is_some() || survey.notified.is_some()) && survey.resume.is_none()
}

/// Whether a survey taken from the index must be taken again from a list before window
/// `window` acts on it: when it would publish a promise an upgrade tool acts on, the
/// drain done (`Drained`) or a node newly labelled drained (`nodes`, as read this pass).
/// A Workspace the watch has not shown yet, or one whose last stop it has not seen, must
/// not be missed there.
pub fn needs_list(survey: &Survey, window: &str, nodes: &[NodeMeta]) -> bool {
    let drain_done = survey
        .drain
        .as_ref()
        .is_some_and(|d| d.remaining == 0 && d.to_stop.is_empty());
    let node_drained = survey.nodes.as_ref().is_some_and(|tally| {
        node_changes(window, Some(tally), nodes)
            .iter()
            .any(|change| matches!(change, NodeChange::Mark { drained: true, .. }))
    });
    drain_done || node_drained
}

/// What a survey reads of one Workspace (`plan`, `resume`, `lifeguard_api::drain`). Kept
/// small, as 10,000 of them are held: what most running workspaces lack (labels, lifeguard's
/// annotations, a notice, a resume, a noted mark) is behind one pointer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SurveyFacts {
    phase: Option<WorkspacePhase>,
    deleting: bool,
    /// `phase` is a stop's end this controller wrote that the watch has not shown yet
    /// (`SurveyIndex::note_stop_ended`).
    stop_noted: bool,
    /// Shared with every other workspace on the node (`Names`).
    node: Option<Arc<str>>,
    rare: Option<Box<RareFacts>>,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct RareFacts {
    labels: BTreeMap<String, String>,
    drained_by: Option<Box<str>>,
    drained_until: Option<Box<str>>,
    postpone_drain: Option<Box<str>>,
    resume: Option<Box<str>>,
    notice_window: Option<Box<str>>,
    resumed: Option<Box<str>>,
    /// A drain mark this controller wrote that the watch has not shown yet.
    marked_by: Option<Box<str>>,
}

fn boxed(value: Option<&String>) -> Option<Box<str>> {
    value.map(|v| v.as_str().into())
}

/// The instant a rebuilt Workspace is being deleted since: the survey reads only whether.
const DELETING_SINCE: jiff::Timestamp = jiff::Timestamp::UNIX_EPOCH;

impl SurveyFacts {
    pub fn of(ws: &WatchedWorkspace) -> Self {
        let annotations = ws.annotations();
        let status = ws.status.as_ref();
        let rare = RareFacts {
            labels: ws.labels().clone(),
            drained_by: boxed(annotations.get(DRAINED_BY_ANNOTATION)),
            drained_until: boxed(annotations.get(DRAINED_UNTIL_ANNOTATION)),
            postpone_drain: boxed(annotations.get(POSTPONE_DRAIN_ANNOTATION)),
            resume: boxed(annotations.get(RESUME_ANNOTATION)),
            notice_window: status
                .and_then(|s| s.maintenance_notice.as_ref())
                .map(|n| n.window.as_str().into()),
            resumed: status.and_then(|s| boxed(s.resumed.as_ref())),
            marked_by: None,
        };
        Self {
            phase: status.and_then(|s| s.phase),
            deleting: ws.metadata.deletion_timestamp.is_some(),
            stop_noted: false,
            node: status.and_then(|s| s.node_name.as_deref().map(Arc::from)),
            rare: (rare != RareFacts::default()).then(|| Box::new(rare)),
        }
    }

    fn drained_by(&self) -> Option<&str> {
        self.rare.as_ref().and_then(|r| r.drained_by.as_deref())
    }

    fn marked_by(&self) -> Option<&str> {
        self.rare.as_ref().and_then(|r| r.marked_by.as_deref())
    }

    fn set_marked_by(&mut self, window: Option<&str>) {
        let rare = self.rare.get_or_insert_with(Box::default);
        rare.marked_by = window.map(Into::into);
        if **rare == RareFacts::default() {
            self.rare = None;
        }
    }

    /// These facts as a Workspace named `namespace`/`name`: everything a survey reads, and
    /// nothing else (no pod template, no conditions; a notice names only its window).
    pub fn workspace(&self, namespace: &str, name: &str) -> Workspace {
        let empty = RareFacts::default();
        let rare = self.rare.as_deref().unwrap_or(&empty);
        let mut annotations = BTreeMap::new();
        for (key, value) in [
            (
                DRAINED_BY_ANNOTATION,
                rare.drained_by.as_ref().or(rare.marked_by.as_ref()),
            ),
            (DRAINED_UNTIL_ANNOTATION, rare.drained_until.as_ref()),
            (POSTPONE_DRAIN_ANNOTATION, rare.postpone_drain.as_ref()),
            (RESUME_ANNOTATION, rare.resume.as_ref()),
        ] {
            if let Some(value) = value {
                annotations.insert(key.to_string(), value.to_string());
            }
        }
        let status = WorkspaceStatus {
            phase: self.phase,
            node_name: self.node.as_deref().map(str::to_string),
            maintenance_notice: rare
                .notice_window
                .as_deref()
                .map(|window| MaintenanceNotice {
                    window: window.to_string(),
                    start: Time(jiff::Timestamp::UNIX_EPOCH),
                    end: Time(jiff::Timestamp::UNIX_EPOCH),
                    message: None,
                }),
            resumed: rare.resumed.as_deref().map(str::to_string),
            ..WorkspaceStatus::default()
        };
        Workspace {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()),
                labels: (!rare.labels.is_empty()).then(|| rare.labels.clone()),
                annotations: (!annotations.is_empty()).then_some(annotations),
                deletion_timestamp: self.deleting.then_some(Time(DELETING_SINCE)),
                ..ObjectMeta::default()
            },
            spec: WorkspaceSpec::default(),
            status: Some(status),
        }
    }

    /// These facts, newly watched, after `earlier`: a mark or a stop's end this controller
    /// wrote stays noted until the watch shows it (an event may be older than the write).
    fn after(mut self, earlier: Option<&SurveyFacts>) -> Self {
        if let Some(marked) = earlier.and_then(SurveyFacts::marked_by)
            && self.drained_by().is_none()
        {
            self.set_marked_by(Some(marked));
        }
        if let Some(earlier) = earlier.filter(|e| e.stop_noted)
            && !is_done_phase(self.phase)
        {
            self.phase = earlier.phase;
            self.stop_noted = true;
        }
        self
    }
}

/// Namespace (shared, `Names`) and name.
type Key = (Arc<str>, Box<str>);

/// One copy of each namespace and node name, shared by the workspaces in it or on it: at
/// 10,000 workspaces in a few namespaces on a few hundred nodes, most of the names' bytes.
#[derive(Debug, Default)]
struct Names(HashSet<Arc<str>>);

impl Names {
    fn get(&mut self, name: &str) -> Arc<str> {
        if let Some(shared) = self.0.get(name) {
            return shared.clone();
        }
        let shared: Arc<str> = name.into();
        self.0.insert(shared.clone());
        shared
    }

    /// Forgets the names only `facts` (about to be dropped) and this set still hold.
    fn release(&mut self, key: &Key, facts: &SurveyFacts) {
        for name in [Some(&key.0), facts.node.as_ref()].into_iter().flatten() {
            if Arc::strong_count(name) <= 2 {
                self.0.remove(name);
            }
        }
    }

    /// Forgets every name no workspace holds any more.
    fn prune(&mut self) {
        self.0.retain(|name| Arc::strong_count(name) > 1);
    }

    /// `ws`'s key and facts, with shared names.
    fn entry(&mut self, ws: &WatchedWorkspace) -> Option<(Key, SurveyFacts)> {
        let key = (
            self.get(ws.metadata.namespace.as_deref()?),
            ws.metadata.name.as_deref()?.into(),
        );
        let mut facts = SurveyFacts::of(ws);
        facts.node = facts.node.map(|node| self.get(&node));
        Some((key, facts))
    }
}

#[derive(Debug, Default)]
struct Index {
    /// Every Workspace the watch has shown, once its first full list is in.
    workspaces: Option<HashMap<Key, SurveyFacts>>,
    /// A re-list under way: the old index serves until it is complete.
    relisting: Option<HashMap<Key, SurveyFacts>>,
    names: Names,
}

/// The index, shared by the watch that feeds it and the window reconciler that reads it.
#[derive(Clone, Default)]
pub struct SurveyIndex(Arc<RwLock<Index>>);

impl SurveyIndex {
    // The index stays consistent whatever panicked while holding it: each change is one
    // map operation.
    fn read(&self) -> RwLockReadGuard<'_, Index> {
        self.0
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Index> {
        self.0
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Folds one event of the Workspace watch in.
    pub fn apply(&self, event: &Event<WatchedWorkspace>) {
        let mut guard = self.write();
        let index = &mut *guard;
        match event {
            Event::Apply(ws) => {
                if let Some(workspaces) = index.workspaces.as_mut()
                    && let Some((key, facts)) = index.names.entry(ws)
                {
                    let facts = facts.after(workspaces.get(&key));
                    if let Some(old) = workspaces.insert(key.clone(), facts) {
                        index.names.release(&key, &old);
                    }
                }
            }
            Event::Delete(ws) => {
                let key = ws
                    .metadata
                    .namespace
                    .as_deref()
                    .zip(ws.metadata.name.as_deref());
                if let (Some((namespace, name)), Some(workspaces)) =
                    (key, index.workspaces.as_mut())
                    && let Some((key, old)) =
                        workspaces.remove_entry(&(namespace.into(), name.into()) as &Key)
                {
                    index.names.release(&key, &old);
                }
            }
            Event::Init => index.relisting = Some(HashMap::new()),
            Event::InitApply(ws) => {
                if let Some(relisting) = index.relisting.as_mut()
                    && let Some((key, facts)) = index.names.entry(ws)
                {
                    relisting.insert(key, facts);
                }
            }
            Event::InitDone => {
                // A re-list reads the API server after the marks it could miss were
                // written, or lists them in the next page: noted marks are not carried.
                if let Some(relisted) = index.relisting.take() {
                    index.workspaces = Some(relisted);
                    index.names.prune();
                }
            }
        }
    }

    /// Notes that window `window` marked `namespace`/`name` to drain, before the watch
    /// shows it. A workspace the index does not hold is left alone: the watch brings it.
    pub fn note_marked(&self, namespace: &str, name: &str, window: &str) {
        let mut index = self.write();
        let key: Key = (namespace.into(), name.into());
        if let Some(facts) = index.workspaces.as_mut().and_then(|w| w.get_mut(&key))
            && facts.drained_by().is_none()
        {
            facts.set_marked_by(Some(window));
        }
    }

    /// Notes that the workspace reconciler wrote `phase`, the end of a stop, for
    /// `namespace`/`name`, before the watch shows it: the window it wakes then surveys the
    /// stop as ended, and a budget's freed slot is used at once rather than at the
    /// window's next pass. A workspace the index does not hold is left alone.
    pub fn note_stop_ended(&self, namespace: &str, name: &str, phase: WorkspacePhase) {
        if !is_done_phase(Some(phase)) {
            return;
        }
        let mut index = self.write();
        let key: Key = (namespace.into(), name.into());
        if let Some(facts) = index.workspaces.as_mut().and_then(|w| w.get_mut(&key))
            && !is_done_phase(facts.phase)
        {
            facts.phase = Some(phase);
            facts.stop_noted = true;
        }
    }

    /// Folds every indexed Workspace into `fold`, `page` at a time (the rebuilt Workspaces
    /// of one page are all that is held at once). `false`, folding nothing, until the
    /// watch's first full list is in.
    pub fn fold_pages(&self, page: usize, mut fold: impl FnMut(&[Workspace])) -> bool {
        let index = self.read();
        let Some(workspaces) = index.workspaces.as_ref() else {
            return false;
        };
        let mut batch = Vec::with_capacity(page.max(1));
        for ((namespace, name), facts) in workspaces {
            batch.push(facts.workspace(namespace, name));
            if batch.len() >= page.max(1) {
                fold(&batch);
                batch.clear();
            }
        }
        if !batch.is_empty() {
            fold(&batch);
        }
        true
    }
}

#[cfg(test)]
#[path = "survey_index_tests.rs"]
mod tests;
