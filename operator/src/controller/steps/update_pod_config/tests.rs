//! Tests of UpdatePodConfig's decision.

use super::*;
use crate::controller::fixtures::{Fixture, desired_hash, group, pod};
use k8s_openapi::api::core::v1::Pod;

fn annotated(mut pod: Pod, hash: &str) -> Pod {
    pod.annotations_mut().insert(
        LAST_APPLIED_CONFIG_MAP_ANNOTATION.to_owned(),
        hash.to_owned(),
    );
    pod
}

#[test]
fn only_running_pods_without_the_desired_hash_are_asked() {
    let base = Fixture::new("version: 7.1.57").groups([
        group("log-1"),
        group("log-2"),
        group("log-3"),
        group("log-4"),
    ]);
    assert!(
        decide(&base.clone().build()).unwrap().is_none(),
        "no cluster file yet"
    );
    let connected = base.connection_string("sample:abc@10.0.0.1:4501");
    let hash = desired_hash(&connected, "log-1");
    let mut failed = pod("sample-log-4", "log-4", "n4", "10.0.0.4");
    if let Some(status) = failed.status.as_mut() {
        status.phase = Some("Failed".into());
    }
    let mut pending = pod("sample-log-3", "log-3", "n3", "10.0.0.3");
    if let Some(status) = pending.status.as_mut() {
        status.phase = Some("Pending".into());
    }
    let snapshot = connected
        .pods([
            annotated(pod("sample-log-1", "log-1", "n1", "10.0.0.1"), &hash),
            annotated(pod("sample-log-2", "log-2", "n2", "10.0.0.2"), "old"),
            pending,
            failed,
        ])
        .build();
    let plan = decide(&snapshot).unwrap().unwrap();
    let asked: Vec<&str> = plan
        .candidates
        .iter()
        .map(|c| c.group.process_group_id.as_str())
        .collect();
    assert_eq!(asked, ["log-2"]);
    assert_eq!(plan.not_running, 1, "a failed pod is not waited for");
    assert_eq!(plan.candidates[0].desired_hash, hash);
}

#[test]
fn answers_become_annotations_conditions_and_a_reason() {
    let snapshot = Fixture::new("version: 7.1.57")
        .groups([group("log-1"), group("log-2"), group("log-3")])
        .connection_string("sample:abc@10.0.0.1:4501")
        .pods([
            pod("sample-log-1", "log-1", "n1", "10.0.0.1"),
            pod("sample-log-2", "log-2", "n2", "10.0.0.2"),
            pod("sample-log-3", "log-3", "n3", "10.0.0.3"),
        ])
        .build();
    let plan = decide(&snapshot).unwrap().unwrap();
    let outcome = conclude(
        &plan,
        &[
            PodConfigResult::Confirmed,
            PodConfigResult::Unreachable("timeout".into()),
            PodConfigResult::Incorrect("differs".into()),
        ],
    );
    assert_eq!(outcome.annotate.len(), 1);
    assert_eq!(outcome.annotate[0].0, "sample-log-1");
    let sidecar = ProcessGroupConditionType::SidecarUnreachable;
    assert_eq!(
        outcome.mutations,
        [
            StatusMutation::ClearCondition {
                group: "log-1".into(),
                condition: sidecar.clone()
            },
            StatusMutation::SetCondition {
                group: "log-2".into(),
                condition: sidecar.clone()
            },
            StatusMutation::ClearCondition {
                group: "log-3".into(),
                condition: sidecar
            },
            StatusMutation::SetCondition {
                group: "log-3".into(),
                condition: ProcessGroupConditionType::IncorrectConfigMap
            },
        ]
    );
    assert_eq!(
        outcome.waiting_reason().as_deref(),
        Some(
            "1 sidecars are unreachable (process groups log-2); waiting for the kubelet to project the ConfigMap into 1 pods"
        )
    );
    assert_eq!(conclude(&plan, &[]).waiting_reason(), None);
}

#[test]
fn pods_not_asked_wait_for_the_kubelet_with_their_conditions_untouched() {
    let snapshot = Fixture::new("version: 7.1.57")
        .groups([group("log-1"), group("log-2")])
        .connection_string("sample:abc@10.0.0.1:4501")
        .pods([
            pod("sample-log-1", "log-1", "n1", "10.0.0.1"),
            pod("sample-log-2", "log-2", "n2", "10.0.0.2"),
        ])
        .build();
    let plan = decide(&snapshot).unwrap().unwrap();
    let outcome = conclude(
        &plan,
        &[
            PodConfigResult::Incorrect("differs".into()),
            PodConfigResult::NotAsked,
        ],
    );
    assert!(outcome.annotate.is_empty());
    assert!(
        outcome.mutations.iter().all(|m| !matches!(m,
            StatusMutation::SetCondition { group, .. } | StatusMutation::ClearCondition { group, .. }
                if group == "log-2")),
        "{:?}",
        outcome.mutations
    );
    assert_eq!(
        outcome.waiting_reason().as_deref(),
        Some("waiting for the kubelet to project the ConfigMap into 2 pods")
    );
}

#[test]
fn the_step_asks_first_then_concludes_with_writes_and_a_wait_from_the_answers() {
    let snapshot = Fixture::new("version: 7.1.57")
        .groups([group("log-1"), group("log-2")])
        .connection_string("sample:abc@10.0.0.1:4501")
        .pods([
            pod("sample-log-1", "log-1", "n1", "10.0.0.1"),
            pod("sample-log-2", "log-2", "n2", "10.0.0.2"),
        ])
        .build();
    let facts = PassFacts::default();
    let mut answers = crate::controller::pass::facts::Answers::default();
    let asked = UpdatePodConfig.decide(&snapshot, &facts).unwrap();
    let [Action::AskPodAgents(query)] = &asked.actions()[..] else {
        panic!("{asked:?}")
    };
    let pods: Vec<&str> = query.candidates.iter().map(|c| c.pod.as_str()).collect();
    assert_eq!(pods, ["sample-log-1", "sample-log-2"]);
    assert_eq!(
        UpdatePodConfig
            .conclude(&snapshot, &facts, &mut answers)
            .unwrap(),
        Verdict::Continue,
        "no answers, nothing to conclude"
    );
    answers.pod_config_answers = Some(vec![
        PodConfigResult::Confirmed,
        PodConfigResult::Incorrect("differs".into()),
    ]);
    let verdict = UpdatePodConfig
        .conclude(&snapshot, &facts, &mut answers)
        .unwrap();
    assert!(
        answers.pod_config_answers.is_none(),
        "the answers are taken"
    );
    let actions = verdict.actions();
    assert!(
        matches!(actions[0], Action::Patch { kind: ObjectKind::Pods, name, patch }
            if name == "sample-log-1"
                && patch.pointer("/metadata/annotations/foundationdb.org~1last-applied-config-map")
                    == Some(&serde_json::json!(query.candidates[0].desired_hash))),
        "{actions:?}"
    );
    assert!(matches!(actions[1], Action::StageStatus(_)), "{actions:?}");
    let Verdict::Act(plan) = &verdict else {
        panic!("{verdict:?}")
    };
    let wait = plan.then.as_ref().unwrap();
    assert_eq!(wait.waits_on, WaitOn::ConfigMap);
    assert!(
        !wait.goes_on,
        "the kubelet projects into every pod: the pass ends"
    );
}

#[test]
fn pods_that_do_not_run_wait_without_holding_the_later_steps() {
    let mut pending = pod("sample-log-1", "log-1", "n1", "10.0.0.1");
    pending.status = None;
    let snapshot = Fixture::new("version: 7.1.57")
        .groups([group("log-1")])
        .connection_string("sample:abc@10.0.0.1:4501")
        .pods([pending])
        .build();
    let verdict = UpdatePodConfig
        .decide(&snapshot, &PassFacts::default())
        .unwrap();
    let Verdict::Wait(wait) = verdict else {
        panic!("{verdict:?}")
    };
    assert_eq!(wait.waits_on, WaitOn::Kubernetes);
    assert!(wait.goes_on);
    assert!(wait.reason.contains("1 pods to run"), "{}", wait.reason);
}

/// A conf the pod cannot render yet (its spec lacks a variable the new conf substitutes,
/// as `$FDB_DNS_NAME` after `useDNSInClusterFile` is turned on) does not end the pass:
/// UpdatePods, later in it, gives the pod that variable.
#[test]
fn pods_that_need_their_pod_update_first_do_not_hold_the_later_steps() {
    let snapshot = Fixture::new("version: 7.1.57")
        .groups([group("log-1")])
        .connection_string("sample:abc@10.0.0.1:4501")
        .pods([pod("sample-log-1", "log-1", "n1", "10.0.0.1")])
        .build();
    let facts = PassFacts::default();
    let mut answers = crate::controller::pass::facts::Answers {
        pod_config_answers: Some(vec![PodConfigResult::NeedsPodUpdate(
            "FDB_DNS_NAME is not substituted".into(),
        )]),
        ..Default::default()
    };
    let verdict = UpdatePodConfig
        .conclude(&snapshot, &facts, &mut answers)
        .unwrap();
    let Verdict::Act(plan) = &verdict else {
        panic!("{verdict:?}")
    };
    let wait = plan.then.as_ref().unwrap();
    assert!(wait.goes_on, "{wait:?}");
    assert!(
        wait.reason
            .contains("1 pods need their pod update before their new conf, sample-log-1"),
        "{}",
        wait.reason
    );
}

/// A confirmed pod is remembered between passes (`snapshot/clean_memo.rs`) only while
/// its inputs hold: once someone overwrites its annotation (a new resourceVersion), it is
/// asked again, and a spec change asks every pod again.
#[test]
fn a_confirmed_pod_is_asked_again_once_its_annotation_changes() {
    use crate::controller::fixtures::reporting;
    use crate::controller::model::desired_memo::DesiredMemo;
    use crate::controller::snapshot::observe::observe_groups;
    use std::sync::Arc;

    let memo = Arc::new(DesiredMemo::default());
    let pass = |spec: &str, version: &str, hash: &str| {
        let mut log = annotated(pod("sample-log-1", "log-1", "n1", "10.0.0.1"), hash);
        log.metadata.uid = Some("uid-log-1".into());
        log.metadata.resource_version = Some(version.into());
        let snapshot = Fixture::new(spec)
            .groups([group("log-1")])
            .connection_string("sample:abc@10.0.0.1:4501")
            .database(reporting(&["log-1"]))
            .pods([log])
            .build()
            .with_desired_memo(memo.clone());
        observe_groups(&snapshot).unwrap();
        let asked: Vec<String> = decide(&snapshot)
            .unwrap()
            .unwrap()
            .candidates
            .iter()
            .map(|c| c.group.process_group_id.clone())
            .collect();
        asked
    };
    let hash = desired_hash(
        &Fixture::new("version: 7.1.57")
            .groups([group("log-1")])
            .connection_string("sample:abc@10.0.0.1:4501"),
        "log-1",
    );
    assert!(pass("version: 7.1.57", "1", &hash).is_empty());
    assert!(pass("version: 7.1.57", "1", &hash).is_empty(), "remembered");
    assert_eq!(pass("version: 7.1.57", "2", "overwritten"), ["log-1"]);
    assert!(pass("version: 7.1.57", "3", &hash).is_empty());
    let knob =
        "{version: 7.1.57, processes: {general: {customParameters: [knob_max_trace_lines=20000]}}}";
    assert_eq!(
        pass(knob, "3", &hash),
        ["log-1"],
        "a new conf for every pod"
    );
}
