use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use super::super::ClusterSnapshot;
use super::super::observe::observe_groups;
use crate::controller::fixtures::{Fixture, group, pod, reporting};
use crate::controller::model::desired_memo::DesiredMemo;
use crate::controller::model::replace_only::ReplacePolicy;
use crate::controller::steps::replace_misconfigured_pods;

/// A pod as the API server returns it: with a UID and a resourceVersion.
fn versioned(name: &str, id: &str, ip: &str, version: &str) -> Pod {
    let mut pod = pod(name, id, "node-a", ip);
    pod.metadata.uid = Some(format!("uid-{name}"));
    pod.metadata.resource_version = Some(version.to_owned());
    pod
}

/// Two log groups with their pods (log-1's at `version`), both reporting, under `spec`.
fn snapshot(memo: &Arc<DesiredMemo>, spec: &str, version: &str) -> ClusterSnapshot {
    Fixture::new(spec)
        .groups([group("log-1"), group("log-2")])
        .connection_string("sample:abc@10.1.0.1:4501")
        .database(reporting(&["log-1", "log-2"]))
        .pods([
            versioned("sample-log-1", "log-1", "10.1.0.1", version),
            versioned("sample-log-2", "log-2", "10.1.0.2", "7"),
        ])
        .build()
        .with_desired_memo(memo.clone())
}

/// The groups `step` finds clean in `snapshot`; then marks every group clean.
fn clean_then_mark_all(snapshot: &ClusterSnapshot, step: &'static str) -> Vec<String> {
    let mut clean = snapshot.clean_groups(step);
    let mut found = Vec::new();
    for group in snapshot.groups() {
        if clean.was_clean(&group) {
            found.push(group.id().to_owned());
        } else {
            clean.mark_clean(&group);
        }
    }
    found
}

const SPEC: &str = "version: 7.1.57";

#[test]
fn a_clean_group_stays_clean_while_its_inputs_hold() {
    let memo = Arc::new(DesiredMemo::default());
    let first = snapshot(&memo, SPEC, "1");
    observe_groups(&first).unwrap();
    assert!(clean_then_mark_all(&first, "Step").is_empty());
    // log-1's pod changed: only log-2 is still clean, and only for the step that said so.
    let second = snapshot(&memo, SPEC, "2");
    observe_groups(&second).unwrap();
    assert_eq!(clean_then_mark_all(&second, "Step"), ["log-2"]);
    assert!(clean_then_mark_all(&second, "Other").is_empty());
    // Both were marked again: both are clean in the next pass.
    let third = snapshot(&memo, SPEC, "2");
    observe_groups(&third).unwrap();
    assert_eq!(clean_then_mark_all(&third, "Step"), ["log-1", "log-2"]);
}

#[test]
fn nothing_is_clean_before_the_groups_are_observed_or_after_a_refresh() {
    let memo = Arc::new(DesiredMemo::default());
    let first = snapshot(&memo, SPEC, "1");
    observe_groups(&first).unwrap();
    clean_then_mark_all(&first, "Step");
    let unobserved = snapshot(&memo, SPEC, "1");
    assert!(clean_then_mark_all(&unobserved, "Step").is_empty());
    let mut refreshed = snapshot(&memo, SPEC, "1");
    observe_groups(&refreshed).unwrap();
    refreshed.refresh(Default::default());
    assert!(clean_then_mark_all(&refreshed, "Step").is_empty());
}

#[test]
fn a_spec_change_asks_every_group_again() {
    let memo = Arc::new(DesiredMemo::default());
    let policy = ReplacePolicy::default();
    let first = snapshot(&memo, SPEC, "1");
    observe_groups(&first).unwrap();
    let decision = replace_misconfigured_pods::decide(&first, policy).unwrap();
    assert!(decision.replace.is_empty(), "{decision:?}");
    // A new process group ID prefix is a replace-only change of every group, though
    // neither the groups nor their pods changed.
    let prefixed = snapshot(&memo, "{version: 7.1.57, processGroupIDPrefix: dc1}", "1");
    observe_groups(&prefixed).unwrap();
    let decision = replace_misconfigured_pods::decide(&prefixed, policy).unwrap();
    let replaced: Vec<_> = decision.replace.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(replaced, ["log-1", "log-2"]);
}
