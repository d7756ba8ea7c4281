//! The body budget: size limit, shared byte budget, and the time a body may take.

use std::time::Duration;

use axum::body::{Body, Bytes};
use futures::StreamExt;

use super::*;

fn budget(total: usize, max_body: usize) -> BodyBudget {
    BodyBudget::new(
        total,
        max_body,
        Duration::from_millis(200),
        Duration::from_secs(5),
    )
}

/// A body without a length, arriving in the given chunks.
fn chunked(chunks: Vec<&'static [u8]>) -> Body {
    Body::from_stream(futures::stream::iter(
        chunks
            .into_iter()
            .map(|c| Ok::<_, std::io::Error>(Bytes::from_static(c))),
    ))
}

#[tokio::test]
async fn reads_bodies_within_the_limits() {
    let budget = budget(100, 10);
    let cases: Vec<(&str, Option<u64>, Body)> = vec![
        ("with a length", Some(5), Body::from("hello")),
        ("chunked", None, chunked(vec![b"he", b"llo"])),
        ("one chunk", None, chunked(vec![b"hello"])),
    ];
    for (name, length, body) in cases {
        let held = budget.read(length, body).await.expect(name);
        assert_eq!(&held.bytes[..], b"hello", "{name}");
        assert_eq!(budget.in_flight(), 5, "{name}: held while in use");
        drop(held);
        assert_eq!(budget.in_flight(), 0, "{name}: released when dropped");
    }
}

#[tokio::test]
async fn refuses_bodies_over_the_limit() {
    let budget = budget(100, 4);
    let cases: Vec<(&str, Option<u64>, Body)> = vec![
        ("declared too long", Some(5), Body::from("hello")),
        ("chunked past the limit", None, chunked(vec![b"hel", b"lo"])),
    ];
    for (name, length, body) in cases {
        let error = budget.read(length, body).await.expect_err(name);
        assert_eq!(error, BodyError::TooLarge { limit: 4 }, "{name}");
        assert_eq!(budget.in_flight(), 0, "{name}: nothing stays held");
    }
}

#[tokio::test]
async fn a_full_budget_refuses_after_the_wait_and_frees_up_again() {
    let budget = budget(8, 8);
    let first = budget
        .read(Some(6), Body::from("123456"))
        .await
        .expect("fits");
    let error = budget
        .read(Some(4), Body::from("abcd"))
        .await
        .expect_err("no room while the first is held");
    assert_eq!(error, BodyError::Busy { total: 8 });
    assert!(error.to_string().contains("retry"), "{error}");
    drop(first);
    let second = budget
        .read(Some(4), Body::from("abcd"))
        .await
        .expect("room again once the first is answered");
    assert_eq!(&second.bytes[..], b"abcd");
}

#[tokio::test]
async fn a_waiting_request_proceeds_when_room_frees_within_the_wait() {
    let budget = BodyBudget::new(8, 8, Duration::from_secs(5), Duration::from_secs(5));
    let first = budget.read(None, Body::from("123456")).await.expect("fits");
    let mut second = Box::pin(budget.read(None, Body::from("abcd")));
    assert!(
        futures::poll!(second.as_mut()).is_pending(),
        "the second body waits while the first holds the budget"
    );
    drop(first);
    let second = second.await.expect("admitted once room freed");
    assert_eq!(&second.bytes[..], b"abcd");
}

#[tokio::test]
async fn a_body_that_stops_arriving_times_out_and_releases_its_bytes() {
    let budget = BodyBudget::new(100, 100, Duration::from_secs(1), Duration::from_millis(100));
    let stalled = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"abc"))])
        .chain(futures::stream::pending());
    let error = budget
        .read(None, Body::from_stream(stalled))
        .await
        .expect_err("never finishes");
    assert_eq!(error, BodyError::TimedOut(Duration::from_millis(100)));
    assert_eq!(budget.in_flight(), 0);
}

#[test]
fn the_body_limit_never_exceeds_the_budget() {
    let budget = budget(10, 100);
    assert_eq!(
        budget.max_body(),
        10,
        "a body larger than the budget could never be admitted"
    );
}

#[tokio::test]
async fn a_declared_length_is_taken_whole_before_reading() {
    let budget = budget(10, 10);
    let (_sender, receiver) = futures::channel::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
    let mut first = Box::pin(budget.read(Some(6), Body::from_stream(receiver)));
    assert!(
        futures::poll!(first.as_mut()).is_pending(),
        "no byte has arrived"
    );
    assert_eq!(
        budget.in_flight(),
        6,
        "the whole declared length is reserved, so a second large body waits its turn \
         instead of both holding a part"
    );
    let error = budget
        .read(Some(6), Body::from("123456"))
        .await
        .expect_err("no room for a second 6 bytes");
    assert_eq!(error, BodyError::Busy { total: 10 });
    assert_eq!(
        budget.in_flight(),
        6,
        "the refused request returned what it took"
    );
}
