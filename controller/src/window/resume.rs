//! The resume half of a window with `spec.resumeAfter`, the pure part: once an occurrence
//! is over, which workspaces it drained to ask to start again now, within the drain's
//! budget (`lifeguard_api::resume` decides each workspace's standing).

use jiff::Timestamp;
use kube::ResourceExt;
use lifeguard_api::Workspace;
use lifeguard_api::resume::{Standing, standing};
use lifeguard_api::window::CompiledWindow;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct ResumePlan {
    /// (namespace, name, request) of workspaces to ask now; after `limit`, only as many
    /// as the budget lets start beside those resuming.
    pub to_resume: Vec<(String, String, String)>,
    /// Due to be asked, whether the budget lets them start now or not.
    pub due: u32,
    /// Asked before, not running again yet.
    pub resuming: u32,
    now: Option<Timestamp>,
}

impl ResumePlan {
    pub fn at(now: Timestamp) -> Self {
        Self {
            now: Some(now),
            ..Self::default()
        }
    }

    /// Folds one page of Workspaces in.
    pub fn add(&mut self, window: &CompiledWindow, page: &[Workspace]) {
        let Some(now) = self.now else { return };
        for ws in page {
            match standing(ws, &window.name, now) {
                Standing::Due(request) => {
                    self.due += 1;
                    self.to_resume.push((
                        ws.namespace().unwrap_or_default(),
                        ws.name_any(),
                        request,
                    ));
                }
                Standing::Resuming => self.resuming += 1,
                Standing::Untouched => {}
            }
        }
    }

    /// Keeps only the starts `maxConcurrentDrains` lets begin beside those resuming (a
    /// resume spreads over time like the drain did); all of them without a budget.
    pub fn limit(&mut self, window: &CompiledWindow) {
        let total = self.due + self.resuming;
        if let Some(may_start) = window.budget.may_start(total, self.resuming, false) {
            self.to_resume.truncate(may_start as usize);
        }
    }

    /// Workspaces not running again yet: asked, or waiting for the budget.
    pub fn outstanding(&self) -> u32 {
        self.due + self.resuming
    }
}

/// Whether `window` resumes at `now`: it drains and resumes after, is enforced, and no
/// occurrence is in force (during one, its drain keeps the workspaces stopped).
pub fn resuming(window: &CompiledWindow, now: Timestamp) -> bool {
    window.drain && window.resume_after && window.enforces() && window.active_at(now).is_none()
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod resume_tests;
