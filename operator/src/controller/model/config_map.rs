//! The `<cluster>-config` ConfigMap (docs/controller-model.md, "The `<cluster>-config`
//! ConfigMap"): the cluster file, the running version, the trusted CAs and one fdbmonitor
//! conf template per process class in use, plus what the sidecar must have written from
//! them.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::api::cluster::ImageType;
use fdb_shared::api::{FoundationDBCluster, ProcessClass};
use fdb_shared::cluster_math::desired_process_counts;
use fdb_shared::monitor_conf::render::{MonitorConfParams, monitor_conf_key, render_monitor_conf};
use fdb_shared::monitor_conf::substitute::substitute;
use fdb_shared::validation::config_map_size::{CONFIG_MAP_SIZE_LIMIT, config_map_data_size};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

pub(crate) use super::pod::sha256_hex;
use super::pod::{
    ClusterIdentity, cluster_labels, merged_labels, running_version, servers_per_pod,
};

// The pod model mounts these keys; the ConfigMap is built from the pod model, so they
// live on its side (no import circle) and are re-exported here.
pub(crate) use super::pod::volumes::{
    CA_FILE_KEY, CLUSTER_FILE_KEY, RUNNING_VERSION_KEY, config_map_name,
};

pub(crate) use super::config_map_error::ConfigMapError;

/// The custom parameters of a class: `processes.<class>.customParameters` when the class
/// sets any, else `processes.general.customParameters`.
#[cfg(test)]
pub(crate) fn custom_parameters(cluster: &FoundationDBCluster, class: ProcessClass) -> Vec<String> {
    fdb_shared::monitor_conf::render::class_custom_parameters(&cluster.spec, class).to_vec()
}

fn render_template(
    cluster: &FoundationDBCluster,
    class: ProcessClass,
    servers_per_pod: u32,
) -> Result<String, ConfigMapError> {
    let spec = &cluster.spec;
    if spec.buggify.empty_monitor_conf.unwrap_or(false) {
        return Ok(String::new());
    }
    let cluster_name = cluster.metadata.name.as_deref().unwrap_or_default();
    let mut params = MonitorConfParams::for_spec(spec, cluster_name, class, servers_per_pod);
    params.dual_listen = listens_on_both(cluster);
    render_monitor_conf(&params).map_err(|source| ConfigMapError::Render { class, source })
}

pub(crate) use super::process_config::listens_on_both;

/// The monitor conf template of a class at `servers` per pod (the ConfigMap key a pod of
/// that density mounts), whether or not the connection string is known yet — the
/// ConfigMap holds it only once it is. Empty with `buggify.emptyMonitorConf`.
pub(crate) fn monitor_conf_template(
    cluster: &FoundationDBCluster,
    class: ProcessClass,
    servers: u32,
) -> Result<String, ConfigMapError> {
    render_template(cluster, class, servers)
}

/// The `fdbmonitor.conf` the sidecar of a pod of `class` must have written: the class's
/// template with the sidecar's substitutions (`GET /substitutions`) applied, by the same
/// code the sidecar uses.
pub fn expected_monitor_conf(
    cluster: &FoundationDBCluster,
    class: ProcessClass,
    servers: u32,
    substitutions: &BTreeMap<String, String>,
) -> Result<String, ConfigMapError> {
    let template = monitor_conf_template(cluster, class, servers)?;
    substitute(&template, substitutions)
        .map_err(|source| ConfigMapError::Substitution { class, source })
}

/// Hash of a pod's dynamic configuration, for `foundationdb.org/last-applied-config-map`:
/// SHA-256 hex over the cluster file, a NUL separator and the monitor conf.
pub(crate) fn dynamic_conf_hash(cluster_file: &str, monitor_conf: &str) -> String {
    let mut bytes = Vec::with_capacity(cluster_file.len() + monitor_conf.len() + 1);
    bytes.extend_from_slice(cluster_file.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(monitor_conf.as_bytes());
    sha256_hex(&bytes)
}

/// The monitor conf keys the ConfigMap must hold, with the class and density of each: every
/// class with desired process groups or with groups in the status (pods of a class being
/// removed still mount their key), at the spec's density and at every density still in
/// use according to `status.storageServersPerDisk` / `status.logServersPerDisk`.
pub(crate) fn monitor_conf_keys(
    cluster: &FoundationDBCluster,
) -> BTreeMap<String, (ProcessClass, u32)> {
    let mut classes: BTreeSet<ProcessClass> = desired_process_counts(&cluster.spec)
        .positive()
        .into_keys()
        .collect();
    let status = cluster.status.as_ref();
    if let Some(status) = status {
        classes.extend(
            status
                .process_groups
                .iter()
                .map(|group| group.process_class),
        );
    }
    let mut keys = BTreeMap::new();
    for class in classes {
        let mut densities = BTreeSet::from([servers_per_pod(cluster, class)]);
        let in_use = match (class, status) {
            (ProcessClass::Storage, Some(status)) => status.storage_servers_per_disk.as_slice(),
            (class, Some(status)) if class.is_log_process() => {
                status.log_servers_per_disk.as_slice()
            }
            _ => &[],
        };
        densities.extend(
            in_use
                .iter()
                .filter_map(|n| u32::try_from(*n).ok())
                .filter(|n| *n > 0),
        );
        for density in densities {
            keys.insert(monitor_conf_key(class, density), (class, density));
        }
    }
    keys
}

/// The desired `<cluster>-config` ConfigMap. `connection_string`: the cluster file once
/// known (`None` or empty before: every monitor conf is then empty, so no process starts
/// with a wrong cluster file); `running_version`: default `status.runningVersion`, else
/// `spec.version`. `spec.configMap` data, labels and annotations are merged in; the
/// operator's keys and labels win on conflicts.
pub(crate) fn build_config_map(
    cluster: &FoundationDBCluster,
    connection_string: Option<&str>,
    running_version_override: Option<&str>,
) -> Result<ConfigMap, ConfigMapError> {
    let identity = ClusterIdentity::of(cluster)?;
    let spec = &cluster.spec;
    let user = spec.config_map.clone().unwrap_or_default();
    let connection_string = connection_string.unwrap_or_default();

    let mut data = user.data.unwrap_or_default();
    data.insert(CLUSTER_FILE_KEY.to_owned(), connection_string.to_owned());
    data.insert(
        RUNNING_VERSION_KEY.to_owned(),
        running_version_override
            .unwrap_or_else(|| running_version(cluster))
            .to_owned(),
    );
    if !spec.trusted_cas.is_empty() {
        data.insert(CA_FILE_KEY.to_owned(), spec.trusted_cas.join("\n"));
    }
    let image_types = super::process_config::image_types_in_use(cluster);
    let keys = monitor_conf_keys(cluster);
    if image_types.contains(&ImageType::Split) {
        for (key, (class, density)) in &keys {
            let conf = if connection_string.is_empty() {
                String::new()
            } else {
                render_template(cluster, *class, *density)?
            };
            data.insert(key.clone(), conf);
        }
    }
    if image_types.contains(&ImageType::Unified) {
        let classes: BTreeSet<ProcessClass> = keys.values().map(|(class, _)| *class).collect();
        data.extend(super::process_config::process_config_entries(
            cluster,
            classes,
            !connection_string.is_empty(),
        )?);
    }

    check_size(&data, user.binary_data.as_ref())?;

    let labels = merged_labels(
        cluster,
        user.metadata.labels.as_ref(),
        cluster_labels(cluster),
    );
    Ok(ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(cluster)),
            namespace: Some(identity.namespace),
            labels: Some(labels),
            annotations: user.metadata.annotations,
            owner_references: Some(vec![identity.owner]),
            ..ObjectMeta::default()
        },
        data: Some(data),
        binary_data: user.binary_data,
        immutable: None,
    })
}

/// Refuses data the API server would refuse: more than [`CONFIG_MAP_SIZE_LIMIT`] bytes
/// of keys and values; the error names the largest keys, so the cause can be found.
fn check_size(
    data: &BTreeMap<String, String>,
    binary_data: Option<&BTreeMap<String, k8s_openapi::ByteString>>,
) -> Result<(), ConfigMapError> {
    let size = config_map_data_size(data, binary_data);
    if size <= CONFIG_MAP_SIZE_LIMIT {
        return Ok(());
    }
    let mut sizes: Vec<(usize, &str)> = data
        .iter()
        .map(|(key, value)| (key.len() + value.len(), key.as_str()))
        .collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let largest = sizes
        .iter()
        .take(3)
        .map(|(size, key)| format!("{key}: {size} bytes"))
        .collect::<Vec<_>>()
        .join(", ");
    Err(ConfigMapError::TooLarge { size, largest })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::model::pod::tests::{cluster, group};

    const CONNECTION: &str = "sample:abc123@10.1.0.1:4501,10.1.0.2:4501,10.1.0.3:4501";

    fn data(config_map: &ConfigMap) -> &BTreeMap<String, String> {
        config_map.data.as_ref().unwrap()
    }

    #[test]
    fn keys_for_the_seventeen_group_example() {
        let cluster = cluster(
            "databaseConfiguration: {redundancy_mode: double}\nprocessCounts: {storage: 4, cluster_controller: 1}",
        );
        let config_map = build_config_map(&cluster, Some(CONNECTION), None).unwrap();
        assert_eq!(config_map.metadata.name.as_deref(), Some("sample-config"));
        assert_eq!(config_map.metadata.namespace.as_deref(), Some("fdb"));
        assert_eq!(
            config_map.metadata.labels.as_ref().unwrap(),
            &cluster_labels(&cluster)
        );
        let owner = &config_map.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.controller),
            ("FoundationDBCluster", Some(true))
        );
        let keys: Vec<_> = data(&config_map).keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "cluster-file",
                "fdbmonitor-conf-cluster_controller",
                "fdbmonitor-conf-log",
                "fdbmonitor-conf-stateless",
                "fdbmonitor-conf-storage",
                "running-version",
            ]
        );
        let data = data(&config_map);
        assert_eq!(data["cluster-file"], CONNECTION);
        assert_eq!(data["running-version"], "7.1.57");
        assert_eq!(
            data["fdbmonitor-conf-log"],
            monitor_conf_template(
                &cluster,
                ProcessClass::Log,
                servers_per_pod(&cluster, ProcessClass::Log)
            )
            .unwrap()
        );
        assert!(
            data["fdbmonitor-conf-cluster_controller"].contains("class = cluster_controller\n")
        );
    }

    #[test]
    fn the_storage_conf_is_the_documented_one() {
        let cluster = cluster("routing: {useDNSInClusterFile: false}");
        let expected = "\
[general]
kill_on_configuration_change = false
restart_delay = 60
[fdbserver.1]
command = $BINARY_DIR/fdbserver
cluster_file = /var/fdb/data/fdb.cluster
seed_cluster_file = /var/dynamic-conf/fdb.cluster
public_address = $FDB_PUBLIC_IP:4501
class = storage
logdir = /var/log/fdb-trace-logs
loggroup = sample
datadir = /var/fdb/data
locality_instance_id = $FDB_INSTANCE_ID
locality_machineid = $FDB_MACHINE_ID
locality_zoneid = $FDB_ZONE_ID
listen_address = $FDB_POD_IP:4501
";
        assert_eq!(
            monitor_conf_template(
                &cluster,
                ProcessClass::Storage,
                servers_per_pod(&cluster, ProcessClass::Storage)
            )
            .unwrap(),
            expected
        );
    }

    #[test]
    fn confs_are_empty_until_the_connection_string_is_known() {
        let cluster = cluster("trustedCAs: [ca-one, ca-two]");
        for connection in [None, Some("")] {
            let config_map = build_config_map(&cluster, connection, Some("7.1.55")).unwrap();
            let data = data(&config_map);
            assert_eq!(data["cluster-file"], "");
            assert_eq!(data["running-version"], "7.1.55");
            assert_eq!(data["ca-file"], "ca-one\nca-two");
            for class in ["storage", "log", "stateless"] {
                assert_eq!(data[&format!("fdbmonitor-conf-{class}")], "", "{class}");
            }
        }
    }

    #[test]
    fn parameters_localities_tls_and_user_data() {
        let cluster = cluster(
            r#"logGroup: group-a
dataCenter: dc1
dataHall: hall1
useExplicitListenAddress: false
mainContainer: {enableTls: true, peerVerificationRules: "S.CN=fdb"}
processes:
  general: {customParameters: ["knob_a=1", "knob_b=2"]}
  storage: {customParameters: ["knob_b=3", "knob_c=4"]}
configMap:
  metadata: {labels: {extra: label}, annotations: {note: kept}}
  data: {user-key: value, cluster-file: overridden}
"#,
        );
        assert_eq!(
            custom_parameters(&cluster, ProcessClass::Storage),
            ["knob_b=3", "knob_c=4"],
            "the class's list replaces the general one, as in the Go operator"
        );
        assert_eq!(
            custom_parameters(&cluster, ProcessClass::Log),
            ["knob_a=1", "knob_b=2"]
        );
        let config_map = build_config_map(&cluster, Some(CONNECTION), None).unwrap();
        let data = data(&config_map);
        assert_eq!(data["user-key"], "value");
        assert_eq!(data["cluster-file"], CONNECTION);
        assert_eq!(
            config_map.metadata.labels.as_ref().unwrap()["extra"],
            "label"
        );
        assert_eq!(
            config_map.metadata.annotations.as_ref().unwrap()["note"],
            "kept"
        );
        let storage = &data["fdbmonitor-conf-storage"];
        for line in [
            "public_address = $FDB_PUBLIC_IP:4500:tls\n",
            "loggroup = group-a\n",
            "locality_dcid = dc1\n",
            "locality_data_hall = hall1\n",
            "locality_dns_name = $FDB_DNS_NAME\n",
            "tls_verify_peers = S.CN=fdb\n",
            "knob_b = 3\nknob_c = 4\n",
        ] {
            assert!(storage.contains(line), "missing {line:?} in\n{storage}");
        }
        assert!(!storage.contains("listen_address"));
    }

    #[test]
    fn densities_in_use_and_classes_being_removed_keep_their_keys() {
        let mut cluster = cluster("storageServersPerPod: 2\nprocessCounts: {log: -1}");
        cluster.status =
            Some(serde_json::from_str(r#"{"storageServersPerDisk": [1, 2]}"#).unwrap());
        cluster
            .status
            .as_mut()
            .unwrap()
            .process_groups
            .push(group(ProcessClass::Log, "log-1"));
        let keys: Vec<_> = monitor_conf_keys(&cluster).into_keys().collect();
        assert_eq!(
            keys,
            [
                "fdbmonitor-conf-log",
                "fdbmonitor-conf-stateless",
                "fdbmonitor-conf-storage",
                "fdbmonitor-conf-storage-density-2",
            ]
        );
        let config_map = build_config_map(&cluster, Some(CONNECTION), None).unwrap();
        assert!(data(&config_map)["fdbmonitor-conf-storage-density-2"].contains("[fdbserver.2]"));
        assert!(!data(&config_map)["fdbmonitor-conf-storage"].contains("[fdbserver.2]"));
    }

    #[test]
    fn expected_conf_applies_the_sidecar_substitutions() {
        let cluster = cluster("");
        let mut substitutions: BTreeMap<String, String> = [
            ("FDB_PUBLIC_IP", "10.1.0.7"),
            ("FDB_POD_IP", "10.1.0.7"),
            ("FDB_MACHINE_ID", "node-a"),
            ("FDB_ZONE_ID", "node-a"),
            ("FDB_INSTANCE_ID", "storage-1"),
            ("BINARY_DIR", "/usr/bin"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let err = expected_monitor_conf(&cluster, ProcessClass::Storage, 1, &substitutions);
        assert!(
            matches!(
                &err,
                Err(ConfigMapError::Substitution {
                    class: ProcessClass::Storage,
                    ..
                })
            ),
            "{err:?}"
        );
        substitutions.insert(
            "FDB_DNS_NAME".to_owned(),
            "sample-storage-1.sample.fdb.svc.cluster.local".to_owned(),
        );
        let conf =
            expected_monitor_conf(&cluster, ProcessClass::Storage, 1, &substitutions).unwrap();
        for line in [
            "command = /usr/bin/fdbserver\n",
            "public_address = 10.1.0.7:4501\n",
            "locality_zoneid = node-a\n",
            "locality_dns_name = sample-storage-1.sample.fdb.svc.cluster.local\n",
        ] {
            assert!(conf.contains(line), "missing {line:?} in\n{conf}");
        }
        assert!(!conf.contains('$'));
        let empty = super::super::pod::tests::cluster("buggify: {emptyMonitorConf: true}");
        assert_eq!(
            expected_monitor_conf(&empty, ProcessClass::Storage, 1, &substitutions).unwrap(),
            ""
        );
    }

    #[test]
    fn a_config_map_over_the_api_limit_fails_naming_its_largest_keys() {
        let big = "x".repeat(600 * 1024);
        let large = cluster(&format!(
            "configMap: {{data: {{user-a: {big}, user-b: {big}}}}}"
        ));
        let err = build_config_map(&large, Some(CONNECTION), None).unwrap_err();
        assert!(matches!(err, ConfigMapError::TooLarge { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains("user-a: 614406 bytes") && text.contains("limit of 1048576 bytes"),
            "{text}"
        );
        let fits = cluster(&format!("configMap: {{data: {{user-a: {big}}}}}"));
        assert!(build_config_map(&fits, Some(CONNECTION), None).is_ok());
    }

    #[test]
    fn values_that_would_add_conf_lines_fail_the_render() {
        let cluster = cluster("logGroup: \"g\\n[fdbserver.9]\\ncommand = /bin/sh\"");
        let err = build_config_map(&cluster, Some(CONNECTION), None).unwrap_err();
        assert!(
            matches!(&err, ConfigMapError::Render { source: fdb_shared::monitor_conf::render::RenderError::UnsafeValue { key, .. }, .. } if key == "loggroup"),
            "{err:?}"
        );
    }

    #[test]
    fn hashes_are_stable_and_separate_the_two_files() {
        assert_eq!(dynamic_conf_hash("a", "b"), dynamic_conf_hash("a", "b"));
        assert_ne!(dynamic_conf_hash("ab", ""), dynamic_conf_hash("a", "b"));
        assert_eq!(dynamic_conf_hash("", "").len(), 64);
        let cluster = cluster("");
        let first = build_config_map(&cluster, Some(CONNECTION), None).unwrap();
        assert_eq!(
            first,
            build_config_map(&cluster, Some(CONNECTION), None).unwrap()
        );
    }

    #[test]
    fn unified_clusters_get_the_json_process_configuration_per_class() {
        let unified =
            cluster("imageType: unified\nprocessCounts: {storage: 4, cluster_controller: 1}");
        let config_map = build_config_map(&unified, Some(CONNECTION), None).unwrap();
        let keys: Vec<&str> = data(&config_map)
            .keys()
            .filter(|k| k.starts_with("fdbmonitor-conf-"))
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "fdbmonitor-conf-cluster_controller-json",
                "fdbmonitor-conf-log-json",
                "fdbmonitor-conf-stateless-json",
                "fdbmonitor-conf-storage-json"
            ]
        );
        let storage: fdb_shared::monitor_conf::process_config::ProcessConfiguration =
            serde_json::from_str(&data(&config_map)["fdbmonitor-conf-storage-json"]).unwrap();
        assert_eq!(storage.version, "7.1.57");
        assert!(storage.runs_servers());
        // Before the connection string is known, the monitors start nothing.
        let first = build_config_map(&unified, None, None).unwrap();
        let stopped: fdb_shared::monitor_conf::process_config::ProcessConfiguration =
            serde_json::from_str(&data(&first)["fdbmonitor-conf-storage-json"]).unwrap();
        assert!(!stopped.runs_servers());
    }

    #[test]
    fn a_migration_serves_both_pod_models() {
        let mut migrating = cluster("imageType: unified");
        migrating.status = Some(fdb_shared::api::cluster::FoundationDBClusterStatus {
            image_types: vec!["split".into()],
            ..Default::default()
        });
        let config_map = build_config_map(&migrating, Some(CONNECTION), None).unwrap();
        assert!(data(&config_map).contains_key("fdbmonitor-conf-storage"));
        assert!(data(&config_map).contains_key("fdbmonitor-conf-storage-json"));
        let split = build_config_map(&cluster(""), Some(CONNECTION), None).unwrap();
        assert!(!data(&split).keys().any(|k| k.ends_with("-json")));
    }
}
