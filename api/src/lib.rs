//! lifeguard's API: the custom resources, the names every crate shares, and the pure
//! rules (schedule, validation, rejection catalogue, drain, notices). No I/O: what runs
//! against a cluster lives in `lifeguard-runtime` and the deployables.

pub mod crd;
pub mod cron;
pub mod disposal;
pub mod drain;
pub mod eviction;
pub mod exclusion;
pub mod field_errors;
pub mod hold;
pub mod maintenance;
pub mod names;
pub mod node_scope;
pub mod notice;
pub mod postpone;
pub mod receipt;
pub mod rejection;
pub mod resume;
pub mod schedule;
mod schema;
pub mod start_blocker;
pub mod validation;
pub mod window;
pub mod workspace;

pub use maintenance::{MaintenanceWindow, MaintenanceWindowSpec, MaintenanceWindowStatus};
pub use workspace::{Workspace, WorkspacePhase, WorkspaceSpec, WorkspaceStatus};
