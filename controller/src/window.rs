//! The MaintenanceWindow reconciler: the window's status (valid, active, current and next
//! occurrence), its drain and its count of notified workspaces. `plan` decides (pure);
//! `reconcile` lists the workspaces a page at a time, asks `plan` and writes the answer.

pub mod gate_answers;
pub mod hold_decision;
pub mod node_signal;
pub mod nodes;
pub mod pacing;
pub mod plan;
pub mod prometheus;
pub mod reconcile;
pub mod resume;
pub mod stop_ended;
pub mod survey_index;
