//! Reset schedules (docs/spec.md §1 `reset`): which period an instant belongs to, what
//! that period is called, and when it ends.
//!
//! This module owns the calendar arithmetic behind board resets and nothing
//! else: it does no I/O and keeps no timers. The server asks it, for each board
//! and each tick of a [`Clock`], for the label of the current period (the
//! `PERIOD` of an archive `NAME@PERIOD`) and for the instant of the next reset.
//!
//! Every period is in UTC:
//! - `daily`: a calendar day, labelled `2026-11-21`;
//! - `weekly`: an ISO 8601 week, Monday 00:00 to the next Monday 00:00,
//!   labelled with the ISO week-numbering year and the zero-padded week,
//!   `2026-W47` (so 2024-12-30 is in `2025-W01`, 2027-01-01 in `2026-W53`);
//! - `monthly`: a calendar month, labelled `2026-11`;
//! - a cron expression: from one firing of the expression to the next,
//!   labelled with the firing that opened it, `2026-11-21T13:05Z`, or
//!   `2026-11-21T13:05:30Z` when the expression fires at a second other than 0
//!   (the precision is fixed per expression, never per firing).
//!
//! Labels of one schedule sort as text in the order of their periods, which
//! `keep_archives` relies on to drop the oldest archives first.
//!
//! Cron expressions (parsed by the `croner` crate) have 5 fields (minute, hour,
//! day of month, month, day of week: `5 0 * * 1` is 00:05 every Monday) or 6
//! with seconds first (`30 5 0 * * 1`). Names (`MON`, `JAN`), ranges, lists,
//! steps (`*/5`, also the lenient `0/5`), `L`, `W`, `#` and the nicknames
//! (`@daily`, `@weekly`, …) are accepted; when both day fields are restricted
//! a day matching either one fires, as in Vixie cron. A year field is not
//! accepted, and neither is an expression that can never fire (`0 0 30 2 *`).
//!
//! Before the first firing of a cron expression (only possible for an instant
//! before the expression's first firing ever, such as a yearly expression and
//! an instant in its first year of the calendar) there is no firing to name the
//! period after; that period is labelled with the start of the calendar,
//! `0001-01-01T00:00Z`, which sorts before every other label.

use std::collections::HashMap;
use std::sync::Arc;

pub use chrono::{DateTime, Utc};
use chrono::{Datelike, Days, Months, NaiveDate, NaiveTime, TimeZone};
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use parking_lot::Mutex;
use podium_engine::Reset;

/// A source of "now", injectable so tests do not wait.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that moves only when told to (tests).
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    /// A clock standing at `t`.
    pub fn new(t: DateTime<Utc>) -> Self {
        Self(Mutex::new(t))
    }

    /// Moves the clock to `t` (backwards too).
    pub fn set(&self, t: DateTime<Utc>) {
        *self.0.lock() = t;
    }

    /// Moves the clock by `d` (negative moves it back).
    pub fn advance(&self, d: chrono::Duration) {
        let mut g = self.0.lock();
        *g += d;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock()
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> DateTime<Utc> {
        (**self).now()
    }
}

/// Checks a reset spec; for Cron, parses the expression and returns a clear
/// error message if it is invalid or can never fire.
pub fn validate(reset: &Reset) -> Result<(), String> {
    match reset {
        Reset::Cron(expr) => parse_cron(expr).map(|_| ()),
        Reset::Never | Reset::Daily | Reset::Weekly | Reset::Monthly => Ok(()),
    }
}

/// The label of the period that contains `t`, or None for Reset::Never (and
/// for an invalid cron expression, which [`validate`] rejects).
pub fn period_label(reset: &Reset, t: DateTime<Utc>) -> Option<String> {
    match reset {
        Reset::Never => None,
        Reset::Daily => Some(t.format("%Y-%m-%d").to_string()),
        Reset::Weekly => {
            let w = t.iso_week();
            Some(format!("{:04}-W{:02}", w.year(), w.week()))
        }
        Reset::Monthly => Some(t.format("%Y-%m").to_string()),
        Reset::Cron(expr) => {
            let c = cached_cron(expr)?;
            // Inclusive: a firing exactly at `t` opens the period holding `t`.
            let start = c
                .cron
                .find_previous_occurrence(&t, true)
                .unwrap_or_else(|_| calendar_start());
            Some(start.format(c.label_format()).to_string())
        }
    }
}

/// [`next_reset`] as board info gives it: RFC 3339 in UTC, to the second.
pub fn next_reset_text(reset: &Reset, t: DateTime<Utc>) -> Option<String> {
    next_reset(reset, t).map(|n| n.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// When the period containing `t` ends (the next reset instant strictly after
/// `t`), or None for Reset::Never, for an invalid cron expression, and for an
/// instant past the last one the calendar arithmetic can represent.
pub fn next_reset(reset: &Reset, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let midnight = |d: NaiveDate| Utc.from_utc_datetime(&d.and_time(NaiveTime::MIN));
    let day = t.date_naive();
    match reset {
        Reset::Never => None,
        Reset::Daily => day.succ_opt().map(midnight),
        Reset::Weekly => {
            let days_left = 7 - u64::from(day.weekday().num_days_from_monday());
            day.checked_add_days(Days::new(days_left)).map(midnight)
        }
        Reset::Monthly => day
            .with_day(1)?
            .checked_add_months(Months::new(1))
            .map(midnight),
        Reset::Cron(expr) => cached_cron(expr)?.cron.find_next_occurrence(&t, false).ok(),
    }
}

/// A parsed cron expression and how its labels are written.
struct ParsedCron {
    cron: Cron,
    /// Whether some firing falls on a second other than 0.
    with_seconds: bool,
}

impl ParsedCron {
    fn label_format(&self) -> &'static str {
        if self.with_seconds {
            "%Y-%m-%dT%H:%M:%SZ"
        } else {
            "%Y-%m-%dT%H:%MZ"
        }
    }
}

/// 0001-01-01T00:00:00Z, the label of the period before a first firing.
fn calendar_start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0)
        .single()
        .expect("0001-01-01 is a valid UTC instant")
}

fn parse_cron(expr: &str) -> Result<ParsedCron, String> {
    let cron = CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .sloppy_ranges(true)
        .build()
        .parse(expr)
        .map_err(|e| format!("invalid cron expression {expr:?}: {e}"))?;
    // A pattern such as `0 0 30 2 *` parses but matches no day at all; the
    // search for a firing gives up at the end of its calendar.
    let reference = Utc.with_ymd_and_hms(2000, 1, 1, 0, 0, 0).single();
    if reference.is_none_or(|r| cron.find_next_occurrence(&r, true).is_err()) {
        return Err(format!("cron expression {expr:?} never fires"));
    }
    let with_seconds = (1..60).any(|s| cron.pattern.second_match(s).unwrap_or(false));
    Ok(ParsedCron { cron, with_seconds })
}

/// How many parsed expressions the cache keeps before starting afresh.
const CRON_CACHE_LIMIT: usize = 1024;

/// Parsing an expression costs far more (~20 µs) than a search from it, and
/// the server asks about the same few expressions every second: parse each
/// once. Invalid expressions are remembered too (as `None`), since checking
/// that one never fires takes milliseconds.
fn cached_cron(expr: &str) -> Option<Arc<ParsedCron>> {
    type Cache = HashMap<String, Option<Arc<ParsedCron>>>;
    static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
    if let Some(c) = CACHE.lock().as_ref().and_then(|m| m.get(expr)) {
        return c.clone();
    }
    let parsed = parse_cron(expr).ok().map(Arc::new);
    let mut g = CACHE.lock();
    let map = g.get_or_insert_with(HashMap::new);
    if map.len() >= CRON_CACHE_LIMIT {
        map.clear();
    }
    map.insert(expr.to_string(), parsed.clone());
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
    }

    fn label(r: &Reset, t: DateTime<Utc>) -> String {
        period_label(r, t).unwrap()
    }

    fn cron(e: &str) -> Reset {
        Reset::Cron(e.to_string())
    }

    #[test]
    fn never_has_no_period() {
        assert_eq!(period_label(&Reset::Never, at(2026, 1, 1, 0, 0, 0)), None);
        assert_eq!(next_reset(&Reset::Never, at(2026, 1, 1, 0, 0, 0)), None);
        assert_eq!(validate(&Reset::Never), Ok(()));
    }

    #[test]
    fn daily_labels_at_midnight() {
        let r = Reset::Daily;
        assert_eq!(label(&r, at(2026, 11, 21, 23, 59, 59)), "2026-11-21");
        assert_eq!(label(&r, at(2026, 11, 22, 0, 0, 0)), "2026-11-22");
        let just_before = at(2026, 11, 22, 0, 0, 0) - chrono::Duration::nanoseconds(1);
        assert_eq!(label(&r, just_before), "2026-11-21");
        assert_eq!(
            next_reset(&r, at(2026, 11, 21, 23, 59, 59)),
            Some(at(2026, 11, 22, 0, 0, 0))
        );
        // Strictly after: at midnight the next reset is the following one.
        assert_eq!(
            next_reset(&r, at(2026, 11, 22, 0, 0, 0)),
            Some(at(2026, 11, 23, 0, 0, 0))
        );
        assert_eq!(
            next_reset(&r, at(2026, 12, 31, 12, 0, 0)),
            Some(at(2027, 1, 1, 0, 0, 0))
        );
    }

    #[test]
    fn weekly_is_iso_week() {
        let r = Reset::Weekly;
        // 2026-11-22 is a Sunday, 2026-11-23 a Monday.
        assert_eq!(label(&r, at(2026, 11, 22, 23, 59, 59)), "2026-W47");
        assert_eq!(label(&r, at(2026, 11, 23, 0, 0, 0)), "2026-W48");
        assert_eq!(label(&r, at(2026, 11, 16, 0, 0, 0)), "2026-W47");
        assert_eq!(
            next_reset(&r, at(2026, 11, 22, 23, 59, 59)),
            Some(at(2026, 11, 23, 0, 0, 0))
        );
        assert_eq!(
            next_reset(&r, at(2026, 11, 23, 0, 0, 0)),
            Some(at(2026, 11, 30, 0, 0, 0))
        );
        assert_eq!(
            next_reset(&r, at(2026, 11, 18, 7, 0, 0)),
            Some(at(2026, 11, 23, 0, 0, 0))
        );
        // ISO week 1 can start in the previous calendar year ...
        assert_eq!(label(&r, at(2024, 12, 29, 23, 59, 59)), "2024-W52");
        assert_eq!(label(&r, at(2024, 12, 30, 0, 0, 0)), "2025-W01");
        assert_eq!(
            next_reset(&r, at(2024, 12, 31, 0, 0, 0)),
            Some(at(2025, 1, 6, 0, 0, 0))
        );
        // ... and the last ISO week can end in the next one.
        assert_eq!(label(&r, at(2027, 1, 1, 12, 0, 0)), "2026-W53");
        assert_eq!(label(&r, at(2027, 1, 3, 23, 59, 59)), "2026-W53");
        assert_eq!(label(&r, at(2027, 1, 4, 0, 0, 0)), "2027-W01");
        assert_eq!(label(&r, at(2026, 1, 5, 0, 0, 0)), "2026-W02");
    }

    #[test]
    fn monthly_handles_month_ends() {
        let r = Reset::Monthly;
        assert_eq!(label(&r, at(2026, 11, 30, 23, 59, 59)), "2026-11");
        assert_eq!(label(&r, at(2026, 12, 1, 0, 0, 0)), "2026-12");
        assert_eq!(
            next_reset(&r, at(2026, 11, 30, 23, 59, 59)),
            Some(at(2026, 12, 1, 0, 0, 0))
        );
        assert_eq!(
            next_reset(&r, at(2026, 12, 1, 0, 0, 0)),
            Some(at(2027, 1, 1, 0, 0, 0))
        );
        assert_eq!(
            next_reset(&r, at(2026, 1, 31, 10, 0, 0)),
            Some(at(2026, 2, 1, 0, 0, 0))
        );
        // Leap February.
        assert_eq!(label(&r, at(2028, 2, 29, 23, 59, 59)), "2028-02");
        assert_eq!(
            next_reset(&r, at(2028, 2, 29, 23, 59, 59)),
            Some(at(2028, 3, 1, 0, 0, 0))
        );
        assert_eq!(
            next_reset(&r, at(2027, 2, 28, 23, 59, 59)),
            Some(at(2027, 3, 1, 0, 0, 0))
        );
        assert_eq!(label(&r, at(2028, 3, 1, 0, 0, 0)), "2028-03");
    }

    #[test]
    fn cron_every_five_minutes() {
        let r = cron("*/5 * * * *");
        assert_eq!(validate(&r), Ok(()));
        assert_eq!(label(&r, at(2026, 11, 21, 13, 9, 59)), "2026-11-21T13:05Z");
        assert_eq!(label(&r, at(2026, 11, 21, 13, 10, 0)), "2026-11-21T13:10Z");
        assert_eq!(label(&r, at(2026, 11, 22, 0, 0, 0)), "2026-11-22T00:00Z");
        assert_eq!(label(&r, at(2026, 11, 21, 23, 59, 59)), "2026-11-21T23:55Z");
        let sub = at(2026, 11, 21, 13, 10, 0) + chrono::Duration::milliseconds(500);
        assert_eq!(label(&r, sub), "2026-11-21T13:10Z");
        assert_eq!(
            next_reset(&r, at(2026, 11, 21, 13, 9, 59)),
            Some(at(2026, 11, 21, 13, 10, 0))
        );
        assert_eq!(
            next_reset(&r, at(2026, 11, 21, 13, 10, 0)),
            Some(at(2026, 11, 21, 13, 15, 0))
        );
        assert_eq!(next_reset(&r, sub), Some(at(2026, 11, 21, 13, 15, 0)));
        let before = at(2026, 11, 21, 13, 10, 0) - chrono::Duration::nanoseconds(1);
        assert_eq!(next_reset(&r, before), Some(at(2026, 11, 21, 13, 10, 0)));
        assert_eq!(label(&r, before), "2026-11-21T13:05Z");
    }

    #[test]
    fn cron_weekly() {
        // 00:05 every Monday; 2026-11-23 is a Monday.
        let r = cron("5 0 * * 1");
        assert_eq!(label(&r, at(2026, 11, 23, 0, 4, 59)), "2026-11-16T00:05Z");
        assert_eq!(label(&r, at(2026, 11, 23, 0, 5, 0)), "2026-11-23T00:05Z");
        assert_eq!(label(&r, at(2026, 11, 29, 23, 0, 0)), "2026-11-23T00:05Z");
        assert_eq!(
            next_reset(&r, at(2026, 11, 23, 0, 4, 59)),
            Some(at(2026, 11, 23, 0, 5, 0))
        );
        assert_eq!(
            next_reset(&r, at(2026, 11, 23, 0, 5, 0)),
            Some(at(2026, 11, 30, 0, 5, 0))
        );
        // Names and nicknames mean the same.
        assert_eq!(
            label(&cron("5 0 * * mon"), at(2026, 11, 25, 0, 0, 0)),
            "2026-11-23T00:05Z"
        );
        assert_eq!(
            label(&cron("@weekly"), at(2026, 11, 25, 0, 0, 0)),
            "2026-11-22T00:00Z"
        );
        // Sunday is 0 and 7.
        assert_eq!(
            label(&cron("0 0 * * 7"), at(2026, 11, 25, 0, 0, 0)),
            "2026-11-22T00:00Z"
        );
    }

    #[test]
    fn cron_with_seconds() {
        let r = cron("30 5 13 * * *");
        assert_eq!(validate(&r), Ok(()));
        assert_eq!(
            label(&r, at(2026, 11, 21, 13, 5, 30)),
            "2026-11-21T13:05:30Z"
        );
        assert_eq!(
            label(&r, at(2026, 11, 21, 13, 5, 29)),
            "2026-11-20T13:05:30Z"
        );
        assert_eq!(
            next_reset(&r, at(2026, 11, 21, 13, 5, 30)),
            Some(at(2026, 11, 22, 13, 5, 30))
        );
        // A seconds field of 0 keeps minute labels.
        assert_eq!(
            label(&cron("0 5 13 * * *"), at(2026, 11, 21, 14, 0, 0)),
            "2026-11-21T13:05Z"
        );
        // Every 20 seconds: seconds in every label, including :00.
        let r = cron("*/20 * * * * *");
        assert_eq!(
            label(&r, at(2026, 11, 21, 13, 5, 19)),
            "2026-11-21T13:05:00Z"
        );
        assert_eq!(
            next_reset(&r, at(2026, 11, 21, 13, 5, 19)),
            Some(at(2026, 11, 21, 13, 5, 20))
        );
    }

    #[test]
    fn cron_rare_and_before_first_firing() {
        // Yearly: the period reaches back across the year boundary.
        let r = cron("0 0 1 1 *");
        assert_eq!(label(&r, at(2026, 12, 31, 23, 59, 59)), "2026-01-01T00:00Z");
        assert_eq!(
            next_reset(&r, at(2026, 12, 31, 23, 59, 59)),
            Some(at(2027, 1, 1, 0, 0, 0))
        );
        // Leap day only.
        let r = cron("0 12 29 2 *");
        assert_eq!(label(&r, at(2027, 6, 1, 0, 0, 0)), "2024-02-29T12:00Z");
        assert_eq!(
            next_reset(&r, at(2027, 6, 1, 0, 0, 0)),
            Some(at(2028, 2, 29, 12, 0, 0))
        );
        // Before the first firing ever: the calendar's start.
        let r = cron("0 0 1 6 *");
        assert_eq!(label(&r, at(1, 3, 1, 0, 0, 0)), "0001-01-01T00:00Z");
        assert_eq!(
            next_reset(&r, at(1, 3, 1, 0, 0, 0)),
            Some(at(1, 6, 1, 0, 0, 0))
        );
        assert!(label(&r, at(1, 3, 1, 0, 0, 0)) < label(&r, at(3, 7, 1, 0, 0, 0)));
        assert_eq!(label(&r, at(3, 7, 1, 0, 0, 0)), "0003-06-01T00:00Z");
    }

    #[test]
    fn labels_sort_in_period_order() {
        for r in [
            Reset::Daily,
            Reset::Weekly,
            Reset::Monthly,
            cron("*/7 * * * *"),
            cron("15 */3 * * * *"),
        ] {
            let mut t = at(2024, 12, 20, 0, 0, 0);
            let mut last = label(&r, t);
            for _ in 0..50 {
                t = next_reset(&r, t).unwrap();
                let l = label(&r, t);
                assert!(l > last, "{r:?}: {l} after {last}");
                // The instant just before a reset belongs to the period before.
                assert_eq!(label(&r, t - chrono::Duration::nanoseconds(1)), last);
                last = l;
            }
        }
    }

    #[test]
    fn invalid_cron_is_rejected_with_a_message() {
        for bad in [
            "",
            "* * *",
            "61 * * * *",
            "* * * * * * *",
            "0 0 1 1 * 2030",
            "x * * * *",
            "*/0 * * * *",
        ] {
            let err = validate(&cron(bad)).unwrap_err();
            assert!(err.contains("cron expression"), "{bad:?}: {err}");
            assert_eq!(period_label(&cron(bad), at(2026, 1, 1, 0, 0, 0)), None);
            assert_eq!(next_reset(&cron(bad), at(2026, 1, 1, 0, 0, 0)), None);
        }
        let err = validate(&cron("0 0 30 2 *")).unwrap_err();
        assert!(err.contains("never fires"), "{err}");
        assert_eq!(validate(&cron("0/15 * * * *")), Ok(()));
        assert_eq!(validate(&Reset::Daily), Ok(()));
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(at(2026, 11, 21, 23, 59, 59));
        assert_eq!(c.now(), at(2026, 11, 21, 23, 59, 59));
        c.advance(chrono::Duration::seconds(1));
        assert_eq!(c.now(), at(2026, 11, 22, 0, 0, 0));
        assert_eq!(label(&Reset::Daily, c.now()), "2026-11-22");
        c.set(at(2020, 1, 1, 0, 0, 0));
        assert_eq!(c.now(), at(2020, 1, 1, 0, 0, 0));
        let shared: Arc<dyn Clock> = Arc::new(ManualClock::new(at(2026, 1, 1, 0, 0, 0)));
        assert_eq!(shared.now(), at(2026, 1, 1, 0, 0, 0));
        let sys = SystemClock.now();
        assert!(sys > at(2020, 1, 1, 0, 0, 0));
    }
}
