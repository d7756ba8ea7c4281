//! The prober's errors: what it failed to do with the API server or the Node, in words an
//! operator reads in the log or in a check's inconclusive outcome. None of them says
//! anything about the node's health.

/// One API call that did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No answer within the call's budget.
    #[error("API server did not answer")]
    NoAnswer,
    /// An answer that is an error, or no connection at all.
    #[error("{}", describe(.0))]
    Failed(#[source] kube::Error),
}

/// The Node has no uid, so it cannot own a probe pod (the pod would outlive a Node
/// deleted and registered again under the same name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the Node has no uid to own the probe pod")]
pub struct NoNodeUid;

/// What the prober failed to do with the API server or the Node.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Api(#[from] ApiError),
    /// One step of a write or a sweep failed; `step` says which ("updating taints").
    #[error("{step}: {source}")]
    Step { step: String, source: ApiError },
    /// Someone else wrote the Node each time this step read it.
    #[error("{step}: {retries} conflicts in a row")]
    Conflicts { step: String, retries: u32 },
    #[error(transparent)]
    NoNodeUid(#[from] NoNodeUid),
}

impl Error {
    pub fn in_step(step: impl Into<String>, source: ApiError) -> Self {
        Error::Step {
            step: step.into(),
            source,
        }
    }
}

/// A kube error in a sentence: whether the API server refused (a 4xx says the request
/// was wrong or not allowed), failed (5xx, 429) or could not be reached.
pub fn describe(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if status.code >= 500 || status.code == 429 => {
            format!("API server error {}: {}", status.code, status.message)
        }
        kube::Error::Api(status) => {
            format!("API server refused ({}): {}", status.code, status.message)
        }
        kube::Error::HyperError(_) | kube::Error::Service(_) => {
            format!("API server unreachable: {error}")
        }
        other => format!("API call failed: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            message: message.into(),
            ..Default::default()
        }))
    }

    #[test]
    fn each_error_names_the_step_and_the_cause() {
        let cases: Vec<(Error, &str)> = vec![
            (ApiError::NoAnswer.into(), "API server did not answer"),
            (
                ApiError::Failed(api_error(503, "etcd timeout")).into(),
                "API server error 503: etcd timeout",
            ),
            (
                Error::in_step("updating taints", ApiError::NoAnswer),
                "updating taints: API server did not answer",
            ),
            (
                Error::in_step(
                    "removing lifeguard.dev/unproven",
                    ApiError::Failed(api_error(403, "nodes is forbidden")),
                ),
                "removing lifeguard.dev/unproven: API server refused (403): nodes is forbidden",
            ),
            (
                Error::Conflicts {
                    step: "updating taints".into(),
                    retries: 5,
                },
                "updating taints: 5 conflicts in a row",
            ),
            (NoNodeUid.into(), "the Node has no uid to own the probe pod"),
        ];
        for (error, want) in cases {
            assert_eq!(error.to_string(), want);
        }
    }
}
