use super::*;

fn cluster(processes: serde_json::Value) -> FoundationDBCluster {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps.foundationdb.org/v1beta2",
        "kind": "FoundationDBCluster",
        "metadata": {"name": "sample", "namespace": "tenant-a"},
        "spec": {"version": "7.1.57", "processes": processes},
    }))
    .unwrap()
}

fn restricted() -> PodTemplatePolicy {
    PodTemplatePolicy {
        restrictions: Some(Restrictions::default()),
    }
}

fn fields(error: &PodTemplateRefused) -> Vec<&str> {
    error.violations.iter().map(|v| v.field.as_str()).collect()
}

const CONTAINERS: &str = r#"[{"name": "foundationdb"}]"#;

fn template(spec: serde_json::Value) -> serde_json::Value {
    let mut spec = spec;
    spec["containers"] = serde_json::from_str(CONTAINERS).unwrap();
    serde_json::json!({"podTemplate": {"spec": spec}})
}

#[test]
fn unrestricted_takes_every_template_as_written() {
    let cluster = cluster(serde_json::json!({
        "general": template(serde_json::json!({
            "hostNetwork": true, "hostPID": true, "serviceAccountName": "admin",
            "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
        })),
    }));
    assert_eq!(PodTemplatePolicy::default().check_cluster(&cluster), Ok(()));
}

#[test]
fn restricted_refuses_host_namespaces_accounts_privilege_and_host_paths_naming_each_field() {
    let mut general = template(serde_json::json!({
        "hostNetwork": true, "hostIPC": true, "serviceAccountName": "admin",
        "volumes": [
            {"name": "conf", "configMap": {"name": "x"}},
            {"name": "root", "hostPath": {"path": "/"}},
        ],
    }));
    general["podTemplate"]["spec"]["initContainers"] =
        serde_json::json!([{"name": "init", "securityContext": {"privileged": true}}]);
    let cluster = cluster(serde_json::json!({
        "general": general,
        "storage": template(serde_json::json!({"hostPID": true})),
    }));
    let error = restricted().check_cluster(&cluster).unwrap_err();
    assert_eq!(
        fields(&error),
        [
            "spec.processes.general.podTemplate.spec.hostNetwork",
            "spec.processes.general.podTemplate.spec.hostIPC",
            "spec.processes.general.podTemplate.spec.serviceAccountName",
            "spec.processes.general.podTemplate.spec.volumes[1].hostPath",
            "spec.processes.general.podTemplate.spec.initContainers[0].securityContext.privileged",
            "spec.processes.storage.podTemplate.spec.hostPID",
        ]
    );
    let message = error.to_string();
    assert!(
        message.starts_with("FoundationDBCluster tenant-a/sample"),
        "{message}"
    );
    assert!(message.contains("--allow-host-network"), "{message}");
}

#[test]
fn restricted_takes_the_default_account_and_the_namespace_volume_kinds() {
    let cluster = cluster(serde_json::json!({
        "general": template(serde_json::json!({
            "hostNetwork": false, "serviceAccountName": "default",
            "volumes": [
                {"name": "a", "configMap": {"name": "x"}},
                {"name": "b", "secret": {"secretName": "y"}},
                {"name": "c", "emptyDir": {}},
                {"name": "d", "projected": {"sources": []}},
                {"name": "e", "persistentVolumeClaim": {"claimName": "z"}},
            ],
        })),
    }));
    assert_eq!(restricted().check_cluster(&cluster), Ok(()));
}

#[test]
fn each_flag_relaxes_its_own_rule_only() {
    let mut restrictions = Restrictions {
        allow_host_network: true,
        service_accounts: BTreeSet::from(["fdb".to_owned()]),
        host_paths: vec!["/mnt/fdb".to_owned()],
        ..Restrictions::default()
    };
    restrictions.volume_sources.insert("hostPath".to_owned());
    let policy = PodTemplatePolicy {
        restrictions: Some(restrictions),
    };
    let allowed = cluster(serde_json::json!({
        "general": template(serde_json::json!({
            "hostNetwork": true, "serviceAccountName": "fdb",
            "volumes": [{"name": "data", "hostPath": {"path": "/mnt/fdb/disk-1"}}],
        })),
    }));
    assert_eq!(policy.check_cluster(&allowed), Ok(()));
    let escaping = cluster(serde_json::json!({
        "general": template(serde_json::json!({
            "hostPID": true,
            "volumes": [
                {"name": "up", "hostPath": {"path": "/mnt/fdb/../../etc"}},
                {"name": "near", "hostPath": {"path": "/mnt/fdb-other"}},
            ],
        })),
    }));
    let error = policy.check_cluster(&escaping).unwrap_err();
    assert_eq!(
        fields(&error),
        [
            "spec.processes.general.podTemplate.spec.hostPID",
            "spec.processes.general.podTemplate.spec.volumes[0].hostPath.path",
            "spec.processes.general.podTemplate.spec.volumes[1].hostPath.path",
        ]
    );
}

#[test]
fn a_backups_agent_template_is_judged_too() {
    let backup: FoundationDBBackup = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps.foundationdb.org/v1beta2",
        "kind": "FoundationDBBackup",
        "metadata": {"name": "nightly", "namespace": "tenant-a"},
        "spec": {
            "version": "7.1.57",
            "clusterName": "sample",
            "podTemplateSpec": {"spec": {"hostNetwork": true, "containers": [{"name": "foundationdb"}]}},
        },
    }))
    .unwrap();
    let error = restricted().check_backup(&backup).unwrap_err();
    assert_eq!(fields(&error), ["spec.podTemplateSpec.spec.hostNetwork"]);
    assert!(
        error
            .to_string()
            .starts_with("FoundationDBBackup tenant-a/nightly")
    );
    assert_eq!(PodTemplatePolicy::default().check_backup(&backup), Ok(()));
}
