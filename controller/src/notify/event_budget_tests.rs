use super::*;

const MINUTE: Duration = Duration::from_secs(60);

#[test]
fn a_burst_of_drops_is_one_event_a_minute_that_counts_them() {
    let start = Instant::now();
    let at = |secs: u64| start + Duration::from_secs(secs);
    let mut budget = EventBudget::new(MINUTE);
    let cases = [
        (
            "the first drop of a window is told at once",
            "upgrade",
            "NotificationDropped",
            0,
            Some(1),
        ),
        (
            "the next within the minute is held back",
            "upgrade",
            "NotificationDropped",
            1,
            None,
        ),
        ("and the next", "upgrade", "NotificationDropped", 59, None),
        (
            "another reason has its own budget",
            "upgrade",
            "NotificationRejected",
            59,
            Some(1),
        ),
        (
            "another window has its own budget",
            "patch-tuesday",
            "NotificationDropped",
            59,
            Some(1),
        ),
        (
            "after the minute, one Event for it and the two held",
            "upgrade",
            "NotificationDropped",
            60,
            Some(3),
        ),
        (
            "then held again",
            "upgrade",
            "NotificationDropped",
            61,
            None,
        ),
        (
            "a drop long after counts the one held",
            "upgrade",
            "NotificationDropped",
            600,
            Some(2),
        ),
        (
            "a quiet window starts afresh",
            "patch-tuesday",
            "NotificationDropped",
            600,
            Some(1),
        ),
    ];
    for (what, window, reason, secs, want) in cases {
        assert_eq!(budget.spend(window, reason, at(secs)), want, "{what}");
    }
}

#[test]
fn windows_that_went_quiet_are_forgotten() {
    let start = Instant::now();
    let mut budget = EventBudget::new(MINUTE);
    for i in 0..100 {
        budget.spend(&format!("window-{i}"), "NotificationDropped", start);
    }
    assert_eq!(budget.by_window.len(), 100);
    budget.spend(
        "window-0",
        "NotificationDropped",
        start + Duration::from_secs(1),
    );
    assert_eq!(
        budget.by_window.len(),
        100,
        "within the minute all are kept"
    );
    budget.spend("late", "NotificationDropped", start + 2 * MINUTE);
    assert_eq!(
        budget.by_window.len(),
        2,
        "after it only the one holding a drop back and the new one remain"
    );
}

#[test]
fn the_note_says_how_many_it_stands_for() {
    let note = || "notification n-1 was dropped".to_string();
    assert_eq!(with_count(note(), 1), "notification n-1 was dropped");
    assert_eq!(
        with_count(note(), 3),
        "notification n-1 was dropped (2 more dropped since the last such Event)"
    );
}
