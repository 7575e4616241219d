use fdb_shared::api::ProcessClass;
use fdb_shared::monitor_conf::process_config::{
    CURRENT_CONFIGURATION_ANNOTATION, ENVIRONMENT_ANNOTATION,
};

use super::*;
use crate::controller::model::pod::tests::{cluster, pod, storage_1};

fn reporting(pod: &mut Pod, configuration: &str, environment: &str) {
    let annotations = pod
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    annotations.insert(
        CURRENT_CONFIGURATION_ANNOTATION.into(),
        configuration.into(),
    );
    annotations.insert(ENVIRONMENT_ANNOTATION.into(), environment.into());
}

const ENV: &str = r#"{"BINARY_DIR":"/usr/bin","FDB_INSTANCE_ID":"storage-1","FDB_MACHINE_ID":"n1","FDB_POD_IP":"10.0.0.1","FDB_PUBLIC_IP":"10.0.0.1","FDB_ZONE_ID":"n1","FDB_DNS_NAME":"sample-storage-1.sample.fdb.svc.cluster.local"}"#;

#[test]
fn the_agent_follows_the_pod_model() {
    assert_eq!(
        PodAgent::of(&pod(&cluster(""), &storage_1())),
        PodAgent::Sidecar
    );
    let unified = cluster("imageType: unified");
    assert_eq!(
        PodAgent::of(&pod(&unified, &storage_1())),
        PodAgent::Monitor
    );
}

#[test]
fn a_monitor_running_the_desired_configuration_confirms_it() {
    let unified = cluster("imageType: unified");
    let group = storage_1();
    let mut pod = pod(&unified, &group);
    let desired = desired_process_configuration(&unified, ProcessClass::Storage, true);
    // Spacing and key order of the JSON do not matter: values are compared.
    let text = serde_json::to_string_pretty(&desired).unwrap();
    reporting(&mut pod, &text, ENV);
    assert_eq!(
        check_monitor(&unified, &group, &pod),
        MonitorCheck::Confirmed
    );
    let lines = monitor_command_lines(&unified, &group, &pod, 1).unwrap();
    assert!(
        lines[&1].starts_with("/usr/bin/fdbserver --cluster_file="),
        "{lines:?}"
    );

    // A knob change: the monitor still runs the old configuration.
    let mut changed =
        cluster("imageType: unified\nprocesses: {general: {customParameters: [knob_x=1]}}");
    changed.metadata = unified.metadata.clone();
    assert!(matches!(
        check_monitor(&changed, &group, &pod),
        MonitorCheck::Outdated(why) if why.contains("older configuration")
    ));
}

#[test]
fn missing_or_malformed_annotations_are_named() {
    let unified = cluster("imageType: unified");
    let group = storage_1();
    let mut pod = pod(&unified, &group);
    let MonitorCheck::Unreadable(problem) = check_monitor(&unified, &group, &pod) else {
        panic!("no annotations must be unreadable");
    };
    assert_eq!(
        problem.to_string(),
        "pod sample-storage-1 has no foundationdb.org/launcher-current-configuration annotation (its monitor has not reported)"
    );
    reporting(&mut pod, "{not json", ENV);
    let MonitorCheck::Unreadable(problem) = check_monitor(&unified, &group, &pod) else {
        panic!("malformed annotations must be unreadable");
    };
    assert!(
        problem
            .to_string()
            .starts_with("pod sample-storage-1: annotation foundationdb.org/launcher-current-configuration is malformed"),
        "{problem}"
    );
    assert_eq!(monitor_command_lines(&unified, &group, &pod, 1), None);
}
