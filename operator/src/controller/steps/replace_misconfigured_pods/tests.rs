use super::*;
use crate::controller::fixtures::{Fixture, cluster, group};
use crate::controller::model::desired::pod_options;
use crate::controller::model::pod::{build_pod, build_pvc};
use fdb_shared::api::cluster::ProcessGroupStatus;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

const OLD: &str = "version: 7.1.57";
const IDS: [&str; 3] = ["storage-1", "storage-2", "log-1"];

/// Groups whose objects were made under `OLD`, in a cluster now specified by `spec`, with
/// `extra` status entries.
fn fixture(spec: &str, extra: Vec<ProcessGroupStatus>) -> Fixture {
    let old = cluster(OLD);
    let groups: Vec<ProcessGroupStatus> = IDS.iter().map(|id| group(id)).collect();
    let pods: Vec<_> = groups
        .iter()
        .map(|g| build_pod(&old, g, &pod_options(&old, g)).unwrap())
        .collect();
    let pvcs: Vec<_> = groups
        .iter()
        .filter_map(|g| build_pvc(&old, g).unwrap())
        .collect();
    Fixture::new(spec)
        .groups(groups)
        .groups(extra)
        .pods(pods)
        .pvcs(pvcs)
}

fn ids(groups: &[(String, ReplaceOnlyChange)]) -> Vec<&str> {
    groups.iter().map(|(g, _)| g.as_str()).collect()
}

fn marked(id: &str, excluded: bool) -> ProcessGroupStatus {
    let mut g = group(id);
    g.removal_timestamp = Some(Time(Timestamp::from_second(9_000).unwrap()));
    if excluded {
        g.exclusion_timestamp = Some(Time(Timestamp::from_second(9_100).unwrap()));
    }
    g
}

#[test]
fn nothing_to_do_when_the_objects_match_the_spec() {
    let decision = decide(&fixture(OLD, vec![]).build(), ReplacePolicy::default()).unwrap();
    assert_eq!(decision, MisconfigurationDecision::default());
    assert_eq!(decision.wait_reason(), None);
}

#[test]
fn a_prefix_change_replaces_every_live_group_without_a_cap() {
    let spec = "{version: 7.1.57, processGroupIDPrefix: blue}";
    let decision = decide(
        &fixture(spec, vec![marked("storage-9", false)]).build(),
        ReplacePolicy::default(),
    )
    .unwrap();
    assert_eq!(
        ids(&decision.replace),
        IDS,
        "a marked group is not marked again"
    );
    assert!(decision.waiting.is_empty());
}

#[test]
fn a_pvc_change_respects_max_concurrent_replacements_and_names_the_blocking_group() {
    let spec = "{version: 7.1.57, automationOptions: {maxConcurrentReplacements: 1}, processes: {general: {volumeClaimTemplate: {spec: {resources: {requests: {storage: 256G}}}}}}}";
    let free = decide(&fixture(spec, vec![]).build(), ReplacePolicy::default()).unwrap();
    assert_eq!(
        ids(&free.replace),
        ["storage-1"],
        "log-1 has a PVC too: {free:?}"
    );
    assert_eq!(ids(&free.waiting), ["storage-2", "log-1"]);
    assert!(free.replace[0].1 == ReplaceOnlyChange::PvcSpec);
    // A group marked and not excluded holds the only slot; an excluded one does not.
    let excluded = decide(
        &fixture(spec, vec![marked("storage-8", true)]).build(),
        ReplacePolicy::default(),
    )
    .unwrap();
    assert_eq!(ids(&excluded.replace), ["storage-1"]);
    let busy = decide(
        &fixture(spec, vec![marked("storage-9", false)]).build(),
        ReplacePolicy::default(),
    )
    .unwrap();
    assert!(busy.replace.is_empty());
    assert_eq!(busy.in_flight, ["storage-9"]);
    let reason = busy.wait_reason().unwrap();
    assert!(
        reason.contains("storage-9") && reason.contains("first storage-1"),
        "{reason}"
    );
    // Nothing marked: the blocked Event and a wait of its own (the later steps go on).
    let Verdict::Act(plan) = verdict(&busy) else {
        panic!("an Event to publish");
    };
    assert!(matches!(
        &plan.actions[..],
        [only] if matches!(&only.action, Action::Event { reason: EventReason::ReplacementBlocked, .. })
    ));
    assert_eq!(
        plan.then.map(|w| (w.waits_on, w.goes_on)),
        Some((WaitOn::Database, true))
    );
    // Marked: the marks are written, then the Events.
    let Verdict::Act(plan) = verdict(&free) else {
        panic!("marks to write");
    };
    let actions: Vec<_> = plan.actions.iter().map(|p| &p.action).collect();
    assert!(
        matches!(
            &actions[..],
            [Action::WriteStatus(marks), Action::Event { reason: EventReason::ReplacementChosen, .. }, Action::Event { reason: EventReason::ReplacementBlocked, .. }]
                if *marks == [StatusMutation::MarkForRemoval { group: "storage-1".into() }]
        ),
        "{actions:?}"
    );
    assert_eq!(
        verdict(&MisconfigurationDecision::default()),
        Verdict::Continue
    );
}

#[test]
fn every_pod_update_strategy_replaces_replace_only_changes() {
    for strategy in ["Replace", "ReplaceTransactionSystem", "Delete"] {
        let spec = format!(
            "{{version: 7.1.57, storageServersPerPod: 2, automationOptions: {{podUpdateStrategy: {strategy}}}}}"
        );
        let decision = decide(&fixture(&spec, vec![]).build(), ReplacePolicy::default()).unwrap();
        assert_eq!(
            ids(&decision.replace),
            ["storage-1", "storage-2"],
            "{strategy}"
        );
    }
}

/// As UpdatePods' pod updates and the Go operator's replacements: while TLS is turned on
/// or off, a replace-only change given with it (here a bigger volume) waits, without the
/// budget's Event, and the later steps still run; once only the new kind of address is
/// required, the groups are replaced.
#[test]
fn replacements_wait_while_tls_is_turned_on_or_off() {
    let spec = "{version: 7.1.57, mainContainer: {enableTls: true}, processes: {general: {volumeClaimTemplate: {spec: {resources: {requests: {storage: 256G}}}}}}}";
    let migrating = fixture(spec, vec![]).status(|s| {
        s.required_addresses.tls = true;
        s.required_addresses.non_tls = true;
    });
    let decision = decide(&migrating.build(), ReplacePolicy::default()).unwrap();
    assert!(decision.replace.is_empty(), "{decision:?}");
    assert_eq!(ids(&decision.waiting), ["storage-1", "storage-2", "log-1"]);
    let reason = decision.wait_reason().unwrap();
    assert!(reason.contains("TLS migration"), "{reason}");
    let Verdict::Wait(wait) = verdict(&decision) else {
        panic!("a wait without actions");
    };
    assert_eq!((wait.waits_on, wait.goes_on), (WaitOn::Database, true));
    let migrated = fixture(spec, vec![]).status(|s| s.required_addresses.tls = true);
    let decision = decide(&migrated.build(), ReplacePolicy::default()).unwrap();
    assert_eq!(ids(&decision.replace), ["storage-1", "storage-2", "log-1"]);
}

#[test]
fn replacements_wait_for_an_incompatible_upgrade_and_name_it() {
    let spec = "{version: 7.3.43, processes: {general: {volumeClaimTemplate: {spec: {resources: {requests: {storage: 256G}}}}}}}";
    let upgrading = fixture(spec, vec![]).status(|s| s.running_version = Some("7.1.57".to_owned()));
    let decision = decide(&upgrading.build(), ReplacePolicy::default()).unwrap();
    assert!(decision.replace.is_empty(), "{decision:?}");
    assert_eq!(ids(&decision.waiting), IDS);
    let reason = decision.wait_reason().unwrap();
    assert!(reason.contains("the upgrade to 7.3.43"), "{reason}");
    // No ReplacementBlocked Event: the upgrade ends on its own.
    let Verdict::Wait(wait) = verdict(&decision) else {
        panic!("a wait without actions");
    };
    assert_eq!((wait.waits_on, wait.goes_on), (WaitOn::Database, true));
    // Once the processes run the target, the replacements go ahead.
    let upgraded = fixture(spec, vec![]).status(|s| s.running_version = Some("7.3.43".to_owned()));
    let decision = decide(&upgraded.build(), ReplacePolicy::default()).unwrap();
    assert_eq!(ids(&decision.replace), IDS);
    // A patch upgrade holds nothing.
    let patch = "{version: 7.1.59, processes: {general: {volumeClaimTemplate: {spec: {resources: {requests: {storage: 256G}}}}}}}";
    let patching = fixture(patch, vec![]).status(|s| s.running_version = Some("7.1.57".to_owned()));
    let decision = decide(&patching.build(), ReplacePolicy::default()).unwrap();
    assert_eq!(ids(&decision.replace), IDS);
}
