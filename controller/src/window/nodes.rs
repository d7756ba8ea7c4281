//! A node-scoped window's per-node view, pure: which nodes it selects, how many covered
//! workspaces are left on each, and the label and annotation each Node should carry so an
//! upgrade tool can wait for `lifeguard.dev/drained=true`.

use std::collections::BTreeMap;

use lifeguard_api::maintenance::NodeDrainStatus;
use lifeguard_api::names::{NODE_DRAINED_LABEL, NODE_WINDOW_ANNOTATION};
use lifeguard_api::window::CompiledWindow;

/// What the controller read of a Node: its name, labels and annotations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeMeta {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

/// Covered workspaces not yet done, per selected node.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct NodeTally {
    left: BTreeMap<String, u32>,
}

impl NodeTally {
    /// A tally with a zero for every node `window` selects among `nodes`.
    pub fn for_nodes(window: &CompiledWindow, nodes: &[NodeMeta]) -> Self {
        Self {
            left: nodes
                .iter()
                .filter(|n| window.selects_node(&n.labels))
                .map(|n| (n.name.clone(), 0))
                .collect(),
        }
    }

    pub fn selects(&self, node: &str) -> bool {
        self.left.contains_key(node)
    }

    /// Counts a covered, not yet stopped workspace whose pod is on `node`.
    pub fn count(&mut self, node: &str) {
        if let Some(left) = self.left.get_mut(node) {
            *left += 1;
        }
    }

    /// The per-node list of the window's status.
    pub fn status(&self) -> Vec<NodeDrainStatus> {
        self.left
            .iter()
            .map(|(node, left)| NodeDrainStatus {
                node: node.clone(),
                workspaces_left: *left,
                drained: *left == 0,
            })
            .collect()
    }
}

/// A change to one Node's lifeguard label and annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeChange {
    /// Set `lifeguard.dev/drained` to this value and the window annotation to the window.
    Mark { node: String, drained: bool },
    /// Remove both: the window no longer selects the node, or is over.
    Clear { node: String },
}

/// The changes that bring `nodes` to what window `name` says: with `tally` (the window is
/// active and node-scoped), every selected node is marked; a node this window marked
/// before but no longer selects, or every such node once the window is over (`None`), is
/// cleared. A node another window marked is left to that window: the first one wins, so
/// two windows never flip one node's label.
pub fn node_changes(name: &str, tally: Option<&NodeTally>, nodes: &[NodeMeta]) -> Vec<NodeChange> {
    let mut changes = Vec::new();
    for node in nodes {
        let owner = node.annotations.get(NODE_WINDOW_ANNOTATION);
        let ours = owner.is_some_and(|o| o == name);
        let theirs = owner.is_some() && !ours;
        let left = tally.and_then(|t| t.left.get(&node.name));
        match left {
            Some(_) if theirs => {}
            Some(left) => {
                let drained = *left == 0;
                let want = if drained { "true" } else { "false" };
                if !ours || node.labels.get(NODE_DRAINED_LABEL).map(String::as_str) != Some(want) {
                    changes.push(NodeChange::Mark {
                        node: node.name.clone(),
                        drained,
                    });
                }
            }
            None if ours => changes.push(NodeChange::Clear {
                node: node.name.clone(),
            }),
            None => {}
        }
    }
    changes
}

/// Of `windows`, those that apply to a workspace whose pod is on a node with `node_labels`
/// (`None`: no pod, or a node not seen): a node-scoped window applies only on the nodes it
/// selects, so its notice goes only to the workspaces its drain will stop.
pub fn for_node(
    windows: Vec<CompiledWindow>,
    node_labels: Option<&BTreeMap<String, String>>,
) -> Vec<CompiledWindow> {
    windows
        .into_iter()
        .filter(|w| !w.node_scoped() || node_labels.is_some_and(|l| w.selects_node(l)))
        .collect()
}

/// For the sweep: nodes marked by a window that no longer exists.
pub fn orphaned(
    nodes: &[NodeMeta],
    window_exists: impl Fn(&str) -> bool,
) -> impl Iterator<Item = &NodeMeta> {
    nodes.iter().filter(move |n| {
        n.annotations
            .get(NODE_WINDOW_ANNOTATION)
            .is_some_and(|w| !window_exists(w))
            || (n.labels.contains_key(NODE_DRAINED_LABEL)
                && !n.annotations.contains_key(NODE_WINDOW_ANNOTATION))
    })
}

#[cfg(test)]
#[path = "nodes_tests.rs"]
mod nodes_tests;
