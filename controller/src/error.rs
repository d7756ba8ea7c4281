//! The controller's one error type, with the metric label of each failure and how soon a
//! failed reconcile looks again.

/// `Error::reason` of a call that met a 404: what it acted on was deleted meanwhile.
pub(crate) const GONE: &str = "gone";

/// How soon a failed reconcile looks again, by `Error::reason`.
pub(crate) fn retry_wait(reason: &str) -> std::time::Duration {
    std::time::Duration::from_secs(match reason {
        "conflict" | GONE => 1,
        _ => 5,
    })
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("workspace has no namespace")]
    NoNamespace,
}

impl Error {
    /// Metric label.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Kube(kube::Error::Api(s)) if s.code == 409 => "conflict",
            Self::Kube(kube::Error::Api(s)) if s.code == 404 => GONE,
            Self::Kube(kube::Error::Api(_)) => "api_error",
            Self::Kube(_) => "transport",
            Self::NoNamespace => "no_namespace",
        }
    }
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod error_tests;
