//! The AdmissionReview wire format (`admission.k8s.io/v1`): parsing with clear errors for
//! anything the API server would never send, and the response in kube's types
//! (`kube::core::admission::AdmissionResponse`, with a `json_patch::Patch`).
//!
//! Parsing reads only what the decisions use, in one pass over the body. The review is
//! deserialized into borrowed, typed structs: unknown fields are skipped without being
//! stored, and of `object` and `oldObject` only `metadata` and `spec` are kept, as
//! `&RawValue` (slices of the body, no allocation). Only the parts a decision reads are
//! then decoded: the fields of the object's `metadata` a decision reads, as typed fields
//! (`object.rs`; never `managedFields`), its `spec` for lifeguard's own kinds (validation
//! needs it) and a pod's `spec.affinity` (steering extends it). `oldObject` is never built:
//! its `spec` is compared byte for byte with the new one.
//! A 3 MiB `oldObject` therefore costs nothing beyond the body itself.
//!
//! Why requests are not read as `kube::core::admission::AdmissionReview`: it deserializes `object` and
//! `oldObject` fully into `DynamicObject` trees (a 2.5-million-element array becomes about
//! 80 MB of `serde_json::Value`), which is the memory blow-up this parser exists to avoid.

use std::fmt;

use kube::core::admission::{AdmissionResponse, AdmissionReview, SerializePatchError};
use kube::core::{DynamicObject, Status};
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use lifeguard_api::names::{GROUP, POSTPONE_DRAIN_ANNOTATION};

/// What a review is answered with; decided in `decision.rs`, written out here.
pub use crate::decision::Decision;
use crate::object::{AdmittedObject, ObjectMetadata};

pub const API_VERSION: &str = "admission.k8s.io/v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
            Self::Connect => "CONNECT",
        }
    }
}

/// The fields lifeguard decides on.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionRequest {
    pub uid: String,
    pub group: String,
    pub kind: String,
    pub operation: Operation,
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// The parts of `object` the decisions read (`object.rs`). Other fields (the rest of a
    /// pod's spec, status) are skipped.
    pub object: Option<AdmittedObject>,
    pub username: String,
    /// UPDATE only: `object.spec` is byte for byte `oldObject.spec` (both absent counts as
    /// equal). The API server encodes both with the same serializer, so an update that only
    /// touched metadata (finalizers, annotations, labels) or status compares equal.
    pub spec_unchanged: bool,
    /// UPDATE of one of lifeguard's kinds: `oldObject`'s postpone request
    /// (`names::POSTPONE_DRAIN_ANNOTATION`), so a write that changes it is checked.
    pub old_postpone_request: Option<String>,
    /// The request is a dry run: whatever the decision, nothing may be written.
    pub dry_run: bool,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ReviewError {
    #[error("request body is not JSON: {0}")]
    NotJson(String),
    #[error("expected apiVersion {API_VERSION}, got {0:?}")]
    WrongApiVersion(String),
    #[error("expected kind AdmissionReview, got {0:?}")]
    WrongKind(String),
    #[error("AdmissionReview has no request")]
    MissingRequest,
    #[error("AdmissionReview request is malformed: {0}")]
    MalformedRequest(String),
    #[error("AdmissionReview request has an empty uid")]
    EmptyUid,
    #[error("unknown operation {0:?}")]
    UnknownOperation(String),
}

/// The review in one pass over the body: the usual case.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireReview<'a> {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default, borrow)]
    request: Option<WireRequest<ObjectParts<'a>>>,
}

/// The envelope alone, to name what is wrong when the one-pass parse fails.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a> {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default, borrow)]
    request: Option<&'a RawValue>,
}

/// `O`: how `object` and `oldObject` are read (their parts, or raw for diagnosis).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "O: Deserialize<'de>"))]
struct WireRequest<O> {
    uid: String,
    kind: WireKind,
    operation: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    object: Option<O>,
    #[serde(default)]
    old_object: Option<O>,
    #[serde(default)]
    user_info: Option<WireUser>,
    #[serde(default)]
    dry_run: Option<bool>,
}

#[derive(Deserialize)]
struct WireKind {
    #[serde(default)]
    group: String,
    kind: String,
}

#[derive(Deserialize)]
struct WireUser {
    #[serde(default)]
    username: String,
}

pub fn parse(body: &[u8]) -> Result<AdmissionRequest, ReviewError> {
    match serde_json::from_slice::<WireReview>(body) {
        Ok(review) => checked(review),
        Err(error) => Err(diagnose(body, error)),
    }
}

fn checked(review: WireReview) -> Result<AdmissionRequest, ReviewError> {
    if review.api_version != API_VERSION {
        return Err(ReviewError::WrongApiVersion(review.api_version));
    }
    if review.kind != "AdmissionReview" {
        return Err(ReviewError::WrongKind(review.kind));
    }
    let request = review.request.ok_or(ReviewError::MissingRequest)?;
    if request.uid.is_empty() {
        return Err(ReviewError::EmptyUid);
    }
    let operation = match request.operation.as_str() {
        "CREATE" => Operation::Create,
        "UPDATE" => Operation::Update,
        "DELETE" => Operation::Delete,
        "CONNECT" => Operation::Connect,
        other => return Err(ReviewError::UnknownOperation(other.to_string())),
    };
    let spec_unchanged = operation == Operation::Update
        && match (&request.object, &request.old_object) {
            (Some(new), Some(old)) => new.spec.map(RawValue::get) == old.spec.map(RawValue::get),
            _ => false,
        };
    let wants_spec = request.kind.group == GROUP;
    let old_postpone_request = request
        .old_object
        .as_ref()
        .filter(|_| wants_spec && operation == Operation::Update)
        .and_then(|old| old.metadata)
        .and_then(|m| serde_json::from_str::<OldAnnotations>(m.get()).ok())
        .and_then(|m| m.annotations?.remove(POSTPONE_DRAIN_ANNOTATION))
        .and_then(|v| v.as_str().map(str::to_owned));
    let dry_run = request.dry_run.unwrap_or(false)
        || request
            .object
            .as_ref()
            .and_then(|o| o.delete_options)
            .and_then(|d| serde_json::from_str::<DryRunOption>(d.get()).ok())
            .is_some_and(|d| d.dry_run.is_some_and(|v| !v.is_empty()));
    let pod = request.kind.group.is_empty() && request.kind.kind == "Pod";
    let object = request
        .object
        .map(|o| decoded_object(&o, wants_spec, pod))
        .transpose()
        .map_err(|e| ReviewError::MalformedRequest(format!("object: {e}")))?;
    Ok(AdmissionRequest {
        uid: request.uid,
        group: request.kind.group,
        kind: request.kind.kind,
        operation,
        namespace: request.namespace.filter(|n| !n.is_empty()),
        name: request.name.filter(|n| !n.is_empty()),
        object,
        username: request.user_info.map(|u| u.username).unwrap_or_default(),
        spec_unchanged,
        old_postpone_request,
        dry_run,
    })
}

/// Of an Eviction's `deleteOptions`, only `dryRun` (`["All"]` for a dry run).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DryRunOption {
    #[serde(default)]
    dry_run: Option<Vec<String>>,
}

/// Of `oldObject`'s metadata, only the annotations (other fields are skipped unstored).
#[derive(Deserialize)]
struct OldAnnotations {
    #[serde(default)]
    annotations: Option<Map<String, Value>>,
}

/// Names what is wrong with a body the one-pass parse refused, checking in the order a
/// reader would: JSON at all, the envelope, the request, its objects. Runs only on bad
/// requests, so the extra passes cost nothing in the usual case.
fn diagnose(body: &[u8], error: serde_json::Error) -> ReviewError {
    let envelope: Envelope = match serde_json::from_slice(body) {
        Ok(envelope) => envelope,
        Err(e) => return ReviewError::NotJson(e.to_string()),
    };
    if envelope.api_version != API_VERSION {
        return ReviewError::WrongApiVersion(envelope.api_version);
    }
    if envelope.kind != "AdmissionReview" {
        return ReviewError::WrongKind(envelope.kind);
    }
    let Some(request) = envelope.request else {
        return ReviewError::MissingRequest;
    };
    let request: WireRequest<&RawValue> = match serde_json::from_str(request.get()) {
        Ok(request) => request,
        Err(e) => return ReviewError::MalformedRequest(e.to_string()),
    };
    for (field, raw) in [
        ("object", request.object),
        ("oldObject", request.old_object),
    ] {
        if raw.is_some_and(|r| !r.get().starts_with('{')) {
            return ReviewError::MalformedRequest(format!("{field} is not a JSON object"));
        }
    }
    ReviewError::MalformedRequest(error.to_string())
}

/// An object as raw slices of the body: whatever else it holds is skipped unread. Only a
/// JSON object is accepted (serde's derive would also take an array).
struct ObjectParts<'a> {
    metadata: Option<&'a RawValue>,
    spec: Option<&'a RawValue>,
    /// An Eviction's: its `dryRun` makes the eviction a dry run, which the API server
    /// does not always say in the request's own `dryRun`.
    delete_options: Option<&'a RawValue>,
}

impl<'de: 'a, 'a> Deserialize<'de> for ObjectParts<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(field_identifier, rename_all = "lowercase")]
        enum Field {
            Metadata,
            Spec,
            #[serde(rename = "deleteOptions")]
            DeleteOptions,
            #[serde(other)]
            Other,
        }
        struct PartsVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for PartsVisitor<'a> {
            type Value = ObjectParts<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut parts = ObjectParts {
                    metadata: None,
                    spec: None,
                    delete_options: None,
                };
                while let Some(field) = map.next_key::<Field>()? {
                    match field {
                        Field::Metadata => parts.metadata = map.next_value()?,
                        Field::Spec => parts.spec = map.next_value()?,
                        Field::DeleteOptions => parts.delete_options = map.next_value()?,
                        Field::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(parts)
            }
        }
        deserializer.deserialize_map(PartsVisitor(std::marker::PhantomData))
    }
}

/// Of a pod's spec, only what steering reads (`steer.rs`).
#[derive(Deserialize)]
struct PodAffinity {
    affinity: Option<Value>,
}

/// Decodes what the decisions read from the raw parts. A `metadata` that is not a JSON
/// object is dropped (the decisions then see no labels).
fn decoded_object(
    raw: &ObjectParts,
    with_spec: bool,
    pod_affinity: bool,
) -> Result<AdmittedObject, serde_json::Error> {
    let mut object = AdmittedObject::default();
    if let Some(metadata) = raw.metadata.filter(|m| m.get().starts_with('{')) {
        object.metadata = serde_json::from_str::<ObjectMetadata>(metadata.get())?;
    }
    if with_spec && let Some(spec) = raw.spec {
        object.spec = Some(serde_json::from_str(spec.get())?);
    } else if pod_affinity && let Some(spec) = raw.spec {
        // A spec that is not an object is the API server's to refuse; there is then
        // nothing to steer by, and no reason to fail the review.
        object.affinity = serde_json::from_str::<PodAffinity>(spec.get())
            .ok()
            .and_then(|s| s.affinity);
    }
    Ok(object)
}

/// `object` decoded as `parse` decodes it in a review of `group`/`kind`: for tests that
/// build requests without a body.
#[cfg(test)]
pub(crate) fn decode_object(group: &str, kind: &str, object: &Value) -> AdmittedObject {
    let text = object.to_string();
    let parts: ObjectParts = serde_json::from_str(&text).expect("a test object is a JSON object");
    decoded_object(&parts, group == GROUP, group.is_empty() && kind == "Pod")
        .expect("a test object decodes")
}

/// The review the API server expects back, in kube's types. kube builds a response from
/// its own parsed request, which lifeguard does not use (see the top of this file); so it
/// starts from `invalid` (an `admission.k8s.io/v1` response without a uid) and sets the rest.
pub fn response(
    uid: &str,
    outcome: &Decision,
) -> Result<AdmissionReview<DynamicObject>, SerializePatchError> {
    let mut response = AdmissionResponse::invalid("");
    response.uid = uid.to_owned();
    response.allowed = true;
    response.result = Status::default();
    match outcome {
        Decision::Allow => {}
        Decision::Warn(warnings) => response.warnings = Some(warnings.clone()),
        Decision::Patch(patch) => response = response.with_patch(patch.clone())?,
        Decision::Deny {
            code,
            reason,
            message,
        } => {
            response = response.deny(message);
            response.result.code = *code;
            response.result.reason = (*reason).to_owned();
        }
    }
    Ok(response.into_review())
}

/// The answer's bytes. Most answers are a plain "allowed", written directly: through kube's
/// `AdmissionResponse` it costs a default `Status`, the review's wrapper and their
/// serialization, a visible share of a request's time under load (`bench/admission-profile`).
/// Every other answer goes through [`response`].
pub fn encode(uid: &str, outcome: &Decision) -> Result<Vec<u8>, String> {
    if let Decision::Allow = outcome {
        let uid = serde_json::to_string(uid).map_err(|e| e.to_string())?;
        let mut body = Vec::with_capacity(ALLOWED_HEAD.len() + uid.len() + ALLOWED_TAIL.len());
        body.extend_from_slice(ALLOWED_HEAD.as_bytes());
        body.extend_from_slice(uid.as_bytes());
        body.extend_from_slice(ALLOWED_TAIL.as_bytes());
        return Ok(body);
    }
    let review = response(uid, outcome).map_err(|e| e.to_string())?;
    serde_json::to_vec(&review).map_err(|e| e.to_string())
}

const ALLOWED_HEAD: &str =
    r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"#;
const ALLOWED_TAIL: &str = r#","allowed":true,"status":{}}}"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::{Finalizers, OwnerReference};
    use serde_json::json;

    fn review(request: Value) -> Vec<u8> {
        json!({"apiVersion": API_VERSION, "kind": "AdmissionReview", "request": request})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn parses_a_pod_create() {
        let body = review(json!({
            "uid": "u-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "operation": "CREATE", "namespace": "team-a", "name": "",
            "userInfo": {"username": "alice"}, "object": {"metadata": {}},
        }));
        let request = parse(&body).expect("valid review");
        assert_eq!(request.uid, "u-1");
        assert_eq!(request.kind, "Pod");
        assert_eq!(request.operation, Operation::Create);
        assert_eq!(request.namespace.as_deref(), Some("team-a"));
        assert_eq!(
            request.name, None,
            "pods created with generateName have no name yet"
        );
        assert_eq!(request.username, "alice");
    }

    #[test]
    fn parses_an_eviction_with_its_pod_and_whether_it_is_a_dry_run() {
        let in_options = json!({"dryRun": ["All"]});
        let cases = [
            (json!(true), Value::Null, true),
            (json!(false), Value::Null, false),
            (Value::Null, Value::Null, false),
            // The eviction's own deleteOptions, as kubectl drain --dry-run=server sends it.
            (json!(false), in_options, true),
            (json!(false), json!({"dryRun": []}), false),
        ];
        for (dry_run, options, want) in cases {
            let mut request = json!({
                "uid": "u-2", "kind": {"group": "policy", "version": "v1", "kind": "Eviction"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "subResource": "eviction",
                "operation": "CREATE", "namespace": "team-a", "name": "ws-alice",
                "userInfo": {"username": "system:serviceaccount:kube-system:cluster-autoscaler"},
                "object": {"apiVersion": "policy/v1", "kind": "Eviction",
                           "metadata": {"name": "ws-alice", "namespace": "team-a"}},
            });
            if !dry_run.is_null() {
                request["dryRun"] = dry_run;
            }
            if !options.is_null() {
                request["object"]["deleteOptions"] = options;
            }
            let request = parse(&review(request)).expect("valid review");
            assert_eq!(
                (
                    request.group.as_str(),
                    request.kind.as_str(),
                    request.name.as_deref()
                ),
                ("policy", "Eviction", Some("ws-alice"))
            );
            assert_eq!(request.dry_run, want);
        }
    }

    #[test]
    fn keeps_of_the_metadata_only_what_a_decision_reads() {
        let body = review(json!({
            "uid": "u-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "operation": "CREATE", "namespace": "team-a",
            "object": {"metadata": {
                "name": "ws-alice", "namespace": "team-a", "uid": "p-1",
                "creationTimestamp": null, "resourceVersion": "7",
                "labels": {"lifeguard.dev/workspace": "alice"},
                "annotations": {"lifeguard.dev/start": "1"},
                "finalizers": ["example.com/keep"],
                "ownerReferences": [{"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
                                     "name": "alice", "uid": "w-1", "controller": true}],
                "deletionTimestamp": null,
                "managedFields": [{"manager": "lifeguard-controller"}],
                "generateName": "ws-"
            }, "spec": {"containers": []}},
        }));
        let request = parse(&body).expect("valid review");
        let object = request.object.expect("the object is kept");
        let owner = OwnerReference {
            api_version: Some("lifeguard.dev/v1alpha1".into()),
            kind: Some("Workspace".into()),
        };
        // Every field a decision reads, each with its whole value; nothing else is kept.
        assert_eq!(
            object,
            AdmittedObject {
                metadata: ObjectMetadata {
                    name: Some("ws-alice".into()),
                    labels: [("lifeguard.dev/workspace".into(), "alice".into())].into(),
                    annotations: [("lifeguard.dev/start".into(), "1".into())].into(),
                    finalizers: Finalizers::List(vec!["example.com/keep".into()]),
                    owner_references: vec![owner],
                    deleting: false,
                },
                spec: None,
                affinity: None,
            }
        );
    }

    #[test]
    fn rejects_what_the_api_server_never_sends() {
        let cases: Vec<(&[u8], ReviewError)> = vec![
            (b"{not json", ReviewError::NotJson(String::new())),
            (
                br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{}}"#,
                ReviewError::WrongApiVersion("admission.k8s.io/v1beta1".into()),
            ),
            (
                br#"{"apiVersion":"admission.k8s.io/v1","kind":"Pod"}"#,
                ReviewError::WrongKind("Pod".into()),
            ),
            (
                br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
                ReviewError::MissingRequest,
            ),
            (
                br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"kind":{"kind":"Pod"},"operation":"CREATE"}}"#,
                ReviewError::MalformedRequest(String::new()),
            ),
            (
                br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"","kind":{"kind":"Pod"},"operation":"CREATE"}}"#,
                ReviewError::EmptyUid,
            ),
            (
                br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","kind":{"kind":"Pod"},"operation":"PATCH"}}"#,
                ReviewError::UnknownOperation("PATCH".into()),
            ),
            (b"[1,2,3]", ReviewError::NotJson(String::new())),
        ];
        for (body, expected) in cases {
            let got = parse(body).expect_err("must be rejected");
            assert_eq!(
                std::mem::discriminant(&got),
                std::mem::discriminant(&expected),
                "{}: got {got}",
                String::from_utf8_lossy(body)
            );
        }
    }

    fn answer(uid: &str, outcome: &Decision) -> Value {
        let review = response(uid, outcome).expect("a patch serializes");
        serde_json::to_value(review).expect("a review serializes")
    }

    #[test]
    fn an_allowed_review_is_admission_v1_with_the_uid() {
        let body = answer("u-1", &Decision::Allow);
        assert_eq!(body["apiVersion"], API_VERSION);
        assert_eq!(body["kind"], "AdmissionReview");
        assert_eq!(body["response"]["uid"], "u-1");
        assert_eq!(body["response"]["allowed"], true);
        assert!(body["response"].get("patch").is_none());
    }

    #[test]
    fn the_direct_allowed_answer_reads_as_kubes_with_the_uid_escaped() {
        for uid in ["u-1", "with \"quotes\" and \\ and \u{1}"] {
            let direct: Value =
                serde_json::from_slice(&encode(uid, &Decision::Allow).expect("encodes"))
                    .expect("the direct answer is JSON");
            let through_kube = answer(uid, &Decision::Allow);
            // The same document kube's types write, byte order aside.
            assert_eq!(direct, through_kube, "{uid}");
            // And kube reads the direct answer back.
            let review: AdmissionReview<DynamicObject> =
                serde_json::from_value(direct).expect("kube reads the direct answer");
            let response = review.response.expect("a response");
            assert!(response.allowed && response.uid == uid);
        }
    }

    #[test]
    fn warnings_go_to_the_client() {
        let body = answer("u-4", &Decision::Warn(vec!["careful".into()]));
        assert_eq!(body["response"]["allowed"], true);
        assert_eq!(body["response"]["warnings"], json!(["careful"]));
    }

    #[test]
    fn the_patch_carries_the_json_patch_text() {
        let ops = vec![json!({"op": "add", "path": "/metadata/finalizers", "value": ["f"]})];
        let patch = serde_json::from_value(Value::Array(ops.clone())).expect("JSON Patch");
        let body = answer("u-2", &Decision::Patch(patch));
        assert_eq!(body["response"]["uid"], "u-2");
        assert_eq!(body["response"]["allowed"], true);
        assert_eq!(body["response"]["patchType"], "JSONPatch");
        // kube writes the `[]byte` as a JSON array of bytes, not as base64; Go's decoder (the
        // API server's) takes both. The e2e finalizer tests show a real API server applying it.
        let bytes: Vec<u8> =
            serde_json::from_value(body["response"]["patch"].clone()).expect("patch bytes");
        let decoded: Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(decoded, Value::Array(ops));
    }

    #[test]
    fn denial_carries_code_reason_and_message() {
        let outcome = Decision::Deny {
            code: 403,
            reason: "Forbidden",
            message: "no".into(),
        };
        let body = answer("u-3", &outcome);
        assert_eq!(body["response"]["allowed"], false);
        assert_eq!(body["response"]["status"]["code"], 403);
        assert_eq!(body["response"]["status"]["message"], "no");
        assert_eq!(outcome.decision(), "denied_maintenance");
    }
}
