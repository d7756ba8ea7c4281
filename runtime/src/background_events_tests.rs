use std::convert::Infallible;
use std::sync::Mutex;

use futures::FutureExt;
use http::{Request, Response};
use kube::client::Body;

use super::*;

/// An API server that holds every request until the test lets one answer, and keeps the
/// paths it was asked for.
struct HeldServer {
    answers: Arc<Semaphore>,
    paths: Arc<Mutex<Vec<String>>>,
}

impl HeldServer {
    fn start() -> (Self, kube::Client) {
        let answers = Arc::new(Semaphore::new(0));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let (held, seen) = (answers.clone(), paths.clone());
        let service = tower::service_fn(move |request: Request<Body>| {
            let (held, seen) = (held.clone(), seen.clone());
            async move {
                if let Ok(mut paths) = seen.lock() {
                    paths.push(request.uri().path().to_owned());
                }
                if let Ok(answer) = held.acquire().await {
                    answer.forget();
                }
                Ok::<_, Infallible>(Response::new(Body::from(b"{}".to_vec())))
            }
        });
        let client = kube::Client::new(service, "default");
        (Self { answers, paths }, client)
    }

    fn paths(&self) -> Vec<String> {
        self.paths.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// Waits until `n` requests have arrived (tasks need a turn to send them).
    async fn until_asked(&self, n: usize) {
        let arrived = async {
            while self.paths().len() < n {
                tokio::task::yield_now().await;
            }
        };
        let waited = tokio::time::timeout(Duration::from_secs(30), arrived).await;
        assert!(
            waited.is_ok(),
            "{n} requests never arrived: {:?}",
            self.paths()
        );
    }
}

fn publisher(client: kube::Client, in_flight: u32) -> BackgroundEvents {
    let reporter = Reporter {
        controller: "lifeguard-controller".into(),
        instance: Some("replica-1".into()),
    };
    BackgroundEvents::new(client, reporter, in_flight)
}

fn workspace(name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("lifeguard.dev/v1alpha1".into()),
        kind: Some("Workspace".into()),
        name: Some(name.into()),
        namespace: Some("team-a".into()),
        ..ObjectReference::default()
    }
}

async fn send(events: &BackgroundEvents, name: &str) {
    events
        .record(
            &workspace(name),
            EventType::Normal,
            "PodCreated",
            "created".into(),
        )
        .await;
}

#[tokio::test]
async fn a_caller_does_not_wait_for_the_api_servers_answer() {
    let (server, client) = HeldServer::start();
    let events = publisher(client, 4);
    // Every answer is held, yet recording returns at once.
    for name in ["ws-1", "ws-2"] {
        assert!(send(&events, name).now_or_never().is_some());
    }
    server.until_asked(2).await;
    assert_eq!(
        server.paths(),
        vec!["/apis/events.k8s.io/v1/namespaces/team-a/events"; 2],
        "each Event goes to its workspace's namespace"
    );
    server.answers.add_permits(2);
    assert!(events.flush(Duration::from_secs(30)).await);
}

#[tokio::test]
async fn a_caller_waits_once_every_slot_is_taken_and_goes_on_when_one_frees() {
    let (server, client) = HeldServer::start();
    let events = publisher(client, 2);
    send(&events, "ws-1").await;
    send(&events, "ws-2").await;
    server.until_asked(2).await;
    let mut third = Box::pin(send(&events, "ws-3"));
    assert!(
        (&mut third).now_or_never().is_none(),
        "a third Event waits while two are unanswered"
    );
    server.answers.add_permits(1);
    third.await;
    server.until_asked(3).await;
    server.answers.add_permits(2);
    assert!(events.flush(Duration::from_secs(30)).await);
}

#[tokio::test]
async fn flush_reports_events_still_unanswered() {
    let (server, client) = HeldServer::start();
    let events = publisher(client, 3);
    send(&events, "ws-1").await;
    server.until_asked(1).await;
    assert!(!events.flush(Duration::from_millis(50)).await);
    server.answers.add_permits(1);
    assert!(events.flush(Duration::from_secs(30)).await);
}

#[tokio::test]
async fn flush_with_nothing_started_returns_at_once() {
    let (_server, client) = HeldServer::start();
    let events = publisher(client, 0);
    assert!(events.flush(Duration::ZERO).now_or_never() == Some(true));
}
