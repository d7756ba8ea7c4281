//! What lifeguard's three deployables (webhook, controller, prober) share at run time, so
//! each piece of plumbing has one home: process set-up, logs and signals ([`process`]),
//! Events ([`events`]), the plain-HTTP ops endpoints ([`ops`]), paged lists ([`pages`]) and
//! status writes by server-side apply ([`status`]). The API crate stays types, names and
//! pure rules; nothing here decides anything.
//!
//! `kubert` (linkerd's runtime crate) covers the same ground and was the first choice. It
//! does not fit: its newest release (0.25) pins kube 1.1 and k8s-openapi 0.25, while
//! lifeguard is on kube 5 and k8s-openapi 0.29; its metrics are `prometheus-client`, not the
//! `prometheus` registry the three deployables already export; and its admin server answers
//! `/live` and `/ready`, not the `/healthz` and `/readyz` that the installed probes call.
//! What lifeguard needs of it is the few hundred lines below.

pub mod background_events;
pub mod events;
pub mod ops;
pub mod pages;
pub mod process;
pub mod status;

pub use process::{LogFormat, exit_code, init_tracing, shutdown_signal};
