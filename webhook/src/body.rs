//! Reading admission request bodies under two limits: one body may not exceed
//! `max_body` bytes, and all bodies being read or decided on at once may not hold more than
//! a fixed budget of bytes. Without the budget, a few concurrent multi-megabyte reviews
//! push the process past its memory limit, and with both replicas OOM-killed
//! `failurePolicy: Fail` blocks every workspace.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::flags::Config;

/// At most this much of an oversized or refused body is read and thrown away so the client
/// sees the error answer; past it the stream is reset instead.
const DRAIN_LIMIT: usize = 32 * 1024 * 1024;

/// How long an oversized or refused body is drained before giving up.
const DRAIN_TIME: Duration = Duration::from_secs(5);

pub struct BodyBudget {
    bytes: Arc<Semaphore>,
    total: usize,
    max_body: usize,
    /// How long a request waits for room in the budget before it is refused.
    wait: Duration,
    /// How long the whole body may take to arrive: a client that trickles its body holds
    /// budget meanwhile.
    read_timeout: Duration,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BodyError {
    #[error("request body is larger than the limit of {limit} bytes")]
    TooLarge { limit: usize },
    #[error("the webhook is reading {total} bytes of other requests (its limit); retry shortly")]
    Busy { total: usize },
    #[error("request body did not arrive within {0:?}")]
    TimedOut(Duration),
    #[error("reading the request body failed: {0}")]
    Read(String),
}

/// A body read under the budget; its bytes count against the budget until this is dropped.
#[derive(Debug)]
pub struct HeldBody {
    pub bytes: Bytes,
    _permit: Option<OwnedSemaphorePermit>,
}

/// How long a request waits for room in the budget; well inside the API server's
/// `timeoutSeconds` (5 s in webhooks.yaml), so a busy moment delays instead of failing.
const BUDGET_WAIT: Duration = Duration::from_secs(2);

impl BodyBudget {
    pub fn from_config(config: &Config) -> Self {
        Self::new(
            config.max_bytes_in_flight,
            config.max_body_bytes,
            BUDGET_WAIT,
            config.read_timeout,
        )
    }

    /// `max_body` is capped at `total`: a body that can never fit would wait in vain.
    pub fn new(total: usize, max_body: usize, wait: Duration, read_timeout: Duration) -> Self {
        let total = total.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            bytes: Arc::new(Semaphore::new(total)),
            total,
            max_body: max_body.min(total),
            wait,
            read_timeout,
        }
    }

    pub fn max_body(&self) -> usize {
        self.max_body
    }

    /// Bytes currently held by requests.
    pub fn in_flight(&self) -> usize {
        self.total - self.bytes.available_permits()
    }

    /// Reads `body` under the budget. With a `content_length` (the API server always sends
    /// one) an oversized body is refused before it is read, and the whole length is taken
    /// from the budget at once before reading: requests are then served in arrival order
    /// (the semaphore is fair), where taking it piecemeal would let many large bodies each
    /// hold a part and all wait for the rest. A body without a length takes budget chunk by
    /// chunk as it arrives.
    pub async fn read(
        &self,
        content_length: Option<u64>,
        mut body: Body,
    ) -> Result<HeldBody, BodyError> {
        let too_large = BodyError::TooLarge {
            limit: self.max_body,
        };
        if content_length.is_some_and(|len| len > self.max_body as u64) {
            drain(body).await;
            return Err(too_large);
        }
        let deadline = Instant::now() + self.read_timeout;
        let mut permit: Option<OwnedSemaphorePermit> = None;
        if let Some(length) = content_length {
            // Fits: checked against max_body above.
            if let Err(error) = self.take(&mut permit, length as usize).await {
                drain(body).await;
                return Err(error);
            }
        }
        let mut buffer = Vec::with_capacity(content_length.unwrap_or(0) as usize);
        let mut chunks: Vec<Bytes> = Vec::new();
        let mut received = 0usize;
        loop {
            let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
                Err(_) => return Err(BodyError::TimedOut(self.read_timeout)),
                Ok(None) => break,
                Ok(Some(Err(error))) => return Err(BodyError::Read(error.to_string())),
                Ok(Some(Ok(frame))) => frame,
            };
            let Ok(data) = frame.into_data() else {
                continue; // trailers carry nothing a review needs
            };
            received += data.len();
            if received > self.max_body {
                drop(permit);
                drain(body).await;
                return Err(too_large);
            }
            match content_length {
                // hyper ends the body with an error if it runs past its declared length.
                Some(_) => buffer.extend_from_slice(&data),
                None => {
                    if let Err(error) = self.take(&mut permit, data.len()).await {
                        drop((permit, chunks));
                        drain(body).await;
                        return Err(error);
                    }
                    chunks.push(data);
                }
            }
        }
        let bytes = match (content_length, chunks.len()) {
            (Some(_), _) => Bytes::from(buffer),
            (None, 1) => chunks.remove(0),
            (None, _) => Bytes::from(chunks.concat()),
        };
        Ok(HeldBody {
            bytes,
            _permit: permit,
        })
    }

    /// Adds `n` bytes to `held`, waiting at most `wait` for them to be free.
    async fn take(
        &self,
        held: &mut Option<OwnedSemaphorePermit>,
        n: usize,
    ) -> Result<(), BodyError> {
        if n == 0 {
            return Ok(());
        }
        // n <= max_body <= total <= MAX_PERMITS, which fits u32 for any sane budget.
        let n = u32::try_from(n).map_err(|_| BodyError::TooLarge {
            limit: self.max_body,
        })?;
        let acquire = self.bytes.clone().acquire_many_owned(n);
        let more = match tokio::time::timeout(self.wait, acquire).await {
            Ok(Ok(permit)) => permit,
            // Closed never happens (the semaphore is never closed); treat it as busy.
            Ok(Err(_)) | Err(_) => return Err(BodyError::Busy { total: self.total }),
        };
        match held {
            Some(permit) => permit.merge(more),
            None => *held = Some(more),
        }
        Ok(())
    }
}

/// Reads and discards what is left of a refused body (bounded in bytes and time), so that
/// the client reads the error answer instead of a reset while it is still sending.
pub async fn drain(mut body: Body) {
    let deadline = Instant::now() + DRAIN_TIME;
    let mut drained = 0usize;
    while drained < DRAIN_LIMIT {
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(frame))) => drained += frame.data_ref().map_or(0, Bytes::len),
            _ => return,
        }
    }
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;
