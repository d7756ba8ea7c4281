//! lifeguard's shared API: custom resources, names, and the maintenance-window schedule.

pub mod crd;
pub mod disposal;
pub mod drain;
pub mod events;
pub mod maintenance;
pub mod names;
pub mod notice;
#[cfg(feature = "process")]
pub mod process;
pub mod rejection;
pub mod schedule;
mod schema;
pub mod validation;
pub mod window;
pub mod workspace;

pub use maintenance::{MaintenanceWindow, MaintenanceWindowSpec, MaintenanceWindowStatus};
pub use workspace::{Workspace, WorkspacePhase, WorkspaceSpec, WorkspaceStatus};

#[cfg(test)]
mod notice_tests;
#[cfg(test)]
mod schedule_tests;
#[cfg(test)]
mod validation_tests;
