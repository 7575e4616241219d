//! The outage judge (`check_outages`): what the operator's actions may cost in
//! unavailability, storms of recoveries, and outages users and faults begin.

use super::tests::invariants;
use super::*;

/// `check_outages` with one recovery of 5 s and a bounce of 10 s.
fn judge(
    monitor: &mut InvariantMonitor,
    now: i64,
    start_unix: i64,
    outages: &[Outage],
    operator: &[(i64, bool)],
    others: &[i64],
) {
    let acted = ActionTimes { operator, others };
    let allowed = OutageAllowance {
        recovery: 5,
        bounce: 10,
    };
    monitor.check_outages(now, start_unix, outages, &acted, allowed);
}

fn outage(start: i64, end: Option<i64>) -> Outage {
    Outage {
        start,
        end,
        cause: "recovery".into(),
        recovery_seconds: 5,
    }
}

#[test]
fn a_recovery_a_fault_slows_is_allowed_the_time_it_needed_and_no_more() {
    let mut monitor = InvariantMonitor::new();
    // A bounce's kill at 100 while recoveries take 90 s (slowRecovery): restart (5 s)
    // plus the 90 s recovery is the database's time, not the operator's.
    let slow = Outage {
        recovery_seconds: 90,
        ..outage(100, Some(195))
    };
    judge(
        &mut monitor,
        300,
        0,
        std::slice::from_ref(&slow),
        &[(100, true)],
        &[],
    );
    assert!(
        invariants(&monitor).is_empty(),
        "{:?}",
        monitor.violations()
    );
    // A second recovery chained onto it is still the operator's.
    let storm = Outage {
        recovery_seconds: 90,
        ..outage(196, Some(290))
    };
    judge(
        &mut monitor,
        300,
        0,
        &[slow, storm],
        &[(100, true), (196, false)],
        &[],
    );
    assert_eq!(invariants(&monitor), [UNAVAILABLE_BY_OPERATOR]);
}

#[test]
fn an_outage_caused_by_an_operator_action_may_last_one_recovery() {
    let mut monitor = InvariantMonitor::new();
    // Outages at 100 (5 s) and 200 (a chain of recoveries, 12 s), actions at both.
    let outages = [
        outage(100, Some(105)),
        outage(200, Some(205)),
        outage(204, Some(212)),
    ];
    judge(
        &mut monitor,
        300,
        0,
        &outages,
        &[(100, false), (200, false)],
        &[],
    );
    assert_eq!(invariants(&monitor), [UNAVAILABLE_BY_OPERATOR]);
    assert_eq!(monitor.violations()[0].time, 200);
    assert!(monitor.violations()[0].detail.contains("12 s"));
    judge(
        &mut monitor,
        400,
        0,
        &outages,
        &[(100, false), (200, false)],
        &[],
    );
    assert_eq!(monitor.violations().len(), 1, "judged once");

    // A storm: three short recoveries a second apart, each started by an action.
    let mut monitor = InvariantMonitor::new();
    let storm = [
        outage(100, Some(105)),
        outage(106, Some(111)),
        outage(112, Some(117)),
    ];
    judge(
        &mut monitor,
        300,
        0,
        &storm,
        &[(100, false), (106, false), (112, false)],
        &[],
    );
    assert_eq!(invariants(&monitor), [UNAVAILABLE_BY_OPERATOR]);
    assert!(
        monitor.violations()[0].detail.contains("17 s"),
        "{}",
        monitor.violations()[0].detail
    );
    let mut monitor = InvariantMonitor::new();
    let apart = [outage(100, Some(105)), outage(200, Some(205))];
    judge(
        &mut monitor,
        300,
        0,
        &apart,
        &[(100, false), (200, false)],
        &[],
    );
    assert!(
        monitor.violations().is_empty(),
        "recoveries far apart are each one recovery"
    );

    let mut monitor = InvariantMonitor::new();
    judge(
        &mut monitor,
        300,
        0,
        &[outage(50, Some(80))],
        &[(10, false)],
        &[],
    );
    assert!(
        monitor.violations().is_empty(),
        "not caused by the operator"
    );
    judge(
        &mut monitor,
        300,
        0,
        &[outage(60, Some(70))],
        &[(60, true)],
        &[],
    );
    assert!(
        monitor.violations().is_empty(),
        "the cluster-wide kill may take restart + recovery"
    );
    judge(
        &mut monitor,
        294,
        0,
        &[outage(290, None)],
        &[(290, false)],
        &[],
    );
    assert!(monitor.violations().is_empty(), "still within one recovery");
    judge(
        &mut monitor,
        296,
        0,
        &[outage(290, None)],
        &[(290, false)],
        &[],
    );
    assert_eq!(
        invariants(&monitor),
        [UNAVAILABLE_BY_OPERATOR],
        "open and too long"
    );
}

/// Issue 26, seed 136: a user's eviction 2 s after the recovery of an operator's pod
/// deletion ended is the user's outage, not part of a storm of the operator's; the same
/// outage with no user act then is (a chain the operator's action began).
#[test]
fn an_outage_a_user_or_a_fault_begins_is_not_merged_into_the_operators() {
    let outages = [outage(835, Some(840)), outage(842, Some(860))];
    let mut monitor = InvariantMonitor::new();
    judge(&mut monitor, 900, 0, &outages, &[(835, false)], &[842]);
    assert!(
        monitor.violations().is_empty(),
        "{:?}",
        monitor.violations()
    );
    let mut monitor = InvariantMonitor::new();
    judge(&mut monitor, 900, 0, &outages, &[(835, false)], &[]);
    assert_eq!(invariants(&monitor), [UNAVAILABLE_BY_OPERATOR]);
    // An operator's outage after a user's is still judged on its own.
    let outages = [outage(100, Some(103)), outage(104, Some(112))];
    let mut monitor = InvariantMonitor::new();
    judge(&mut monitor, 900, 0, &outages, &[(104, false)], &[100]);
    assert_eq!(invariants(&monitor), [UNAVAILABLE_BY_OPERATOR]);
    assert_eq!(monitor.violations()[0].time, 104);
}
