//! The errors of a spec's fields (which field, what is wrong with it) and the checks of
//! field kinds more than one spec has: durations and label selectors. A leaf: every module
//! that validates a part of a spec builds on it, and it builds on none of them.

use std::fmt;
use std::str::FromStr;

use jiff::SignedDuration;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Longest occurrence of a recurring window; anything longer is almost surely a typo
/// (`72h` meant as `7h`), and one-off windows cover real multi-day freezes.
pub const MAX_RECURRING_DURATION: SignedDuration = SignedDuration::from_hours(7 * 24);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ValidationErrors(pub Vec<FieldError>);

impl ValidationErrors {
    pub fn single(field: &str, message: impl Into<String>) -> Self {
        Self(vec![FieldError {
            field: field.to_string(),
            message: message.into(),
        }])
    }

    pub(crate) fn push(&mut self, field: &str, message: impl Into<String>) {
        self.0.push(FieldError {
            field: field.to_string(),
            message: message.into(),
        });
    }

    pub(crate) fn into_result<T>(self, value: T) -> Result<T, Self> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationErrors {}

pub(crate) fn parse_duration(
    field: &str,
    text: &str,
    errors: &mut ValidationErrors,
) -> Option<SignedDuration> {
    let duration = match SignedDuration::from_str(text.trim()) {
        Ok(d) => d,
        Err(_) => {
            errors.push(
                field,
                format!("{text:?} is not a duration such as 2h, 90m or 1h30m"),
            );
            return None;
        }
    };
    if duration.is_zero() || duration.is_negative() {
        errors.push(field, format!("{text:?} must be longer than zero"));
        return None;
    }
    if duration > MAX_RECURRING_DURATION {
        errors.push(
            field,
            if field == "spec.duration" {
                format!("{text:?} is longer than 7 days; use a one-off window (start/end) for longer freezes")
            } else {
                format!("{text:?} is longer than 7 days")
            },
        );
        return None;
    }
    Some(duration)
}

pub(crate) fn check_selector(
    field: &str,
    selector: Option<&LabelSelector>,
    errors: &mut ValidationErrors,
) {
    let Some(selector) = selector else { return };
    for (i, requirement) in selector.match_expressions.iter().flatten().enumerate() {
        let at = format!("{field}.matchExpressions[{i}]");
        let values = requirement.values.as_ref().map_or(0, Vec::len);
        match requirement.operator.as_str() {
            "In" | "NotIn" if values == 0 => errors.push(
                &at,
                format!("operator {} needs at least one value", requirement.operator),
            ),
            "Exists" | "DoesNotExist" if values > 0 => errors.push(
                &at,
                format!("operator {} takes no values", requirement.operator),
            ),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errors.push(
                &at,
                format!("unknown operator {other:?}; use In, NotIn, Exists or DoesNotExist"),
            ),
        }
        if requirement.key.is_empty() {
            errors.push(&format!("{at}.key"), "must not be empty");
        }
    }
}
