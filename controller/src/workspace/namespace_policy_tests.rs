use super::*;

#[test]
fn refused_namespaces() {
    let policy = NamespacePolicy::new("lifeguard", ["tenant-admin".to_string(), " ".to_string()]);
    for (namespace, refused) in [
        ("kube-system", true),
        ("lifeguard", true),
        ("tenant-admin", true),
        ("lifeguard-system", false),
        ("team-a", false),
        ("", false),
    ] {
        assert_eq!(
            policy.refusal(namespace).is_some(),
            refused,
            "{namespace:?}"
        );
    }
    let message = policy.refusal("kube-system").unwrap_or_default();
    assert!(
        message.contains("refused: kube-system, lifeguard, tenant-admin"),
        "{message}"
    );
    assert!(
        NamespacePolicy::default()
            .refusal("lifeguard-system")
            .is_some(),
        "the default own namespace"
    );
}
