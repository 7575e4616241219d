//! The backup agents' Deployment: `agentCount` pods running `backup_agent` against the
//! cluster, the cluster file projected from the cluster's ConfigMap, and the user's pod
//! template (credentials and TLS volumes, mounts and environment) merged in.

use std::collections::BTreeMap;

use fdb_shared::api::{FoundationDBBackup, FoundationDBCluster};
use fdb_shared::cluster_math::images::{DEFAULT_MAIN_BASE_IMAGE, select_image};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, Container, EmptyDirVolumeSource, EnvVar, KeyToPath, PodSpec,
    PodTemplateSpec, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::Resource;
use sha2::{Digest, Sha256};

use crate::controller::model::config_map::{CLUSTER_FILE_KEY, config_map_name};

/// The main container of an agent pod (the name the Go operator uses too).
pub const AGENT_CONTAINER: &str = "foundationdb";
/// The program an agent container runs; the simulated world counts pods running it.
pub const AGENT_PROGRAM: &str = "/usr/bin/backup_agent";
/// The label naming the Deployment an agent pod belongs to.
pub const DEPLOYMENT_LABEL: &str = "foundationdb.org/deployment-name";
/// The annotation holding the hash of the Deployment spec the operator last wrote.
pub const SPEC_HASH_ANNOTATION: &str = "foundationdb.org/last-applied-spec-hash";
/// The init container of FoundationDB pods. Agents read the cluster file straight from
/// the ConfigMap, so a template's entry for it (resources, security context) is dropped.
const INIT_CONTAINER: &str = "foundationdb-kubernetes-init";
/// Where the cluster file is mounted in the agent container.
const CLUSTER_FILE_DIR: &str = "/var/dynamic-conf";
/// Where the agents write trace logs.
const LOG_DIR: &str = "/var/log/fdb-trace-logs";

/// What follows the backup's name in its agent Deployment's name.
pub const AGENTS_SUFFIX: &str = "-backup-agents";

/// The name of a backup's agent Deployment.
pub fn deployment_name(backup: &FoundationDBBackup) -> String {
    format!(
        "{}{AGENTS_SUFFIX}",
        backup.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The FoundationDB version the agents run: the backup's `spec.version`, else the
/// cluster's running version, else its spec version.
pub fn agent_version(backup: &FoundationDBBackup, cluster: &FoundationDBCluster) -> String {
    backup
        .spec
        .version
        .clone()
        .filter(|v| !v.is_empty())
        .or_else(|| cluster.status.as_ref()?.running_version.clone())
        .unwrap_or_else(|| cluster.spec.version.clone())
}

/// Adds `item` unless the list has an entry of the same name (the user's wins).
fn add_named<T>(list: &mut Vec<T>, item: T, name: impl Fn(&T) -> &str) {
    let wanted = name(&item).to_owned();
    if !list.iter().any(|existing| name(existing) == wanted) {
        list.push(item);
    }
}

/// The agent container: the user's `foundationdb` container (env, mounts, resources,
/// security context) with the image, program, cluster file and log directory set.
fn agent_container(
    backup: &FoundationDBBackup,
    template: Option<&Container>,
    image: String,
) -> Container {
    let mut container = template.cloned().unwrap_or_default();
    container.name = AGENT_CONTAINER.to_owned();
    container.image = Some(image);
    container.command = Some(vec![AGENT_PROGRAM.to_owned()]);
    let mut args = vec![
        "--log".to_owned(),
        "--logdir".to_owned(),
        LOG_DIR.to_owned(),
    ];
    args.extend(
        backup
            .spec
            .custom_parameters
            .iter()
            .map(|p| format!("--{p}")),
    );
    container.args = Some(args);
    let env = container.env.get_or_insert_with(Vec::new);
    add_named(
        env,
        EnvVar {
            name: "FDB_CLUSTER_FILE".to_owned(),
            value: Some(format!("{CLUSTER_FILE_DIR}/fdb.cluster")),
            ..EnvVar::default()
        },
        |e| &e.name,
    );
    let mounts = container.volume_mounts.get_or_insert_with(Vec::new);
    for (name, path) in [("config-map", CLUSTER_FILE_DIR), ("logs", LOG_DIR)] {
        add_named(
            mounts,
            VolumeMount {
                name: name.to_owned(),
                mount_path: path.to_owned(),
                read_only: Some(name == "config-map"),
                ..VolumeMount::default()
            },
            |m| &m.name,
        );
    }
    container
}

/// The agent pods' spec: the user's template with the agent container first (built over
/// the user's own `foundationdb` container), the cluster file and log volumes, and no
/// init container of ours.
fn agent_pod_spec(
    backup: &FoundationDBBackup,
    cluster: &FoundationDBCluster,
    template: &PodTemplateSpec,
    image: String,
) -> PodSpec {
    let mut pod_spec: PodSpec = template.spec.clone().unwrap_or_default();
    let user_main = pod_spec
        .containers
        .iter()
        .find(|c| c.name == AGENT_CONTAINER)
        .cloned();
    let mut containers = vec![agent_container(backup, user_main.as_ref(), image)];
    containers.extend(
        pod_spec
            .containers
            .iter()
            .filter(|c| c.name != AGENT_CONTAINER)
            .cloned(),
    );
    pod_spec.containers = containers;
    if let Some(init) = pod_spec.init_containers.as_mut() {
        init.retain(|c| c.name != INIT_CONTAINER);
        if init.is_empty() {
            pod_spec.init_containers = None;
        }
    }
    let volumes = pod_spec.volumes.get_or_insert_with(Vec::new);
    add_named(
        volumes,
        Volume {
            name: "config-map".to_owned(),
            config_map: Some(ConfigMapVolumeSource {
                name: config_map_name(cluster),
                items: Some(vec![KeyToPath {
                    key: CLUSTER_FILE_KEY.to_owned(),
                    path: "fdb.cluster".to_owned(),
                    mode: None,
                }]),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        },
        |v| &v.name,
    );
    add_named(
        volumes,
        Volume {
            name: "logs".to_owned(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        },
        |v| &v.name,
    );
    pod_spec
}

/// The desired agent Deployment of `backup` for `cluster`.
pub fn desired_deployment(
    backup: &FoundationDBBackup,
    cluster: &FoundationDBCluster,
) -> Deployment {
    let name = deployment_name(backup);
    let namespace = backup.metadata.namespace.clone();
    let version = agent_version(backup, cluster);
    let image = select_image(
        &backup.spec.main_container.image_configs,
        &version,
        DEFAULT_MAIN_BASE_IMAGE,
        "",
    );
    let template = backup.spec.pod_template_spec.clone().unwrap_or_default();
    let pod_spec = agent_pod_spec(backup, cluster, &template, image);
    let mut labels: BTreeMap<String, String> = template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(DEPLOYMENT_LABEL.to_owned(), name.clone());
    let metadata = backup
        .spec
        .backup_deployment_metadata
        .clone()
        .unwrap_or_default();
    let mut deployment_labels = metadata.labels.clone().unwrap_or_default();
    deployment_labels.insert(DEPLOYMENT_LABEL.to_owned(), name.clone());
    let owner = backup
        .controller_owner_ref(&())
        .map(|mut owner: OwnerReference| {
            owner.block_owner_deletion = Some(true);
            owner
        });
    let mut deployment = Deployment {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace,
            labels: Some(deployment_labels),
            annotations: metadata.annotations.clone(),
            owner_references: owner.map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(backup.spec.agent_count().max(0)),
            selector: LabelSelector {
                match_labels: Some([(DEPLOYMENT_LABEL.to_owned(), name)].into()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    annotations: template
                        .metadata
                        .as_ref()
                        .and_then(|m| m.annotations.clone()),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod_spec),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    };
    let hash = spec_hash(&deployment);
    deployment
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(SPEC_HASH_ANNOTATION.to_owned(), hash);
    deployment
}

/// A hash of the Deployment's spec (what the operator compares to decide on an update).
pub fn spec_hash(deployment: &Deployment) -> String {
    let text = serde_json::to_string(&deployment.spec).unwrap_or_default();
    hex::encode(&Sha256::digest(text.as_bytes())[..8])
}

/// Whether the live Deployment is the desired one (by the spec hash the operator wrote).
pub fn is_current(live: &Deployment, desired: &Deployment) -> bool {
    let hash = |d: &Deployment| {
        d.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SPEC_HASH_ANNOTATION).cloned())
    };
    hash(live).is_some() && hash(live) == hash(desired)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parts of the Go operator's backup sample that shape the Deployment.
    const SAMPLE: &str = r#"
apiVersion: apps.foundationdb.org/v1beta2
kind: FoundationDBBackup
metadata: {name: test-cluster, namespace: default}
spec:
  blobStoreConfiguration:
    accountName: seaweedfs@seaweedfs:8333
    urlParameters: [secure_connection=0]
  clusterName: test-cluster
  imageType: unified
  podTemplateSpec:
    spec:
      containers:
      - name: foundationdb
        env:
        - {name: FDB_BLOB_CREDENTIALS, value: /var/backup-credentials/credentials}
        - {name: FDB_TLS_CERTIFICATE_FILE, value: /tmp/fdb-certs/tls.crt}
        volumeMounts:
        - {mountPath: /tmp/fdb-certs, name: fdb-certs}
        - {mountPath: /var/backup-credentials, name: backup-credentials}
      initContainers:
      - name: foundationdb-kubernetes-init
        securityContext: {runAsUser: 0}
      volumes:
      - name: backup-credentials
        secret: {secretName: backup-credentials}
      - name: fdb-certs
        secret: {secretName: fdb-kubernetes-operator-secrets}
  snapshotPeriodSeconds: 3600
  version: 7.3.69
"#;

    fn backup(yaml: &str) -> FoundationDBBackup {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    fn cluster() -> FoundationDBCluster {
        serde_yaml_ng::from_str(
            "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\n\
             metadata: {name: test-cluster, namespace: default}\nspec: {version: 7.1.57}\n",
        )
        .unwrap()
    }

    #[test]
    fn the_go_sample_gets_two_agents_with_its_credentials_and_the_cluster_file() {
        let backup = backup(SAMPLE);
        let deployment = desired_deployment(&backup, &cluster());
        let spec = deployment.spec.as_ref().unwrap();
        assert_eq!(spec.replicas, Some(2));
        assert_eq!(
            deployment.metadata.name.as_deref(),
            Some("test-cluster-backup-agents")
        );
        let pod = spec.template.spec.as_ref().unwrap();
        assert!(pod.init_containers.is_none());
        let main = &pod.containers[0];
        assert_eq!(
            main.image.as_deref(),
            Some("foundationdb/foundationdb:7.3.69")
        );
        assert_eq!(
            main.command.as_deref(),
            Some(&[AGENT_PROGRAM.to_owned()][..])
        );
        let env: Vec<&str> = main.env.iter().flatten().map(|e| e.name.as_str()).collect();
        assert!(env.contains(&"FDB_BLOB_CREDENTIALS"), "{env:?}");
        assert!(env.contains(&"FDB_CLUSTER_FILE"), "{env:?}");
        let mounts: Vec<&str> = main
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| m.name.as_str())
            .collect();
        assert_eq!(
            mounts,
            ["fdb-certs", "backup-credentials", "config-map", "logs"]
        );
        let volumes = pod.volumes.as_ref().unwrap();
        let config = volumes.iter().find(|v| v.name == "config-map").unwrap();
        assert_eq!(
            config.config_map.as_ref().map(|c| c.name.as_str()),
            Some("test-cluster-config")
        );
        assert!(is_current(
            &deployment,
            &desired_deployment(&backup, &cluster())
        ));
        let mut more = backup.clone();
        more.spec.agent_count = Some(3);
        assert!(!is_current(
            &deployment,
            &desired_deployment(&more, &cluster())
        ));
    }
}
