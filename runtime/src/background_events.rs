//! Events published beside the work they report, not in its way.
//!
//! An Event reports a decision that is already made and written (`events::record` logs a
//! failure and returns nothing), so a reconcile has no reason to wait for the API server's
//! answer. At a mass start the controller's create reconcile was four calls in a row (read
//! the Workspace, create the pod, write the status, publish `PodCreated`); publishing in the
//! background leaves three, and frees the reconcile's slot one round trip sooner.
//!
//! What stays bounded: at most `in_flight` Events are being published at once. A caller
//! that finds every slot taken waits for one, so a flood of Events slows the reconciles
//! down instead of piling up tasks and memory. `flush` lets a stopping process publish
//! what it has started before it exits.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{EventType, Reporter};
use tokio::sync::Semaphore;

use crate::events;

/// Publishes Events on tasks of their own, at most `in_flight` at once.
#[derive(Clone)]
pub struct BackgroundEvents {
    client: kube::Client,
    reporter: Reporter,
    slots: Arc<Semaphore>,
    in_flight: u32,
}

impl BackgroundEvents {
    /// `in_flight` is at least 1.
    pub fn new(client: kube::Client, reporter: Reporter, in_flight: u32) -> Self {
        let in_flight = in_flight.max(1);
        Self {
            client,
            reporter,
            slots: Arc::new(Semaphore::new(in_flight as usize)),
            in_flight,
        }
    }

    /// Starts publishing the Event and returns; waits only while `in_flight` Events are
    /// still being published.
    pub async fn record(
        &self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        // Built now, so the Event carries the time of the decision, not of its publishing.
        let body = events::recorded(
            &self.reporter,
            regarding,
            type_,
            reason,
            note,
            jiff::Timestamp::now(),
        );
        // The semaphore is never closed, so this only fails if that changes: publish in
        // line then rather than lose the Event.
        let Ok(slot) = self.slots.clone().acquire_owned().await else {
            events::send(&self.client, &body).await;
            return;
        };
        let client = self.client.clone();
        tokio::spawn(async move {
            events::send(&client, &body).await;
            drop(slot);
        });
    }

    /// Waits until every Event started is published (or has failed), for at most `within`.
    /// Returns whether they all were.
    pub async fn flush(&self, within: Duration) -> bool {
        tokio::time::timeout(within, self.slots.acquire_many(self.in_flight))
            .await
            .is_ok_and(|all| all.is_ok())
    }
}

#[cfg(test)]
#[path = "background_events_tests.rs"]
mod tests;
