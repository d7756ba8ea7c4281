//! One error type for the whole tool; each kind maps to a documented exit code.

use std::process::ExitCode;

/// Exit codes, as documented in `lifeguard --help` and docs/cli.md.
pub mod exit {
    pub const OK: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const TIMEOUT: u8 = 3;
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad flags or flag values: the user can fix the command line.
    #[error("{0}")]
    Usage(String),
    /// A MaintenanceWindow the API server would refuse; said before sending it.
    #[error("invalid MaintenanceWindow: {0}")]
    Invalid(#[from] lifeguard_api::validation::ValidationErrors),
    #[error("{0}")]
    Failed(String),
    /// `maintenance wait` gave up; the message says what remains.
    #[error("{0}")]
    Timeout(String),
    #[error("{context}: {detail}")]
    Kube {
        context: String,
        /// The API server's own message when it answered, else the transport error.
        detail: String,
        #[source]
        source: kube::Error,
    },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            Self::Usage(_) => exit::USAGE,
            Self::Timeout(_) => exit::TIMEOUT,
            _ => exit::ERROR,
        })
    }

    /// Wraps an API error with what was being done, and a hint for the common causes.
    pub fn kube(context: impl Into<String>, source: kube::Error) -> Self {
        let mut context = context.into();
        if let Some(hint) = hint(&source) {
            context = format!("{context} ({hint})");
        }
        let detail = match &source {
            kube::Error::Api(status) => status.message.clone(),
            other => other.to_string(),
        };
        Self::Kube {
            context,
            detail,
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// HTTP status of an API error, if the API server answered at all.
pub fn status_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

fn hint(error: &kube::Error) -> Option<&'static str> {
    match (error, status_code(error)) {
        (_, Some(401)) => Some("the kubeconfig's credentials were refused"),
        (_, Some(403)) => Some("your user lacks the RBAC permission for this"),
        (_, Some(_)) | (kube::Error::SerdeError(_), _) => None,
        (_, None) => Some("is the cluster reachable? check --kubeconfig and --context"),
    }
}
