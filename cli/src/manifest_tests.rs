use super::*;

fn ts(s: &str) -> Timestamp {
    s.parse().expect("test timestamp")
}

#[test]
fn selectors() {
    type Labels = &'static [(&'static str, &'static str)];
    let cases: &[(&str, Result<Labels, &str>)] = &[
        ("team=ml", Ok(&[("team", "ml")])),
        ("team=ml, env==dev", Ok(&[("env", "dev"), ("team", "ml")])),
        (
            "lifeguard.dev/e2e-namespace=e2e-x",
            Ok(&[("lifeguard.dev/e2e-namespace", "e2e-x")]),
        ),
        ("team=", Ok(&[("team", "")])),
        ("team", Err("\"team\" is not key=value")),
        ("team!=ml", Err("only equality")),
        ("=ml", Err("is not key=value")),
        ("a=b=c", Err("is not key=value")),
        (" , ", Err("no key=value")),
    ];
    for (text, want) in cases {
        match (parse_selector("--namespace-selector", text), want) {
            (Ok(s), Ok(labels)) => {
                let want: BTreeMap<String, String> = labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                assert_eq!(s.match_labels, Some(want), "{text}");
            }
            (Err(Error::Usage(e)), Err(part)) => assert!(e.contains(part), "{text}: {e}"),
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn one_off_windows() {
    let base = OneOff {
        name: "upgrade".into(),
        start: ts("2026-12-01T22:00:00Z"),
        end: ts("2026-12-02T00:00:00Z"),
        message: Some("node upgrade".into()),
        drain: true,
        ..OneOff::default()
    };
    let w = one_off_window(base.clone()).expect("valid");
    assert_eq!(w.metadata.name.as_deref(), Some("upgrade"));
    assert_eq!(w.spec.start.as_deref(), Some("2026-12-01T22:00:00Z"));
    assert_eq!(w.spec.end.as_deref(), Some("2026-12-02T00:00:00Z"));
    assert!(w.spec.drain && !w.spec.allow_recreation);
    assert_eq!(w.spec.message.as_deref(), Some("node upgrade"));

    let blank = one_off_window(OneOff {
        message: Some("  ".into()),
        ..base.clone()
    })
    .expect("valid");
    assert_eq!(blank.spec.message, None, "a blank message is left out");

    let backwards = one_off_window(OneOff {
        end: base.start,
        ..base.clone()
    });
    assert!(matches!(backwards, Err(Error::Usage(m)) if m.contains("not after its start")));

    let bad_selector = one_off_window(OneOff {
        namespace_selector: Some(LabelSelector {
            match_expressions: Some(vec![Default::default()]),
            ..Default::default()
        }),
        ..base
    });
    assert!(
        matches!(&bad_selector, Err(Error::Invalid(e)) if e.to_string().contains("spec.namespaceSelector.matchExpressions[0]")),
        "{bad_selector:?}"
    );
}

#[test]
fn manifests() {
    let yaml = "\
apiVersion: v1
kind: Namespace
metadata: {name: x}
---
apiVersion: lifeguard.dev/v1alpha1
kind: MaintenanceWindow
metadata: {name: weekly}
spec: {schedule: '0 22 * * 6', duration: 2h, timeZone: Europe/Berlin}
---
";
    let windows = windows_in(yaml, "w.yaml").expect("reads");
    assert_eq!(windows.len(), 1);
    assert_eq!(windows[0].spec.duration.as_deref(), Some("2h"));

    let json = r#"{"apiVersion": "lifeguard.dev/v1alpha1", "kind": "MaintenanceWindow",
                  "metadata": {"name": "once"}, "spec": {"start": "2026-12-01T22:00:00Z", "end": "2026-12-02T00:00:00Z"}}"#;
    assert_eq!(windows_in(json, "w.json").expect("reads").len(), 1);

    let cases = [
        (
            "kind: Namespace\nmetadata: {name: x}\n",
            "no MaintenanceWindow",
        ),
        (
            "kind: MaintenanceWindow\nspec: [1]\n",
            "document 1: not a MaintenanceWindow",
        ),
        ("kind: [\n", "w.yaml: document 1"),
    ];
    for (text, want) in cases {
        let e = windows_in(text, "w.yaml").expect_err(text).to_string();
        assert!(e.contains(want), "{text}: {e}");
    }
}
