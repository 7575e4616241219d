use super::*;
use serde_json::json;

fn cluster(dns: bool) -> FoundationDBCluster {
    serde_json::from_value(json!({
        "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
        "metadata": {"name": "sample", "namespace": "db"},
        "spec": {"version": "7.1.57", "dataCenter": "dc2", "imageType": "unified",
                 "routing": {"useDNSInClusterFile": dns},
                 "databaseConfiguration": {"redundancy_mode": "triple", "usable_regions": 2}},
        "status": {"connectionString": "sample:abc@10.0.0.1:4501,10.0.0.2:4501,10.0.1.1:4501,10.0.1.2:4501,10.0.1.3:4501"},
    }))
    .unwrap()
}

fn pod(name: &str, class: &str, ip: &str, phase: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"fdb-cluster-name": "sample",
            "foundationdb.org/fdb-process-class": class}},
        "status": {"podIP": ip, "phase": phase},
    }))
    .unwrap()
}

#[test]
fn survivors_stay_and_stateful_pods_fill_up_in_name_order() {
    let pods = [
        pod("sample-storage-2", "storage", "10.0.1.12", "Running"),
        pod("sample-log-1", "log", "10.0.1.1", "Running"),
        pod("sample-log-2", "log", "10.0.1.2", "Running"),
        pod("sample-stateless-1", "stateless", "10.0.1.20", "Running"),
        pod("sample-storage-1", "storage", "10.0.1.11", "Running"),
        pod("sample-storage-3", "storage", "10.0.1.13", "Pending"),
        pod("sample-storage-4", "storage", "10.0.1.14", "Running"),
    ];
    let plan = plan(&cluster(false), &pods).unwrap();
    assert_eq!(plan.source, "sample-log-2");
    assert_eq!(join(&plan.kept), "10.0.1.1:4501, 10.0.1.2:4501");
    let added: Vec<&str> = plan.added.iter().map(|(pod, _)| pod.as_str()).collect();
    // Pending and stateless pods are no candidates.
    assert_eq!(
        added,
        ["sample-storage-1", "sample-storage-2", "sample-storage-4"]
    );
    assert_eq!(
        plan.connection_string,
        "sample:abc@10.0.1.1:4501,10.0.1.2:4501,10.0.1.11:4501,10.0.1.12:4501,10.0.1.14:4501"
    );
}

#[test]
fn without_a_running_coordinator_or_enough_candidates_nothing_is_planned() {
    let none = plan(
        &cluster(false),
        &[pod("sample-storage-1", "storage", "10.0.9.9", "Running")],
    )
    .unwrap_err();
    assert_eq!(
        none.to_string(),
        "could not find any running coordinator for this cluster"
    );
    let few = plan(
        &cluster(false),
        &[pod("sample-log-1", "log", "10.0.1.1", "Running")],
    )
    .unwrap_err();
    assert!(
        few.to_string()
            .starts_with("not enough coordinator candidates: need 4 more"),
        "{few}"
    );
}

#[test]
fn dns_names_are_matched_when_the_cluster_file_uses_them() {
    let mut cluster = cluster(true);
    cluster.status.as_mut().unwrap().connection_string =
        Some("sample:abc@sample-log-1.sample.db.svc.cluster.local:4501".into());
    let pods = [
        pod("sample-log-1", "log", "10.0.1.1", "Running"),
        pod("sample-log-2", "log", "10.0.1.2", "Running"),
        pod("sample-storage-1", "storage", "10.0.1.11", "Running"),
        pod("sample-storage-2", "storage", "10.0.1.12", "Running"),
        pod("sample-storage-3", "storage", "10.0.1.13", "Running"),
    ];
    let plan = plan(&cluster, &pods).unwrap();
    assert_eq!(plan.added.len(), 4);
    assert_eq!(
        plan.added[0].1.to_string(),
        "sample-log-2.sample.db.svc.cluster.local:4501"
    );
}

#[test]
fn a_database_that_answers_is_left_alone() {
    let status = |available: bool, healthy: bool, quorum: bool| {
        json!({"client": {"database_status": {"available": available, "healthy": healthy},
                          "coordinators": {"quorum_reachable": quorum}}})
    };
    assert!(check_status(&status(false, false, false)).is_ok());
    for (s, why) in [
        (status(true, true, true), "cluster is available"),
        (status(false, true, false), "cluster is healthy"),
        (
            status(false, false, true),
            "quorum of coordinators are reachable",
        ),
    ] {
        let error = check_status(&s).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("{why}, will abort any further actions")
        );
        assert_eq!(error.exit_code(), 1);
    }
}

#[test]
fn only_a_plain_path_below_the_data_root_is_a_data_dir() {
    assert_eq!(
        data_dir_of("/var/fdb/data/1/coordination-0.fdq\n", "p").unwrap(),
        "/var/fdb/data/1"
    );
    assert_eq!(
        data_dir_of("/var/fdb/data/coordination-0.fdq", "p").unwrap(),
        "/var/fdb/data"
    );
    for bad in [
        "",
        "/etc/coordination-0.fdq",
        "/var/fdb/data/../../etc/coordination-0.fdq",
        "/var/fdb/data/1/other.fdq",
        "var/fdb/data/coordination-0.fdq",
        "/var/fdb/data/a\u{1b}b/coordination-0.fdq",
    ] {
        let error = data_dir_of(bad, "p").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("no coordination file found under /var/fdb/data in pod p"),
            "{bad:?}: {error}"
        );
    }
}

#[test]
fn files_go_to_the_first_process_directory_as_go_picks_it() {
    let unified = cluster(false);
    let storage = pod("sample-storage-1", "storage", "10.0.1.11", "Running");
    assert_eq!(
        target_data_dir("/var/fdb/data/1", &unified, &storage),
        "/var/fdb/data/1"
    );
    let mut split = cluster(false);
    split.spec.image_type = Some(fdb_shared::api::cluster::ImageType::Split);
    assert_eq!(
        target_data_dir("/var/fdb/data", &split, &storage),
        "/var/fdb/data"
    );
    split.spec.storage_servers_per_pod = Some(2);
    assert_eq!(
        target_data_dir("/var/fdb/data/2", &split, &storage),
        "/var/fdb/data/1"
    );
}

#[test]
fn the_datacenter_must_be_a_plain_word() {
    let mut cluster = cluster(false);
    assert_eq!(data_center(&cluster).unwrap(), "dc2");
    for bad in [None, Some(""), Some("dc2; kill"), Some("dc 2")] {
        cluster.spec.data_center = bad.map(str::to_owned);
        let error = data_center(&cluster).unwrap_err();
        assert!(error.to_string().starts_with("spec.dataCenter"), "{error}");
    }
}
