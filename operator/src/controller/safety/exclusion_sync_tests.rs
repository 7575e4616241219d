use super::*;

fn entry(owner: &str, group: &str, since: i64) -> RestartEntry {
    RestartEntry {
        owner: owner.into(),
        group: group.into(),
        since,
    }
}

fn locality(group: &str) -> ExclusionTarget {
    ExclusionTarget::instance_id(group).unwrap()
}

/// dc1 (this instance) and dc2 replaced their log groups: both pending, both ready
/// since 100.
fn both_ready() -> RestartLists {
    RestartLists {
        pending: vec![
            entry("dc1", "dc1-log-1", 100),
            entry("dc2", "dc2-log-1", 100),
        ],
        ready: vec![
            entry("dc1", "dc1-log-1", 100),
            entry("dc2", "dc2-log-1", 100),
        ],
    }
}

fn own() -> Vec<(String, Vec<ExclusionTarget>)> {
    vec![("dc1-log-1".to_owned(), vec![locality("dc1-log-1")])]
}

#[test]
fn every_ready_group_of_the_database_is_excluded_at_once_after_the_settle_time() {
    let decision = decide_shared_exclusion(&both_ready(), "dc1", &own(), 100 + SETTLE_SECONDS);
    let SharedExclusion::Exclude { groups, served } = decision else {
        panic!("{decision:?}");
    };
    // This instance's group with its own targets, dc2's by its locality.
    assert_eq!(
        groups,
        [
            ("dc1-log-1".to_owned(), vec![locality("dc1-log-1")]),
            ("dc2-log-1".to_owned(), vec![locality("dc2-log-1")]),
        ]
    );
    assert_eq!(served, both_ready().ready);
}

#[test]
fn a_pending_group_not_ready_holds_every_exclusion() {
    // A broken rule (each instance excluding its own ready groups) would exclude
    // dc1-log-1 now, and dc2-log-1 in a second recovery.
    let mut lists = both_ready();
    lists.ready.retain(|e| e.owner == "dc1");
    let decision = decide_shared_exclusion(&lists, "dc1", &own(), 1_000);
    assert!(
        matches!(&decision, SharedExclusion::Wait { reason, .. } if reason.contains("dc2-log-1")),
        "{decision:?}"
    );
}

#[test]
fn an_entry_added_lately_holds_the_exclusion_for_the_instances_a_pass_behind() {
    let mut lists = both_ready();
    lists.pending.push(entry("dc3", "dc3-log-1", 120));
    lists.ready.push(entry("dc3", "dc3-log-1", 125));
    let decision = decide_shared_exclusion(&lists, "dc1", &own(), 130);
    assert_eq!(
        decision,
        SharedExclusion::Wait {
            reason: format!(
                "every process group of the database that waits for its exclusion is ready; waiting {SETTLE_SECONDS} s after the last one was listed (5 s ago) for the other operator instances"
            ),
            after_seconds: (SETTLE_SECONDS - 5).unsigned_abs(),
        }
    );
    let later = decide_shared_exclusion(&lists, "dc1", &own(), 125 + SETTLE_SECONDS);
    assert!(
        matches!(&later, SharedExclusion::Exclude { groups, .. } if groups.len() == 3),
        "{later:?}"
    );
}

#[test]
fn a_key_that_is_no_locality_is_not_spliced_into_the_command() {
    let mut lists = both_ready();
    let hostile = "dc2-log-1 locality_zoneid:zone-1";
    lists.pending.push(entry("dc2", hostile, 50));
    lists.ready.push(entry("dc2", hostile, 50));
    let decision = decide_shared_exclusion(&lists, "dc1", &own(), 1_000);
    let SharedExclusion::Exclude { groups, served } = decision else {
        panic!("{decision:?}");
    };
    assert!(groups.iter().all(|(g, _)| g != hostile), "{groups:?}");
    assert!(served.iter().all(|e| e.group != hostile), "{served:?}");
}
