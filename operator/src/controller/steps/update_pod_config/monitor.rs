//! UpdatePodConfig for unified pods: their agent is fdb-kubernetes-monitor, read from
//! pod annotations (see [`crate::controller::pod_agent`]), never an HTTP call.

use fdb_shared::monitor_conf::process_config::OUTDATED_CONFIG_MAP_ANNOTATION;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::controller::pod_agent::config_query::{PodConfigPlan, PodConfigResult};
use crate::controller::pod_agent::{PodAgent, monitor_report};

/// Whether `pod` is a unified pod whose monitor annotations are missing or do not
/// parse: even with its configuration confirmed, UpdatePodConfig asks it again, so the
/// pod is named (IncorrectConfigMap) and its monitor asked to report.
pub(crate) fn monitor_report_unreadable(pod: &impl kube::Resource<DynamicType = ()>) -> bool {
    PodAgent::of(pod) == PodAgent::Monitor && monitor_report(pod).is_err()
}

/// The unified pods to nudge: their monitor does not run the desired configuration and
/// they carry no `outdated-config-map-seen` annotation yet (the monitor reads its file
/// again when it sees one newer than its last load).
pub(crate) fn outdated_monitors<'a>(
    plan: &'a PodConfigPlan<'a>,
    results: &[PodConfigResult],
) -> Vec<&'a Pod> {
    plan.candidates
        .iter()
        .zip(results)
        .filter(|(c, result)| {
            matches!(
                result,
                PodConfigResult::Incorrect(_) | PodConfigResult::Unreadable(_)
            ) && PodAgent::of(c.pod) == PodAgent::Monitor
                && !c
                    .pod
                    .annotations()
                    .contains_key(OUTDATED_CONFIG_MAP_ANNOTATION)
        })
        .map(|(c, _)| c.pod)
        .collect()
}

#[cfg(test)]
mod tests {
    use fdb_shared::api::cluster::ProcessGroupConditionType;
    use fdb_shared::monitor_conf::process_config::{
        CURRENT_CONFIGURATION_ANNOTATION, ENVIRONMENT_ANNOTATION,
    };

    use super::*;
    use crate::controller::fixtures::{Fixture, group, pod};
    use crate::controller::model::pod::IMAGE_TYPE_ANNOTATION;
    use crate::controller::model::process_config::desired_process_configuration;
    use crate::controller::pod_agent::config_query::monitor_result;
    use crate::controller::status::mutations::StatusMutation;
    use crate::controller::steps::update_pod_config::{conclude, decide};

    fn unified(mut pod: Pod, configuration: Option<&str>) -> Pod {
        let annotations = pod.annotations_mut();
        annotations.insert(IMAGE_TYPE_ANNOTATION.into(), "unified".into());
        if let Some(configuration) = configuration {
            annotations.insert(
                CURRENT_CONFIGURATION_ANNOTATION.into(),
                configuration.into(),
            );
            annotations.insert(ENVIRONMENT_ANNOTATION.into(), "{}".into());
        }
        pod
    }

    #[test]
    fn monitors_are_read_from_annotations_and_unreadable_ones_are_named() {
        let fixture = Fixture::new("version: 7.1.57\nimageType: unified")
            .groups([group("log-1"), group("log-2"), group("log-3")])
            .connection_string("sample:abc@10.0.0.1:4501");
        let cluster = fixture.clone().build().cluster().clone();
        let desired = serde_json::to_string(&desired_process_configuration(
            &cluster,
            fdb_shared::api::ProcessClass::Log,
            true,
        ))
        .unwrap();
        let snapshot = fixture
            .pods([
                unified(
                    pod("sample-log-1", "log-1", "n1", "10.0.0.1"),
                    Some(&desired),
                ),
                unified(
                    pod("sample-log-2", "log-2", "n2", "10.0.0.2"),
                    Some("{broken"),
                ),
                unified(pod("sample-log-3", "log-3", "n3", "10.0.0.3"), None),
            ])
            .build();
        let plan = decide(&snapshot).unwrap().unwrap();
        let results: Vec<PodConfigResult> = plan
            .candidates
            .iter()
            .map(|c| monitor_result(snapshot.cluster(), c))
            .collect();
        assert_eq!(results[0], PodConfigResult::Confirmed);
        assert!(
            matches!(&results[1], PodConfigResult::Unreadable(m)
                if m.starts_with("pod sample-log-2: annotation foundationdb.org/launcher-current-configuration is malformed")),
            "{results:?}"
        );
        assert!(
            matches!(&results[2], PodConfigResult::Unreadable(m)
                if m == "pod sample-log-3 has no foundationdb.org/launcher-current-configuration annotation (its monitor has not reported)"),
            "{results:?}"
        );
        let outcome = conclude(&plan, &results);
        assert_eq!(outcome.annotate.len(), 1);
        for group in ["log-2", "log-3"] {
            assert!(outcome.mutations.contains(&StatusMutation::SetCondition {
                group: group.into(),
                condition: ProcessGroupConditionType::IncorrectConfigMap,
            }));
        }
        // The reason names the pods and the annotation; nothing is deleted (the step
        // only annotates pods and sets conditions).
        let reason = outcome.waiting_reason().unwrap();
        assert!(
            reason.contains(
                "pod sample-log-2: annotation foundationdb.org/launcher-current-configuration"
            ),
            "{reason}"
        );
        assert!(reason.contains("pod sample-log-3 has no"), "{reason}");
        // Both get the nudge that makes a monitor read its file and report again.
        let nudged: Vec<String> = outdated_monitors(&plan, &results)
            .into_iter()
            .map(|p| p.name_any())
            .collect();
        assert_eq!(nudged, ["sample-log-2", "sample-log-3"]);
    }

    #[test]
    fn a_confirmed_monitor_whose_report_breaks_is_asked_again() {
        let fixture = Fixture::new("version: 7.1.57\nimageType: unified")
            .groups([group("log-1")])
            .connection_string("sample:abc@10.0.0.1:4501");
        let cluster = fixture.clone().build().cluster().clone();
        let desired = serde_json::to_string(&desired_process_configuration(
            &cluster,
            fdb_shared::api::ProcessClass::Log,
            true,
        ))
        .unwrap();
        let good = unified(
            pod("sample-log-1", "log-1", "n1", "10.0.0.1"),
            Some(&desired),
        );
        let hash = {
            let snapshot = fixture.clone().pods([good.clone()]).build();
            let plan = decide(&snapshot).unwrap().unwrap();
            plan.candidates[0].desired_hash.clone()
        };
        let mut confirmed = good;
        confirmed.annotations_mut().insert(
            crate::controller::model::pod::LAST_APPLIED_CONFIG_MAP_ANNOTATION.into(),
            hash,
        );
        let snapshot = fixture.clone().pods([confirmed.clone()]).build();
        assert!(decide(&snapshot).unwrap().unwrap().candidates.is_empty());
        let mut broken = confirmed;
        broken
            .annotations_mut()
            .insert(CURRENT_CONFIGURATION_ANNOTATION.into(), "{broken".into());
        assert!(monitor_report_unreadable(&broken));
        let snapshot = fixture.pods([broken]).build();
        let plan = decide(&snapshot).unwrap().unwrap();
        assert_eq!(plan.candidates.len(), 1);
        let result = monitor_result(snapshot.cluster(), &plan.candidates[0]);
        assert!(
            matches!(&result, PodConfigResult::Unreadable(m) if m.contains("sample-log-1")),
            "{result:?}"
        );
    }
}
