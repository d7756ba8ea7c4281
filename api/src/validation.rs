//! Validation with messages precise enough to fix the object from them. The webhook denies
//! invalid objects with exactly these messages.

use std::str::FromStr;

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::cron::CronSpec;
pub use crate::field_errors::{FieldError, MAX_RECURRING_DURATION, ValidationErrors};
use crate::field_errors::{check_selector, parse_duration};
use crate::maintenance::MaintenanceWindowSpec;
use crate::names::{KEY_DOMAIN, WORKSPACE_LABEL, is_lifeguard_key};
use crate::schedule::{Occurrence, Recurring, Schedule};
use crate::workspace::WorkspaceSpec;

fn parse_instant(field: &str, text: &str, errors: &mut ValidationErrors) -> Option<Timestamp> {
    match Timestamp::from_str(text) {
        Ok(t) => Some(t),
        Err(e) => {
            errors.push(
                field,
                format!("{text:?} is not an RFC 3339 time with an offset, such as 2026-12-01T22:00:00Z or 2026-12-01T23:00:00+01:00 ({e})"),
            );
            None
        }
    }
}

fn parse_cron(text: &str, errors: &mut ValidationErrors) -> Option<CronSpec> {
    match CronSpec::parse(text) {
        Ok(cron) => Some(cron),
        Err(e) => {
            errors.push(
                "spec.schedule",
                format!("{text:?} is not a valid schedule: {e}; the language is Kubernetes CronJob's, see docs/schedule.md"),
            );
            None
        }
    }
}

fn parse_zone(text: Option<&str>, errors: &mut ValidationErrors) -> Option<TimeZone> {
    let name = text.unwrap_or("UTC");
    match jiff::tz::db().get(name) {
        Ok(zone) => Some(zone),
        Err(_) => {
            errors.push(
                "spec.timeZone",
                format!("{name:?} is not a known IANA time zone; use a name such as Europe/Berlin or America/New_York"),
            );
            None
        }
    }
}

impl MaintenanceWindowSpec {
    /// The parsed schedule, or every problem with the spec.
    pub fn schedule(&self) -> Result<Schedule, ValidationErrors> {
        let mut errors = ValidationErrors::default();
        check_selector(
            "spec.namespaceSelector",
            self.namespace_selector.as_ref(),
            &mut errors,
        );
        check_selector(
            "spec.workspaceSelector",
            self.workspace_selector.as_ref(),
            &mut errors,
        );
        let one_off = self.start.is_some() || self.end.is_some();
        let recurring = self.schedule.is_some() || self.duration.is_some();
        let schedule = match (one_off, recurring) {
            (true, true) => {
                errors.push(
                    "spec",
                    "give either start/end (a one-off window) or schedule/duration (a recurring one), not both",
                );
                None
            }
            (false, false) => {
                errors.push(
                    "spec",
                    "give either start and end (a one-off window) or schedule and duration (a recurring one)",
                );
                None
            }
            (true, false) => self.one_off(&mut errors),
            (false, true) => self.recurring(&mut errors),
        };
        self.parse_notice(&mut errors);
        // Exclusions have their own rules (`exclusion::parse`).
        if let Err(e) = self.exclusions() {
            errors.0.extend(e.0);
        }
        match schedule {
            Some(schedule) => errors.into_result(schedule),
            None => Err(errors),
        }
    }

    /// How long before each occurrence its notice goes out; `None` without one.
    pub fn notice_period(&self) -> Result<Option<SignedDuration>, ValidationErrors> {
        let mut errors = ValidationErrors::default();
        let notice = self.parse_notice(&mut errors);
        errors.into_result(notice)
    }

    fn parse_notice(&self, errors: &mut ValidationErrors) -> Option<SignedDuration> {
        let text = self.notice.as_deref()?;
        let notice = parse_duration("spec.notice", text, errors)?;
        if !self.drain {
            errors.push(
                "spec.notice",
                "warns workspaces that a drain will stop them; it needs drain: true",
            );
            return None;
        }
        Some(notice)
    }

    fn one_off(&self, errors: &mut ValidationErrors) -> Option<Schedule> {
        if self.time_zone.is_some() {
            errors.push(
                "spec.timeZone",
                "applies to schedule only; start and end carry their own UTC offset",
            );
        }
        let start = match &self.start {
            Some(s) => parse_instant("spec.start", s, errors),
            None => {
                errors.push("spec.start", "is required with end");
                None
            }
        };
        let end = match &self.end {
            Some(e) => parse_instant("spec.end", e, errors),
            None => {
                errors.push("spec.end", "is required with start");
                None
            }
        };
        let (start, end) = (start?, end?);
        if end <= start {
            errors.push("spec.end", format!("{end} is not after start {start}"));
            return None;
        }
        Some(Schedule::OneOff(Occurrence { start, end }))
    }

    fn recurring(&self, errors: &mut ValidationErrors) -> Option<Schedule> {
        let cron = match &self.schedule {
            Some(s) => parse_cron(s, errors),
            None => {
                errors.push("spec.schedule", "is required with duration");
                None
            }
        };
        let duration = match &self.duration {
            Some(d) => parse_duration("spec.duration", d, errors),
            None => {
                errors.push(
                    "spec.duration",
                    "is required with schedule (for example 2h)",
                );
                None
            }
        };
        let zone = parse_zone(self.time_zone.as_deref(), errors);
        let (cron, duration, zone) = (cron?, duration?, zone?);
        let recurring = Recurring::new(cron, duration, zone);
        let schedule = Schedule::Recurring(Box::new(recurring));
        // Patterns such as "0 0 31 4 *" are well-formed yet never match.
        if schedule.next_after(Timestamp::now(), 1).is_empty() {
            errors.push(
                "spec.schedule",
                format!(
                    "{:?} never matches a real date",
                    self.schedule.as_deref().unwrap_or_default()
                ),
            );
            return None;
        }
        Some(schedule)
    }
}

pub fn validate_maintenance_window(spec: &MaintenanceWindowSpec) -> Result<(), ValidationErrors> {
    let mut errors = spec.schedule().err().unwrap_or_default();
    // The node scope and drain budget have their own rules (`node_scope::validate`).
    errors.0.extend(crate::node_scope::validate(spec).0);
    errors
        .0
        .extend(crate::hold::compile(spec).err().unwrap_or_default().0);
    let schedule = spec.schedule().ok();
    errors.0.extend(
        crate::postpone::compile_max(spec, schedule.as_ref())
            .err()
            .unwrap_or_default()
            .0,
    );
    errors
        .0
        .extend(crate::resume::validate(spec).err().unwrap_or_default().0);
    errors.into_result(())
}

/// The longest `spec.startTimeout`: a start that takes longer is a stuck one.
pub const MAX_START_TIMEOUT: SignedDuration = SignedDuration::from_hours(24);

/// `spec.startTimeout`, parsed; `None` when absent (the controller's default applies).
/// The webhook refuses what this refuses, and the controller reads it with it.
pub fn start_timeout(spec: &WorkspaceSpec) -> Result<Option<SignedDuration>, ValidationErrors> {
    let Some(text) = spec.start_timeout.as_deref() else {
        return Ok(None);
    };
    let field = "spec.startTimeout";
    let Ok(timeout) = SignedDuration::from_str(text.trim()) else {
        return Err(ValidationErrors::single(
            field,
            format!("{text:?} is not a duration such as 10m, 30m or 1h"),
        ));
    };
    if timeout.is_zero() || timeout.is_negative() {
        return Err(ValidationErrors::single(
            field,
            format!("{text:?} must be longer than zero"),
        ));
    }
    if timeout > MAX_START_TIMEOUT {
        return Err(ValidationErrors::single(
            field,
            format!("{text:?} is longer than 24h"),
        ));
    }
    Ok(Some(timeout))
}

pub fn validate_workspace(name: &str, spec: &WorkspaceSpec) -> Result<(), ValidationErrors> {
    let mut errors = start_timeout(spec).err().unwrap_or_default();
    if name.len() > 63 {
        errors.push(
            "metadata.name",
            format!("is {} characters; at most 63, because it becomes the value of the {WORKSPACE_LABEL} label", name.len()),
        );
    }
    let template = &spec.pod_template;
    if let Some(meta) = &template.metadata {
        for (field, set) in [
            ("name", meta.name.is_some()),
            ("generateName", meta.generate_name.is_some()),
            ("namespace", meta.namespace.is_some()),
        ] {
            if set {
                errors.push(
                    &format!("spec.podTemplate.metadata.{field}"),
                    "must not be set: the pod is named ws-<workspace> in the Workspace's namespace",
                );
            }
        }
        if meta.finalizers.as_ref().is_some_and(|f| !f.is_empty()) {
            errors.push(
                "spec.podTemplate.metadata.finalizers",
                "must not be set: a workspace pod carries only lifeguard's finalizer; another one would keep it Terminating after lifeguard released it, holding its node's drain and the workspace's next start",
            );
        }
        // lifeguard's own keys on a pod are controller state the webhook trusts (the
        // re-creation marker, the start number, the workspace label): a template may not
        // forge them. The controller drops them too, for objects stored before this rule.
        for (kind, keys) in [("labels", &meta.labels), ("annotations", &meta.annotations)] {
            for key in keys
                .iter()
                .flat_map(|m| m.keys())
                .filter(|k| is_lifeguard_key(k))
            {
                errors.push(
                    &format!("spec.podTemplate.metadata.{kind}[{key}]"),
                    format!("must not be set: keys under {KEY_DOMAIN}/ are set by the lifeguard controller only"),
                );
            }
        }
    }
    match &template.spec {
        None => errors.push("spec.podTemplate.spec", "is required"),
        Some(pod) if pod.containers.is_empty() => errors.push(
            "spec.podTemplate.spec.containers",
            "needs at least one container",
        ),
        Some(pod) => {
            let mut seen = std::collections::BTreeSet::new();
            for (i, c) in pod.containers.iter().enumerate() {
                let at = format!("spec.podTemplate.spec.containers[{i}]");
                if c.name.is_empty() {
                    errors.push(&format!("{at}.name"), "is required");
                } else if !seen.insert(c.name.as_str()) {
                    errors.push(&format!("{at}.name"), format!("{:?} is used twice", c.name));
                }
                if c.image.as_deref().is_none_or(str::is_empty) {
                    errors.push(&format!("{at}.image"), "is required");
                }
            }
        }
    }
    errors.into_result(())
}

/// Decodes `obj[key]` as `T`, reporting type errors with their JSON path.
fn decode<T: DeserializeOwned>(obj: &Value, key: &str) -> Result<T, ValidationErrors> {
    let value = obj.get(key).cloned().unwrap_or(Value::Null);
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            key.to_string()
        } else {
            format!("{key}.{path}")
        };
        ValidationErrors::single(&field, e.into_inner().to_string())
    })
}

/// For the webhook: a whole Workspace object as JSON.
pub fn validate_workspace_object(obj: &Value) -> Result<(), ValidationErrors> {
    let spec: WorkspaceSpec = decode(obj, "spec")?;
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    validate_workspace(name, &spec)?;
    check_postpone_request(obj)
}

/// A Workspace object's request to postpone its drain (`names::POSTPONE_DRAIN_ANNOTATION`),
/// if any: refused when it cannot be read, so the owner learns at once instead of being
/// drained on time. Checked on every write that sets it, metadata-only ones included.
pub fn check_postpone_request(obj: &Value) -> Result<(), ValidationErrors> {
    match postpone_request(obj) {
        None => Ok(()),
        Some(Value::String(text)) => crate::postpone::check_request(text)
            .map(|_| ())
            .map_err(|e| ValidationErrors::single("metadata.annotations", e)),
        Some(_) => Err(ValidationErrors::single(
            "metadata.annotations",
            "an annotation's value must be a string",
        )),
    }
}

/// The postpone request annotation of an object as JSON, if it has one.
pub fn postpone_request(obj: &Value) -> Option<&Value> {
    obj.get("metadata")?
        .get("annotations")?
        .get(crate::names::POSTPONE_DRAIN_ANNOTATION)
}

/// For the webhook: a whole MaintenanceWindow object as JSON. `Ok` carries warnings for
/// the client (kubectl prints them): the schedule syntax in use that is lifeguard's own, so
/// whoever copies it into a CronJob knows it will be refused there.
pub fn validate_maintenance_window_object(obj: &Value) -> Result<Vec<String>, ValidationErrors> {
    let spec: MaintenanceWindowSpec = decode(obj, "spec")?;
    // Every error at once: the schedule's and the node scope's (`node_scope::validate`).
    validate_maintenance_window(&spec)?;
    let schedule = spec.schedule()?;
    Ok(schedule
        .extensions()
        .iter()
        .map(|extension| {
            format!("spec.schedule uses lifeguard's extension {extension}, which Kubernetes CronJob does not accept")
        })
        .collect())
}

#[cfg(test)]
#[path = "validation_tests.rs"]
mod validation_tests;
