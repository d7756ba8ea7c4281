//! Property tests: no request body, however malformed, makes the webhook panic, and every
//! well-formed review gets a response for its own uid.

use jiff::Timestamp;
use lifeguard_webhook::decision::{Decision, Inputs, NamespaceLabels, mutate, validate};
use lifeguard_webhook::review;
use proptest::prelude::*;
use serde_json::{Value, json};

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-zA-Z0-9/._:-]{0,12}".prop_map(Value::from),
        prop_oneof![
            Just("lifeguard.dev/workspace"),
            Just("lifeguard.dev/disposal"),
            Just("Workspace"),
            Just("Pod"),
            Just("CREATE"),
            Just("metadata"),
            Just("finalizers"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    "[a-z]{1,8}".prop_map(String::from),
                    Just("metadata".to_string()),
                    Just("labels".to_string()),
                    Just("finalizers".to_string()),
                    Just("spec".to_string()),
                    Just("lifeguard.dev/workspace".to_string()),
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn decide_all(body: &[u8]) {
    if let Ok(request) = review::parse(body) {
        let context = Inputs {
            windows: &[],
            namespace: &NamespaceLabels::Known(Default::default()),
            now: Timestamp::now(),
            recreation_users: &[],
        };
        for outcome in [validate(&request, &context), mutate(&request, &context)] {
            let review = review::response(&request.uid, &outcome).expect("a patch serializes");
            let response = serde_json::to_value(review).expect("a review serializes");
            assert_eq!(
                response["response"]["uid"],
                Value::from(request.uid.clone())
            );
            if let Decision::Deny { message, .. } = outcome {
                assert!(!message.is_empty());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(body in prop::collection::vec(any::<u8>(), 0..512)) {
        decide_all(&body);
    }

    #[test]
    fn arbitrary_objects_in_a_valid_envelope_never_panic(
        object in arbitrary_json(),
        kind in prop_oneof![Just(("", "Pod")), Just(("lifeguard.dev", "Workspace")),
                            Just(("lifeguard.dev", "MaintenanceWindow")), Just(("apps", "Deployment"))],
        operation in prop_oneof![Just("CREATE"), Just("UPDATE"), Just("DELETE"), Just("CONNECT")],
    ) {
        let body = json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u", "kind": {"group": kind.0, "version": "v1", "kind": kind.1},
                        "operation": operation, "namespace": "ns", "object": object}
        });
        let bytes = body.to_string().into_bytes();
        // The API server only ever sends an object (or null) there; anything else is a
        // malformed request, refused without building it.
        match (&object, review::parse(&bytes)) {
            (Value::Object(_) | Value::Null, parsed) => prop_assert!(parsed.is_ok(), "{parsed:?}"),
            (_, parsed) => prop_assert!(
                matches!(parsed, Err(review::ReviewError::MalformedRequest(ref m)) if m == "object is not a JSON object"),
                "{parsed:?}"
            ),
        }
        decide_all(&bytes);
    }

    #[test]
    fn arbitrary_requests_never_panic(request in arbitrary_json()) {
        let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request});
        decide_all(body.to_string().as_bytes());
    }
}
