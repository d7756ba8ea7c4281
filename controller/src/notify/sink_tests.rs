//! The delivery task against a real local HTTP listener: retries after a 500, drops what a
//! 400 refuses and goes on, gives up on what is too old, and the queue drops when full.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;
use crate::notify::document::{Kind, VERSION, WindowRef};
use crate::notify::settings::Target;

type Seen = Arc<Mutex<Vec<(u16, Value)>>>;

/// Answers each request with the next status of `script` (then 200), recording the body.
async fn receiver(script: Vec<u16>) -> (u16, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen: Seen = Arc::default();
    let record = seen.clone();
    tokio::spawn(async move {
        let mut script = script.into_iter();
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut raw = Vec::new();
            let mut buf = [0u8; 4096];
            let body = loop {
                let n = stream.read(&mut buf).await.unwrap_or(0);
                if n == 0 {
                    break None;
                }
                raw.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&raw).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if raw.len() >= end + 4 + length {
                        break serde_json::from_slice::<Value>(&raw[end + 4..end + 4 + length])
                            .ok();
                    }
                }
            };
            let status = script.next().unwrap_or(200);
            if let Some(body) = body {
                record.lock().expect("lock").push((status, body));
            }
            let answer =
                format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    (port, seen)
}

fn doc(n: u32) -> Notification {
    Notification {
        version: VERSION,
        kind: Kind::WindowStart,
        id: format!("doc-{n}"),
        time: "2026-12-01T22:00:00Z".into(),
        cluster: None,
        window: Some(WindowRef {
            name: "upgrade".into(),
            start: "2026-12-01T22:00:00Z".into(),
            end: "2026-12-01T23:00:00Z".into(),
        }),
        workspace: None,
        eviction: None,
        message: None,
        summary: "s".into(),
    }
}

fn settings(port: u16, queue: usize, give_up_after: Duration) -> Settings {
    Settings {
        target: Target {
            https: false,
            host: "127.0.0.1".into(),
            port,
            path_and_query: "/hook".into(),
        },
        format: Format::Json,
        token_file: None,
        timeout: Duration::from_secs(2),
        queue,
        policy: Policy {
            first: Duration::from_millis(20),
            max: Duration::from_millis(50),
            give_up_after,
        },
        cluster: Some("eu-1".into()),
    }
}

fn metrics() -> NotifyMetrics {
    NotifyMetrics::register(&prometheus::Registry::new()).expect("metrics")
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_500_is_retried_a_400_is_dropped_and_the_queue_goes_on_in_order() {
    let (port, seen) = receiver(vec![500, 503, 200, 400, 200]).await;
    let m = metrics();
    let (notifier, task) = start(
        &settings(port, 10, Duration::from_secs(60)),
        m.clone(),
        None,
    )
    .expect("start");
    for n in 1..=3 {
        notifier.send(doc(n));
    }
    // The receiver records a request before it answers, so the sender's count of the
    // second 200 comes a moment after it: wait for that too.
    until("two answers of 200 counted, one 400 dropped", || {
        seen.lock()
            .expect("lock")
            .iter()
            .filter(|(s, _)| *s == 200)
            .count()
            == 2
            && m.dropped.with_label_values(&["rejected"]).get() == 1
            && m.sent.with_label_values(&["windowStart"]).get() == 2
    })
    .await;
    let got: Vec<(u16, String)> = seen
        .lock()
        .expect("lock")
        .iter()
        .map(|(s, v)| (*s, v["id"].as_str().unwrap_or_default().to_string()))
        .collect();
    let want = [
        (500, "doc-1"),
        (503, "doc-1"),
        (200, "doc-1"),
        (400, "doc-2"),
        (200, "doc-3"),
    ];
    let want: Vec<(u16, String)> = want.iter().map(|(s, i)| (*s, i.to_string())).collect();
    assert_eq!(got, want);
    assert_eq!(seen.lock().expect("lock")[0].1["cluster"], "eu-1");
    assert_eq!(m.sent.with_label_values(&["windowStart"]).get(), 2);
    assert_eq!(m.failures.with_label_values(&["http_5xx"]).get(), 2);
    assert_eq!(m.failures.with_label_values(&["http_4xx"]).get(), 1);
    until("the queue is empty", || m.queue_depth.get() == 0).await;
    drop(notifier);
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the task ends with its notifiers")
        .expect("no panic");
}

#[tokio::test]
async fn an_absent_receiver_fills_the_queue_and_old_documents_expire() {
    // A port nobody listens on: bound, then released.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let m = metrics();
    let (notifier, _task) = start(
        &settings(port, 2, Duration::from_millis(300)),
        m.clone(),
        None,
    )
    .expect("start");
    for n in 1..=5 {
        notifier.send(doc(n));
    }
    // The first is taken by the task at once, two wait; the other two find the queue full.
    assert!(m.dropped.with_label_values(&["queue_full"]).get() >= 2);
    until("every queued one expired", || {
        m.dropped.with_label_values(&["expired"]).get()
            + m.dropped.with_label_values(&["queue_full"]).get()
            == 5
    })
    .await;
    assert!(m.failures.with_label_values(&["connect"]).get() >= 1);
    assert_eq!(m.queue_depth.get(), 0);
    assert_eq!(m.sent.with_label_values(&["windowStart"]).get(), 0);
}

#[test]
fn the_alertmanager_format_posts_the_alert_array() {
    let body = encode(Format::Alertmanager, &doc(1)).expect("encode");
    let value: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(value[0]["labels"]["alertname"], alertmanager::WINDOW_ACTIVE);
    let body = encode(Format::Json, &doc(1)).expect("encode");
    let value: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(value["kind"], "windowStart");
}
