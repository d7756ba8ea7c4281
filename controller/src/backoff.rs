//! How long a workspace waits before replacing a rejected pod: exponential from
//! `--backoff` up to `--backoff-max`, plus a jitter so that pods one node refused together
//! are not all re-created in the same instant. The jitter is derived from the workspace's
//! UID and the attempt number, not drawn at random, so a restarted controller computes the
//! same time (the result is also stored as `status.nextAttemptTime`).

use jiff::SignedDuration;

/// Largest jitter of the first replacement. Kept well under a second: the first
/// replacement must come within `--backoff` + 1 s of the rejection (bench-recreation).
const FIRST_SPREAD_MS: u64 = 500;

/// FNV-1a: stable across Rust versions and platforms, unlike `DefaultHasher`.
fn fnv1a(seed: &str, attempt: u32) -> u64 {
    seed.bytes()
        .chain([0])
        .chain(attempt.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
}

fn millis(d: SignedDuration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(0)
}

/// The wait before replacement number `attempt` (1 for the first) of the workspace
/// identified by `seed`. Attempt n waits base·2^(n-1), capped at `max`, plus a jitter of
/// up to a tenth of that (at most 0.5 s·2^(n-1)); never more than `max`.
pub fn delay(
    base: SignedDuration,
    max: SignedDuration,
    seed: &str,
    attempt: u32,
) -> SignedDuration {
    let (base, max) = (millis(base), millis(max));
    let doublings = attempt.saturating_sub(1).min(32);
    let factor = 1u64 << doublings;
    let exponential = base.saturating_mul(factor).min(max);
    let spread = (exponential / 10).min(FIRST_SPREAD_MS.saturating_mul(factor));
    let jitter = fnv1a(seed, attempt) % (spread + 1);
    let total = exponential.saturating_add(jitter).min(max);
    SignedDuration::from_millis(i64::try_from(total).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(i64) -> SignedDuration = SignedDuration::from_secs;

    #[test]
    fn grows_exponentially_with_bounded_jitter_up_to_the_cap() {
        let ms = SignedDuration::from_millis;
        // (base, max, attempt, lowest, highest)
        let cases = [
            (S(15), S(300), 1, S(15), ms(15_500)),
            (S(15), S(300), 2, S(30), S(31)),
            (S(15), S(300), 3, S(60), S(62)),
            (S(15), S(300), 4, S(120), S(124)),
            (S(15), S(300), 5, S(240), S(248)),
            (S(15), S(300), 6, S(300), S(300)),
            (S(15), S(300), 40, S(300), S(300)),
            (S(3), S(300), 1, S(3), ms(3_300)),
            (S(3), S(300), 2, S(6), ms(6_600)),
            (S(1), S(1), 3, S(1), S(1)),
            (S(0), S(300), 1, S(0), S(0)),
        ];
        for (base, max, attempt, lo, hi) in cases {
            for uid in ["3f0c-a", "91d2-b", "c07e-c", ""] {
                let got = delay(base, max, uid, attempt);
                assert!(
                    lo <= got && got <= hi,
                    "base {base}, max {max}, attempt {attempt}, uid {uid:?}: {got} not in {lo}..={hi}"
                );
            }
        }
    }

    #[test]
    fn first_replacement_stays_within_a_second_of_the_base() {
        for base in [S(1), S(3), S(15), S(60)] {
            for i in 0..2_000 {
                let got = delay(base, S(300), &format!("uid-{i}"), 1);
                assert!(base <= got && got < base + S(1), "{base}: {got}");
            }
        }
    }

    #[test]
    fn jitter_is_deterministic_and_spreads_workspaces() {
        let a = delay(S(15), S(300), "uid-a", 2);
        assert_eq!(a, delay(S(15), S(300), "uid-a", 2), "same state, same wait");
        let distinct: std::collections::BTreeSet<_> = (0..100)
            .map(|i| delay(S(15), S(300), &format!("uid-{i}"), 2))
            .collect();
        assert!(distinct.len() > 50, "{} distinct waits", distinct.len());
        assert_ne!(
            delay(S(15), S(300), "uid-a", 3) - S(60),
            delay(S(15), S(300), "uid-a", 2) - S(30),
            "each attempt draws its own jitter"
        );
    }
}
