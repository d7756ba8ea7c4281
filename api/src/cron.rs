//! The schedule language of Kubernetes CronJob, parsed into the sets of minutes, hours and
//! days it matches. Pure: no clock and no time zone here (`crate::schedule` adds both).
//!
//! CronJob validates `spec.schedule` with robfig/cron v3's `ParseStandard`, and lifeguard
//! follows that grammar so a schedule copied from a CronJob means the same here:
//!
//! * five fields, `minute hour day-of-month month day-of-week`, separated by whitespace,
//!   or one of the macros `@yearly`/`@annually`, `@monthly`, `@weekly`, `@daily`/
//!   `@midnight`, `@hourly`;
//! * each field a comma-separated list of `*`, `?`, `N`, `N-M`, each with an optional
//!   `/STEP`; `N/STEP` means `N-max/STEP`; `?` is `*` in every field;
//! * names (`jan`-`dec`, `sun`-`sat`, any case) in the month and day-of-week fields, also
//!   as range ends and before a step (`MON/2`); day-of-week runs 0-6, Sunday is 0;
//! * the two day fields: when either one holds a `*`/`?` (alone, in a list, or with step 1)
//!   a day must match both; otherwise a day matching either one matches.
//!
//! Where CronJob accepts something that can only be a typo, lifeguard refuses it with a
//! message (an empty list element such as `1,,2`, which CronJob drops; `*-5`, which
//! CronJob reads as `*`; `+6`, which CronJob reads as 6 and croner as an AND modifier). Schedules that depend on a CronJob's last run (`@every 1h`) or
//! carry their own zone (`TZ=...`) are refused with the alternative. One extension is
//! kept, because windows were written with it before: `L` in day-of-month, the last day
//! of the month. [`CronSpec::extensions`] names it wherever lifeguard shows a schedule.

use std::fmt;

use jiff::civil::Date;

/// A parsed schedule: which wall-clock minutes of which days it matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronSpec {
    minutes: u64,
    hours: u32,
    /// Bits 1..=31.
    days_of_month: u32,
    /// `L` in day-of-month (a lifeguard extension).
    last_day_of_month: bool,
    /// Bits 1..=12.
    months: u16,
    /// Bits 0..=6, Sunday = 0.
    days_of_week: u8,
    /// robfig/cron's "star bit": the field holds `*` or `?` without a step above 1.
    day_of_month_star: bool,
    day_of_week_star: bool,
}

/// Syntax lifeguard accepts and Kubernetes CronJob does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extension {
    /// `L` in day-of-month.
    LastDayOfMonth,
}

impl fmt::Display for Extension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LastDayOfMonth => f.write_str("L (last day of the month)"),
        }
    }
}

/// Why a schedule was refused; the text names the field and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronError(pub String);

impl fmt::Display for CronError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CronError {}

fn refuse<T>(message: impl Into<String>) -> Result<T, CronError> {
    Err(CronError(message.into()))
}

#[derive(Clone, Copy)]
struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MONTH_NAMES: &[&str] = &[
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAY_NAMES: &[&str] = &["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

const MINUTE: Field = Field {
    name: "minute",
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Field = Field {
    name: "hour",
    min: 0,
    max: 23,
    names: &[],
};
const DAY_OF_MONTH: Field = Field {
    name: "day-of-month",
    min: 1,
    max: 31,
    names: &[],
};
const MONTH: Field = Field {
    name: "month",
    min: 1,
    max: 12,
    names: MONTH_NAMES,
};
const DAY_OF_WEEK: Field = Field {
    name: "day-of-week",
    min: 0,
    max: 6,
    names: DAY_NAMES,
};

/// One field's matches, as robfig/cron computes them.
#[derive(Debug, Default)]
struct Parsed {
    bits: u64,
    star: bool,
    last: bool,
}

impl Field {
    /// `MONTH_NAMES[0]` is month 1; `DAY_NAMES[0]` is day 0.
    fn value_of_name(&self, text: &str) -> Option<u32> {
        let lower = text.to_ascii_lowercase();
        let index = self.names.iter().position(|n| *n == lower)?;
        u32::try_from(index).ok().map(|i| i + self.min)
    }

    fn number(&self, text: &str, what: &str) -> Result<u32, CronError> {
        if let Some(value) = self.value_of_name(text) {
            return Ok(value);
        }
        if text.starts_with('+') {
            // CronJob's Go parser reads "+6" as 6, while other cron dialects read a
            // leading + in day-of-week as "AND day-of-month": refused, so that neither
            // reading is taken silently.
            return refuse(format!(
                "{}: {text:?}: a leading + is not accepted; write the number alone (day-of-month and day-of-week combine as in Kubernetes CronJob)",
                self.name
            ));
        }
        let digits = text;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            let hint = match (self.names.is_empty(), text) {
                (_, "L") if self.name == "day-of-month" => {
                    " (L, the last day of the month, stands alone in a list element: 0 22 L * *)"
                }
                (_, "L" | "l") => {
                    " (L is lifeguard's last-day-of-month extension, only in day-of-month)"
                }
                (_, t) if t.contains(['W', 'w']) && self.name == "day-of-month" => {
                    " (W, the nearest weekday, is not Kubernetes CronJob syntax)"
                }
                (_, t) if t.ends_with(['L', 'l']) && self.name == "day-of-week" => {
                    " (5L, the last weekday of a month, is not Kubernetes CronJob syntax)"
                }
                (true, _) => "",
                (false, _) if self.name == "month" => " (use 1-12 or jan-dec)",
                (false, _) => " (use 0-6 or sun-sat)",
            };
            return refuse(format!(
                "{}: {what} {text:?} is not a number{hint}",
                self.name
            ));
        }
        // Any value above 99 is out of range; keep the digits from overflowing first.
        let value = digits.parse::<u32>().unwrap_or(u32::MAX);
        Ok(value)
    }

    fn parse(&self, text: &str) -> Result<Parsed, CronError> {
        let mut parsed = Parsed::default();
        if text.contains('#') {
            return refuse(format!(
                "{}: {text:?} uses #, the nth weekday of a month, which is not Kubernetes CronJob syntax",
                self.name
            ));
        }
        for element in text.split(',') {
            if element.is_empty() {
                return refuse(format!("{}: {text:?} has an empty list element", self.name));
            }
            if self.name == "day-of-month" && element.eq_ignore_ascii_case("L") {
                parsed.last = true;
                continue;
            }
            self.element(element, &mut parsed)?;
        }
        Ok(parsed)
    }

    /// `*`, `?`, `N` or `N-M`, with an optional `/STEP`.
    fn element(&self, element: &str, parsed: &mut Parsed) -> Result<(), CronError> {
        let name = self.name;
        let mut parts = element.split('/');
        let range = parts.next().unwrap_or_default();
        let step = parts.next();
        if parts.next().is_some() {
            return refuse(format!("{name}: {element:?} has more than one /"));
        }
        let (mut start, mut end, mut star, single) = if range == "*" || range == "?" {
            (self.min, self.max, true, true)
        } else if range.starts_with(['*', '?']) {
            return refuse(format!(
                "{name}: {element:?}: a range starts at a number, not at {}",
                &range[..1]
            ));
        } else {
            let mut ends = range.split('-');
            let low = self.number(ends.next().unwrap_or_default(), "value")?;
            match (ends.next(), ends.next()) {
                (None, _) => (low, low, false, true),
                (Some(high), None) => (low, self.number(high, "range end")?, false, false),
                (Some(_), Some(_)) => {
                    return refuse(format!("{name}: {element:?} has more than one -"));
                }
            }
        };
        let step = match step {
            None => 1,
            Some(text) => {
                if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                    return refuse(format!("{name}: step {text:?} is not a number"));
                }
                let step = text.parse::<u32>().unwrap_or(u32::MAX);
                // "N/STEP" runs from N to the field's maximum.
                if single {
                    end = self.max;
                }
                if step > 1 {
                    star = false;
                }
                step
            }
        };
        if self.name == "day-of-week" && (start == 7 || end == 7) {
            return refuse(format!(
                "{name}: 7 is not a day of the week in Kubernetes CronJob; Sunday is 0 or sun"
            ));
        }
        if start < self.min {
            return refuse(format!(
                "{name}: {element:?} starts below the minimum {}",
                self.min
            ));
        }
        if end > self.max || start > self.max {
            return refuse(format!(
                "{name}: {element:?} goes above the maximum {}",
                self.max
            ));
        }
        if start > end {
            return refuse(format!(
                "{name}: {element:?} starts after it ends; ranges do not wrap around"
            ));
        }
        if step == 0 {
            return refuse(format!("{name}: {element:?} has a step of 0"));
        }
        while start <= end {
            parsed.bits |= 1 << start;
            start = start.saturating_add(step);
        }
        parsed.star |= star;
        Ok(())
    }
}

/// The macros of robfig/cron v3, as the five fields they stand for.
fn macro_fields(text: &str) -> Option<&'static str> {
    Some(match text {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        _ => return None,
    })
}

impl CronSpec {
    pub fn parse(text: &str) -> Result<Self, CronError> {
        let text = text.trim();
        if text.starts_with("TZ=") || text.starts_with("CRON_TZ=") {
            return refuse(
                "a time zone in the schedule is not supported (CronJob refuses it too since Kubernetes 1.25); set spec.timeZone",
            );
        }
        let text = if text.starts_with('@') {
            match macro_fields(text) {
                Some(fields) => fields,
                None if text.starts_with("@every") => {
                    return refuse(
                        "@every counts from a CronJob's last run, which a window does not have; write the interval as fields, for example \"0 */2 * * *\" for every two hours",
                    );
                }
                None => {
                    return refuse(format!(
                        "unknown macro {text:?}; use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly"
                    ));
                }
            }
        } else {
            text
        };
        let fields: Vec<&str> = text.split_whitespace().collect();
        let [minute, hour, day_of_month, month, day_of_week] = fields[..] else {
            let seconds = if fields.len() == 6 {
                " (a seconds field is not supported)"
            } else {
                ""
            };
            return refuse(format!(
                "has {} fields; expected 5: minute hour day-of-month month day-of-week (for example \"0 22 * * 6\"), or a macro such as @daily{seconds}",
                fields.len()
            ));
        };
        let minute = MINUTE.parse(minute)?;
        let hour = HOUR.parse(hour)?;
        let dom = DAY_OF_MONTH.parse(day_of_month)?;
        let month = MONTH.parse(month)?;
        let dow = DAY_OF_WEEK.parse(day_of_week)?;
        // The masks hold only bits up to each field's maximum, checked above.
        Ok(Self {
            minutes: minute.bits,
            hours: u32::try_from(hour.bits).unwrap_or(u32::MAX),
            days_of_month: u32::try_from(dom.bits).unwrap_or(u32::MAX),
            last_day_of_month: dom.last,
            months: u16::try_from(month.bits).unwrap_or(u16::MAX),
            days_of_week: u8::try_from(dow.bits).unwrap_or(u8::MAX),
            day_of_month_star: dom.star,
            day_of_week_star: dow.star,
        })
    }

    /// The syntax this schedule uses that Kubernetes CronJob would refuse.
    pub fn extensions(&self) -> Vec<Extension> {
        let mut used = Vec::new();
        if self.last_day_of_month {
            used.push(Extension::LastDayOfMonth);
        }
        used
    }

    /// Whether the schedule runs on `date` (its month and the two day fields).
    pub fn matches_date(&self, date: Date) -> bool {
        if self.months & (1 << date.month()) == 0 {
            return false;
        }
        let day = date.day();
        let day_of_month = self.days_of_month & (1 << day) != 0
            || (self.last_day_of_month && day == date.days_in_month());
        let day_of_week = self.days_of_week & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        if self.day_of_month_star || self.day_of_week_star {
            day_of_month && day_of_week
        } else {
            day_of_month || day_of_week
        }
    }

    /// The (hour, minute) pairs the schedule matches on a matching day, earliest first.
    pub fn times_of_day(&self) -> impl DoubleEndedIterator<Item = (i8, i8)> + '_ {
        (0i8..24)
            .filter(|h| self.hours & (1 << h) != 0)
            .flat_map(move |h| {
                (0i8..60)
                    .filter(move |m| self.minutes & (1 << m) != 0)
                    .map(move |m| (h, m))
            })
    }
}

#[cfg(test)]
#[path = "cron_tests.rs"]
mod cron_tests;
