//! Which workspaces must look again when a window that can give notice changes. Pure.
//!
//! A notice can only move for a workspace the window covers before or after the change, so
//! the signal goes to the namespaces either version's `namespaceSelector` matches; a window
//! selecting every namespace reaches everyone. The `workspaceSelector` and a node-scoped
//! window's `nodeSelector` are not narrowed on: the controller's Workspace cache keeps
//! names only (docs/benchmarks.md, "Controller: memory"), so everyone in a covered
//! namespace looks again (a few more reconciles, never a notice missed).

use std::collections::{BTreeMap, BTreeSet};

use lifeguard_api::window::CompiledWindow;

/// Who looks again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    Nobody,
    Everyone,
    Namespaces(BTreeSet<String>),
}

/// The reach of a change of one window from `before` to `after`, each the compiled window
/// when that version can give notice (`None`: it cannot, or it does not exist). With
/// `namespaces` unknown (their cache not filled yet), a narrowed change reaches everyone.
pub fn of_change(
    before: Option<&CompiledWindow>,
    after: Option<&CompiledWindow>,
    namespaces: Option<&BTreeMap<String, BTreeMap<String, String>>>,
) -> Reach {
    let versions: Vec<&CompiledWindow> = before.into_iter().chain(after).collect();
    if versions.is_empty() {
        return Reach::Nobody;
    }
    if versions.iter().any(|w| !w.selects_namespaces()) {
        return Reach::Everyone;
    }
    let Some(namespaces) = namespaces else {
        return Reach::Everyone;
    };
    let covered: BTreeSet<String> = namespaces
        .iter()
        .filter(|(_, labels)| versions.iter().any(|w| w.covers_namespace(labels)))
        .map(|(name, _)| name.clone())
        .collect();
    if covered.is_empty() {
        Reach::Nobody
    } else {
        Reach::Namespaces(covered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lifeguard_api::MaintenanceWindow;
    use serde_json::json;

    fn window(namespace_selector: serde_json::Value) -> CompiledWindow {
        let w: MaintenanceWindow = serde_json::from_value(json!({
            "metadata": {"name": "upgrade"},
            "spec": {
                "start": "2030-01-01T02:00:00Z", "end": "2030-01-01T04:00:00Z",
                "drain": true, "notice": "2h",
                "namespaceSelector": namespace_selector,
            }
        }))
        .unwrap();
        CompiledWindow::compile(&w).unwrap()
    }

    fn namespaces() -> BTreeMap<String, BTreeMap<String, String>> {
        [
            ("team-a-dev", "a"),
            ("team-a-ci", "a"),
            ("team-b", "b"),
            ("kube-system", ""),
        ]
        .into_iter()
        .map(|(name, team)| {
            let labels = if team.is_empty() {
                BTreeMap::new()
            } else {
                BTreeMap::from([("team".to_string(), team.to_string())])
            };
            (name.to_string(), labels)
        })
        .collect()
    }

    fn set(names: &[&str]) -> Reach {
        Reach::Namespaces(names.iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn a_change_reaches_the_namespaces_either_version_covers() {
        let team_a = window(json!({"matchLabels": {"team": "a"}}));
        let team_b = window(json!({"matchLabels": {"team": "b"}}));
        let team_c = window(json!({"matchLabels": {"team": "c"}}));
        let all = window(json!({}));
        let known = namespaces();
        let cases: [(
            &str,
            Option<&CompiledWindow>,
            Option<&CompiledWindow>,
            Reach,
        ); 8] = [
            ("neither version gives notice", None, None, Reach::Nobody),
            (
                "created for team a",
                None,
                Some(&team_a),
                set(&["team-a-ci", "team-a-dev"]),
            ),
            (
                "edited, still team a",
                Some(&team_a),
                Some(&team_a),
                set(&["team-a-ci", "team-a-dev"]),
            ),
            (
                "moved from team a to team b: both hear",
                Some(&team_a),
                Some(&team_b),
                set(&["team-a-ci", "team-a-dev", "team-b"]),
            ),
            (
                "deleted or silenced: its namespaces hear",
                Some(&team_b),
                None,
                set(&["team-b"]),
            ),
            (
                "covers no namespace that exists",
                None,
                Some(&team_c),
                Reach::Nobody,
            ),
            ("selects every namespace", None, Some(&all), Reach::Everyone),
            (
                "narrowed from every namespace",
                Some(&all),
                Some(&team_a),
                Reach::Everyone,
            ),
        ];
        for (what, before, after, want) in cases {
            assert_eq!(of_change(before, after, Some(&known)), want, "{what}");
        }
    }

    #[test]
    fn without_the_namespace_cache_a_narrowed_change_reaches_everyone() {
        let team_a = window(json!({"matchLabels": {"team": "a"}}));
        assert_eq!(of_change(None, Some(&team_a), None), Reach::Everyone);
        assert_eq!(of_change(None, None, None), Reach::Nobody);
    }
}
