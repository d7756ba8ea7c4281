//! The survey from the watch: the same answer a list gives, marks noted until the watch
//! shows them, and nothing served before the first full list.

use std::collections::BTreeMap;

use jiff::Timestamp;
use kube::runtime::watcher::Event;
use lifeguard_api::Workspace;
use lifeguard_api::names::{
    DRAINED_BY_ANNOTATION, DRAINED_UNTIL_ANNOTATION, NODE_DRAINED_LABEL, NODE_WINDOW_ANNOTATION,
    POSTPONE_DRAIN_ANNOTATION, RESUME_ANNOTATION,
};
use serde_json::{Value, json};

use super::super::nodes::{NodeMeta, NodeTally};
use super::super::plan::plan_budget_tests::window;
use super::super::plan::{Drain, Survey};
use super::super::resume::ResumePlan;
use super::*;
use crate::watched_workspace::WatchedWorkspace;
use lifeguard_api::window::CompiledWindow;

/// A workspace `namespace`/`name` with these labels, annotations and status.
fn ws(namespace: &str, name: &str, labels: Value, annotations: Value, status: Value) -> Workspace {
    serde_json::from_value(json!({
        "metadata": {
            "name": name, "namespace": namespace, "labels": labels, "annotations": annotations,
            "uid": format!("uid-{name}"), "resourceVersion": "42",
            "managedFields": [{"manager": "kubectl", "operation": "Update"}],
        },
        "spec": {"podTemplate": {"spec": {"containers": [{"name": "ide", "image": "ide:1"}]}}},
        "status": status,
    }))
    .expect("workspace literal")
}

fn running(name: &str) -> Workspace {
    ws(
        "dev",
        name,
        json!({}),
        json!({}),
        json!({"phase": "Running", "nodeName": "node-1"}),
    )
}

/// Every shape a drain tells apart, in namespaces `dev` (labelled team=a) and `ops`.
fn fleet() -> Vec<Workspace> {
    let now = "2026-12-01T22:10:00Z";
    let notice = json!({"window": "upgrade", "start": now, "end": now, "message": "hi"});
    // (namespace, name, labels, annotations, status)
    #[rustfmt::skip]
    let shapes = [
        ("dev", "in-flight", json!({"team": "a"}),
         json!({DRAINED_BY_ANNOTATION: "upgrade", DRAINED_UNTIL_ANNOTATION: "2026-12-01T23:00:00Z"}),
         json!({"phase": "Stopping", "nodeName": "node-2"})),
        ("dev", "drained", json!({}), json!({DRAINED_BY_ANNOTATION: "upgrade"}), json!({"phase": "Stopped"})),
        ("dev", "by-another", json!({}), json!({DRAINED_BY_ANNOTATION: "other"}), json!({"phase": "Stopping"})),
        ("dev", "postponed", json!({}), json!({POSTPONE_DRAIN_ANNOTATION: "20m"}), json!({"phase": "Running"})),
        ("dev", "failed", json!({}), json!({}), json!({"phase": "Failed"})),
        ("dev", "never-started", json!({}), json!({}), json!({})),
        ("ops", "noticed", json!({"tier": "gold"}), json!({RESUME_ANNOTATION: "x"}),
         json!({"phase": "Running", "resumed": "y", "maintenanceNotice": notice})),
    ];
    let mut fleet = vec![running("to-stop")];
    for (namespace, name, labels, annotations, status) in shapes {
        fleet.push(ws(namespace, name, labels, annotations, status));
    }
    let mut deleting = running("deleting");
    deleting.metadata.deletion_timestamp = Some(Time(now.parse().expect("instant")));
    fleet.push(deleting);
    fleet
}

/// Nodes `node-1` and `node-2`; `drained` is the label this window left on node-2.
fn nodes(drained: Option<&str>) -> Vec<NodeMeta> {
    ["node-1", "node-2"]
        .iter()
        .map(|n| {
            let mut labels =
                BTreeMap::from([("kubernetes.io/hostname".to_string(), n.to_string())]);
            let mut annotations = BTreeMap::new();
            if let (Some(value), true) = (drained, *n == "node-2") {
                labels.insert(NODE_DRAINED_LABEL.to_string(), value.to_string());
                annotations.insert(NODE_WINDOW_ANNOTATION.to_string(), "upgrade".to_string());
            }
            NodeMeta {
                name: n.to_string(),
                labels,
                annotations,
            }
        })
        .collect()
}

fn node_2() -> Value {
    json!({"nodeSelector": {"matchLabels": {"kubernetes.io/hostname": "node-2"}}})
}

/// The survey of `window` from `pages`, with the drain's and the notice's counts, and the
/// per-node tally of a node-scoped window.
fn survey_of(
    window: &CompiledWindow,
    pages: impl FnOnce(&mut dyn FnMut(&[Workspace])) -> bool,
) -> Option<Survey> {
    let start: Timestamp = "2026-12-01T22:00:00Z".parse().expect("instant");
    let now: Timestamp = "2026-12-01T22:10:00Z".parse().expect("instant");
    let mut survey = Survey {
        drain: Some(Drain::at(start, now)),
        notified: Some(0),
        nodes: window
            .node_scoped()
            .then(|| NodeTally::for_nodes(window, &nodes(None))),
        resume: None,
    };
    let namespaces = BTreeMap::from([(
        "dev".to_string(),
        BTreeMap::from([("team".to_string(), "a".to_string())]),
    )]);
    let listed = pages(&mut |page| survey.add(window, page, &namespaces));
    if let Some(drain) = survey.drain.as_mut() {
        drain.to_stop.sort();
        drain.postponed_first.sort();
    }
    listed.then_some(survey)
}

fn listed(index: &SurveyIndex) -> SurveyIndex {
    index.apply(&Event::Init);
    for ws in fleet() {
        index.apply(&Event::InitApply(ws.into()));
    }
    index.apply(&Event::InitDone);
    index.clone()
}

#[test]
fn the_watch_surveys_what_a_list_of_the_same_workspaces_does() {
    // (what, window)
    let cases = [
        ("every namespace", window(json!({}))),
        (
            "a namespace selector",
            window(json!({"namespaceSelector": {"matchLabels": {"team": "a"}}})),
        ),
        (
            "a workspace selector",
            window(json!({"workspaceSelector": {"matchLabels": {"tier": "gold"}}})),
        ),
        (
            "postponement allowed",
            window(json!({"maxPostpone": "30m"})),
        ),
        ("node-scoped", window(node_2())),
    ];
    let mut told_apart = 0;
    for (what, window) in cases {
        let from_list = survey_of(&window, |fold| {
            fleet().chunks(3).for_each(fold);
            true
        });
        let index = listed(&SurveyIndex::default());
        let from_watch = survey_of(&window, |fold| index.fold_pages(3, fold));
        let (Some(from_list), Some(from_watch)) = (from_list, from_watch) else {
            panic!("{what}: both surveyed");
        };
        assert_eq!(from_watch.drain, from_list.drain, "{what}: the drain");
        assert_eq!(from_watch.notified, from_list.notified, "{what}: notified");
        assert_eq!(from_watch.nodes, from_list.nodes, "{what}: per node");
        if let Some(d) = from_list.drain {
            told_apart += usize::from(d.postponed > 0) + usize::from(d.in_flight > 0);
        }
    }
    assert!(
        told_apart >= 2,
        "the fleet postpones one and has one in flight"
    );
}

#[test]
fn the_facts_keep_everything_a_survey_reads() {
    for ws in fleet() {
        let facts = SurveyFacts::of(&ws.clone().into());
        let rebuilt = facts.workspace("dev", "x");
        assert_eq!(
            SurveyFacts::of(&rebuilt.clone().into()),
            facts,
            "{:?}",
            ws.metadata.name
        );
        assert_eq!(
            rebuilt.labels(),
            ws.labels(),
            "{:?}: labels",
            ws.metadata.name
        );
        assert!(
            rebuilt.spec.pod_template.spec.is_none() && rebuilt.metadata.managed_fields.is_none(),
            "what the survey does not read is not kept"
        );
    }
}

fn drain_of(index: &SurveyIndex) -> Drain {
    let window = window(json!({}));
    let survey = survey_of(&window, |fold| index.fold_pages(200, fold)).expect("listed");
    survey.drain.expect("draining")
}

#[test]
fn a_mark_counts_in_flight_until_the_watch_shows_it() {
    let index = SurveyIndex::default();
    index.apply(&Event::Init);
    index.apply(&Event::InitApply(running("a").into()));
    index.apply(&Event::InitDone);
    let before = drain_of(&index);
    assert_eq!((before.to_stop.len(), before.in_flight), (1, 0), "unmarked");

    index.note_marked("dev", "a", "upgrade");
    let d = drain_of(&index);
    assert_eq!((d.to_stop.len(), d.in_flight), (0, 1), "noted at once");

    // An event from before the mark, still on its way when the mark was written.
    index.apply(&Event::Apply(running("a").into()));
    let d = drain_of(&index);
    assert_eq!(
        (d.to_stop.len(), d.in_flight),
        (0, 1),
        "an older event keeps it"
    );

    let marked = ws(
        "dev",
        "a",
        json!({}),
        json!({DRAINED_BY_ANNOTATION: "upgrade"}),
        json!({"phase": "Stopping"}),
    );
    index.apply(&Event::Apply(marked.into()));
    assert_eq!(drain_of(&index).in_flight, 1, "the watch shows it");

    // The mark taken off later (a resume): the note went when the watch showed the mark.
    index.apply(&Event::Apply(running("a").into()));
    let d = drain_of(&index);
    assert_eq!((d.to_stop.len(), d.in_flight), (1, 0), "the note is gone");

    index.note_marked("dev", "unknown", "upgrade");
    assert_eq!(drain_of(&index).remaining, 1, "a mark adds no workspace");
    index.apply(&Event::Delete(running("a").into()));
    assert_eq!(drain_of(&index).remaining, 0, "deleted");
}

/// Workspace `dev`/`name`, drained by `upgrade`, in `phase`.
fn drained(name: &str, phase: &str) -> WatchedWorkspace {
    ws(
        "dev",
        name,
        json!({}),
        json!({DRAINED_BY_ANNOTATION: "upgrade"}),
        json!({"phase": phase}),
    )
    .into()
}

#[test]
fn a_stops_end_counts_at_once_and_until_the_watch_shows_it() {
    use lifeguard_api::WorkspacePhase::{Failed, Running, Stopped};
    let index = SurveyIndex::default();
    index.apply(&Event::Init);
    index.apply(&Event::InitApply(drained("a", "Stopping")));
    index.apply(&Event::InitApply(drained("b", "Stopping")));
    index.apply(&Event::InitDone);
    let d = drain_of(&index);
    assert_eq!((d.in_flight, d.drained), (2, 0), "both stopping");

    index.note_stop_ended("dev", "a", Stopped);
    let d = drain_of(&index);
    assert_eq!((d.in_flight, d.drained), (1, 1), "noted at once");

    // An event from before the write, still on its way when the stop was recorded.
    index.apply(&Event::Apply(drained("a", "Stopping")));
    let d = drain_of(&index);
    assert_eq!((d.in_flight, d.drained), (1, 1), "an older event keeps it");

    index.apply(&Event::Apply(drained("a", "Stopped")));
    assert_eq!(drain_of(&index).drained, 1, "the watch shows it");
    // Started again later (a resume): the note went when the watch showed the stop.
    index.apply(&Event::Apply(drained("a", "Pending")));
    let d = drain_of(&index);
    assert_eq!((d.in_flight, d.drained), (2, 0), "the note is gone");

    index.note_stop_ended("dev", "b", Running);
    assert_eq!(drain_of(&index).in_flight, 2, "only an end is noted");
    index.note_stop_ended("dev", "b", Failed);
    assert_eq!(drain_of(&index).drained, 1, "failed ends a stop too");
    index.note_stop_ended("dev", "unknown", Stopped);
    assert_eq!(drain_of(&index).remaining, 1, "a note adds no workspace");
}

#[test]
fn nothing_is_served_before_the_first_full_list_and_a_relist_replaces_the_index() {
    let index = SurveyIndex::default();
    assert!(!index.fold_pages(200, |_| {}), "no list yet");
    index.note_marked("dev", "a", "upgrade");
    index.apply(&Event::Apply(running("early").into()));
    index.apply(&Event::Init);
    index.apply(&Event::InitApply(running("a").into()));
    assert!(
        !index.fold_pages(200, |_| {}),
        "the first list is not complete"
    );
    index.apply(&Event::InitDone);
    assert_eq!(drain_of(&index).remaining, 1, "what the list showed");

    // A re-list: the old index serves until the new one is complete.
    index.apply(&Event::Init);
    index.apply(&Event::InitApply(running("b").into()));
    index.apply(&Event::InitApply(running("c").into()));
    assert_eq!(drain_of(&index).to_stop, vec![("dev".into(), "a".into())]);
    index.apply(&Event::InitDone);
    let names: Vec<String> = drain_of(&index).to_stop.into_iter().map(|k| k.1).collect();
    assert_eq!(names, ["b", "c"], "a is gone with the re-list");
}

#[test]
fn pages_hold_at_most_the_page_size() {
    let index = listed(&SurveyIndex::default());
    let mut sizes = Vec::new();
    assert!(index.fold_pages(4, |page| sizes.push(page.len())));
    sizes.sort_unstable();
    assert_eq!(sizes, [1, 4, 4], "9 workspaces, 4 a page");
}

#[test]
fn what_the_watch_serves_and_what_a_list_confirms() {
    let now: Timestamp = "2026-12-01T22:10:00Z".parse().expect("instant");
    let drain = |remaining: u32, to_stop: usize| Drain {
        remaining,
        to_stop: vec![("dev".into(), "w".into()); to_stop],
        ..Drain::default()
    };
    let tally = |left_on_node_2: u32| {
        let mut tally = NodeTally::for_nodes(&window(node_2()), &nodes(None));
        (0..left_on_node_2).for_each(|_| tally.count("node-2"));
        tally
    };
    let survey = |drain, nodes, resume| Survey {
        drain,
        notified: Some(0),
        nodes,
        resume,
    };
    // (what, survey, node-2's drained label, want: may use the index, want: must list)
    let cases = [
        (
            "a drain in progress",
            survey(Some(drain(3, 1)), None, None),
            None,
            true,
            false,
        ),
        (
            "a drain that looks done: Drained is confirmed by a list",
            survey(Some(drain(0, 0)), None, None),
            None,
            true,
            true,
        ),
        (
            "only a notice, which counts",
            survey(None, None, None),
            None,
            true,
            false,
        ),
        (
            "a node with workspaces left",
            survey(Some(drain(3, 0)), Some(tally(1)), None),
            Some("false"),
            true,
            false,
        ),
        (
            "a node that looks newly drained: its label is confirmed by a list",
            survey(Some(drain(3, 0)), Some(tally(0)), None),
            Some("false"),
            true,
            true,
        ),
        (
            "a node already labelled drained",
            survey(Some(drain(3, 0)), Some(tally(0)), None),
            Some("true"),
            true,
            false,
        ),
        (
            "a resume asks workspaces to start from what it sees: listed",
            survey(None, None, Some(ResumePlan::at(now))),
            None,
            false,
            false,
        ),
    ];
    for (what, survey, label, may, must_list) in cases {
        assert_eq!(may_use_index(&survey), may, "{what}");
        assert_eq!(
            needs_list(&survey, "upgrade", &nodes(label)),
            must_list,
            "{what}"
        );
    }
}

#[test]
fn names_are_shared_and_forgotten_with_the_last_workspace_that_holds_them() {
    let index = SurveyIndex::default();
    let names = |index: &SurveyIndex| {
        let mut names: Vec<String> = index.read().names.0.iter().map(|n| n.to_string()).collect();
        names.sort();
        names
    };
    let on = |name: &str, node: &str| {
        ws(
            "dev",
            name,
            json!({}),
            json!({}),
            json!({"phase": "Running", "nodeName": node}),
        )
    };
    index.apply(&Event::Init);
    index.apply(&Event::InitApply(on("a", "node-1").into()));
    index.apply(&Event::InitApply(on("b", "node-1").into()));
    index.apply(&Event::InitDone);
    assert_eq!(names(&index), ["dev", "node-1"], "one copy each");
    index.apply(&Event::Apply(on("a", "node-2").into()));
    assert_eq!(names(&index), ["dev", "node-1", "node-2"]);
    index.apply(&Event::Apply(on("b", "node-2").into()));
    assert_eq!(names(&index), ["dev", "node-2"], "node-1 holds nothing now");
    index.apply(&Event::Delete(on("a", "node-2").into()));
    index.apply(&Event::Delete(on("b", "node-2").into()));
    assert!(names(&index).is_empty(), "{:?}", names(&index));
    index.apply(&Event::Init);
    index.apply(&Event::InitApply(on("c", "node-3").into()));
    index.apply(&Event::InitDone);
    assert_eq!(
        names(&index),
        ["dev", "node-3"],
        "a re-list keeps what it holds"
    );
}
