//! When to try a document again, and whether to. Pure: the answer (or the failure), the
//! count of failures in a row and the document's age in; the decision out.

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The wait after the first failure; it doubles with each further failure in a row.
    pub first: Duration,
    /// The longest wait (`--notify-backoff-max`).
    pub max: Duration,
    /// A document not delivered this long after it was queued is dropped
    /// (`--notify-give-up-after`): a notice hours late misleads more than it helps.
    pub give_up_after: Duration,
}

/// What an attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Delivered,
    /// Worth another try: the receiver is away, overloaded or failed (5xx, 408, 429,
    /// transport errors, no answer in time). The label is the failure metric's `reason`.
    Retry(&'static str),
    /// The receiver refused the document itself (another 4xx, or a redirect, which is not
    /// followed): sending it again would be refused again, and would hold up the queue.
    Reject(&'static str),
}

/// The verdict of an HTTP answer.
pub fn verdict(status: u16) -> Verdict {
    match status {
        200..=299 => Verdict::Delivered,
        408 | 425 | 429 => Verdict::Retry("http_busy"),
        500..=599 => Verdict::Retry("http_5xx"),
        300..=399 => Verdict::Reject("http_redirect"),
        _ => Verdict::Reject("http_4xx"),
    }
}

impl Policy {
    /// The wait before the next attempt after `failures` (at least 1) in a row. `jitter`
    /// in [0, 1) spreads it over its upper half, so that many controllers sharing one
    /// receiver do not come back in step; a receiver's `Retry-After` is honoured up to
    /// `max`.
    pub fn delay(&self, failures: u32, retry_after: Option<Duration>, jitter: f64) -> Duration {
        let exp = failures.saturating_sub(1).min(30);
        let backoff = self.first.saturating_mul(1 << exp).min(self.max);
        let spread = backoff.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0));
        match retry_after {
            Some(asked) => asked.min(self.max).max(spread),
            None => spread,
        }
    }

    /// Whether a document queued `age` ago is given up on instead of tried (again).
    pub fn expired(&self, age: Duration) -> bool {
        age >= self.give_up_after
    }
}

/// `Retry-After` in seconds (the HTTP-date form is not used by webhook receivers in
/// practice, and is ignored).
pub fn retry_after(value: Option<&str>) -> Option<Duration> {
    value?.trim().parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: Policy = Policy {
        first: Duration::from_secs(1),
        max: Duration::from_secs(60),
        give_up_after: Duration::from_secs(1800),
    };

    #[test]
    fn answers_are_delivered_retried_or_rejected() {
        let cases = [
            (200, Verdict::Delivered),
            (202, Verdict::Delivered),
            (204, Verdict::Delivered),
            (301, Verdict::Reject("http_redirect")),
            (400, Verdict::Reject("http_4xx")),
            (401, Verdict::Reject("http_4xx")),
            (404, Verdict::Reject("http_4xx")),
            (408, Verdict::Retry("http_busy")),
            (429, Verdict::Retry("http_busy")),
            (500, Verdict::Retry("http_5xx")),
            (503, Verdict::Retry("http_5xx")),
        ];
        for (status, want) in cases {
            assert_eq!(verdict(status), want, "HTTP {status}");
        }
    }

    #[test]
    fn the_wait_doubles_up_to_its_cap_within_its_jitter_and_honours_retry_after() {
        let s = Duration::from_secs;
        // (failures in a row, Retry-After, jitter, want)
        let cases = [
            (1, None, 0.999_999, s(1)),
            (1, None, 0.0, Duration::from_millis(500)),
            (2, None, 0.999_999, s(2)),
            (3, None, 0.999_999, s(4)),
            (7, None, 0.999_999, s(60)),
            (7, None, 0.0, s(30)),
            (1000, None, 0.0, s(30)),
            (1, Some(s(10)), 0.0, s(10)),
            (1, Some(s(3600)), 0.0, s(60)),
            (7, Some(s(1)), 0.0, s(30)),
        ];
        for (failures, asked, jitter, want) in cases {
            let got = POLICY.delay(failures, asked, jitter);
            let close = got.abs_diff(want) < Duration::from_millis(1);
            assert!(
                close,
                "{failures} failures, {asked:?}: {got:?}, want {want:?}"
            );
        }
    }

    #[test]
    fn documents_expire_at_their_age_limit_and_retry_after_is_read_in_seconds() {
        assert!(!POLICY.expired(Duration::from_secs(1799)));
        assert!(POLICY.expired(Duration::from_secs(1800)));
        assert_eq!(retry_after(Some(" 7 ")), Some(Duration::from_secs(7)));
        assert_eq!(retry_after(Some("Wed, 21 Oct 2026 07:28:00 GMT")), None);
        assert_eq!(retry_after(None), None);
    }
}
