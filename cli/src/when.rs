//! Reading times and durations from flags, and writing them for people. Pure: the current
//! instant and the local time zone are parameters.

use std::str::FromStr;

use jiff::civil::{DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, Zoned};

/// `--for`: a positive duration such as `2h`, `90m` or `1h30m`.
pub fn parse_for(text: &str) -> Result<SignedDuration, String> {
    let d = SignedDuration::from_str(text.trim())
        .map_err(|_| format!("{text:?} is not a duration such as 2h, 90m or 1h30m"))?;
    if d.is_zero() || d.is_negative() {
        return Err(format!("{text:?} must be longer than zero"));
    }
    Ok(d)
}

/// `--until` and `--at`: RFC 3339 (`2026-12-01T22:00:00Z`, `...+01:00`), a zoned time
/// (`2026-12-01T22:00[Europe/Berlin]`), a local date and time (`2026-12-01 22:00`), or a
/// local time of day (`22:00`: the next time the clock shows it). "Local" is `zone`.
pub fn parse_time(text: &str, now: Timestamp, zone: &TimeZone) -> Result<Timestamp, String> {
    let text = text.trim();
    if let Ok(t) = Timestamp::from_str(text) {
        return Ok(t);
    }
    if let Ok(z) = Zoned::from_str(text) {
        return Ok(z.timestamp());
    }
    let wall = |dt: DateTime| {
        // A wall time inside a daylight-saving gap or fold resolves like a clock would:
        // forward past the gap, the earlier of the two in a fold.
        zone.to_ambiguous_timestamp(dt)
            .compatible()
            .map_err(|e| format!("{text:?} does not exist in the local time zone: {e}"))
    };
    if let Ok(dt) = DateTime::from_str(text) {
        return wall(dt);
    }
    if let Ok(time) = Time::from_str(text) {
        let today = now.to_zoned(zone.clone()).date();
        let candidate = wall(today.to_datetime(time))?;
        if candidate > now {
            return Ok(candidate);
        }
        let tomorrow = today
            .tomorrow()
            .map_err(|e| format!("{text:?}: no next day: {e}"))?;
        return wall(tomorrow.to_datetime(time));
    }
    Err(format!(
        "{text:?} is not a time; use RFC 3339 (2026-12-01T22:00:00Z), a local date and time (2026-12-01 22:00) or a time of day (22:00)"
    ))
}

/// Short spans like kubectl's ages: `45s`, `5m30s`, `2h5m`, `3d4h`, `120d`.
pub fn human(d: SignedDuration) -> String {
    let secs = d.as_secs().unsigned_abs();
    let (m, h, day) = (60, 3600, 86_400);
    let pair = |big: u64, big_unit: &str, small: u64, small_unit: &str| {
        if small == 0 {
            format!("{big}{big_unit}")
        } else {
            format!("{big}{big_unit}{small}{small_unit}")
        }
    };
    match secs {
        s if s < 2 * m => format!("{s}s"),
        s if s < 10 * m => pair(s / m, "m", s % m, "s"),
        s if s < h => format!("{}m", s / m),
        s if s < 8 * h => pair(s / h, "h", (s % h) / m, "m"),
        s if s < 2 * day => format!("{}h", s / h),
        s if s < 8 * day => pair(s / day, "d", (s % day) / h, "h"),
        s => format!("{}d", s / day),
    }
}

/// `in 2h` or `5m ago`, from `now`'s point of view.
pub fn relative(t: Timestamp, now: Timestamp) -> String {
    let d = t.duration_since(now);
    if d.is_negative() {
        format!("{} ago", human(d))
    } else {
        format!("in {}", human(d))
    }
}

/// What the API stores: UTC, whole seconds.
pub fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// How a person reads a schedule: the wall clock of its zone, with the zone's abbreviation
/// so that the two 01:30s of a fall-back night differ.
/// Seconds only when there are any: schedules are per minute, one-off windows may not be.
pub fn wall_clock(t: Timestamp, zone: &TimeZone) -> String {
    let zoned = t.to_zoned(zone.clone());
    let format = if zoned.second() == 0 {
        "%Y-%m-%d %H:%M %Z"
    } else {
        "%Y-%m-%d %H:%M:%S %Z"
    };
    zoned.strftime(format).to_string()
}

/// `t` rounded down to the second: windows the tool writes carry no fractions.
pub fn whole_seconds(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

#[cfg(test)]
#[path = "when_tests.rs"]
mod tests;
