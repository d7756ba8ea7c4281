//! Notice outside the cluster: a JSON document per transition a workspace user or an
//! operator cares about (a window's occurrence starting and ending, a workspace told of a
//! coming drain or told it no longer applies, a workspace stopped by a drain), posted to an
//! HTTP endpoint configured on the controller (`--notify-url`).
//!
//! The reconcilers only enqueue (`sink::Notifier::send`, never awaited): a bounded queue
//! feeds one delivery task, which posts with a per-request deadline and retries with
//! backoff, so a slow or absent receiver never holds a drain. What is sent for which
//! transition (`document`), its Alertmanager shape (`alertmanager`) and the retry schedule
//! (`retry`) are pure; `http` and `sink` are the I/O.

pub mod alertmanager;
pub mod document;
pub mod event_budget;
pub mod http;
pub mod metrics;
pub mod retry;
pub mod settings;
pub mod sink;

pub use document::Notification;
pub use sink::Notifier;
