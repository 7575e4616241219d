//! The unified-image model of the Go operator v2 (its default when `imageType` is unset):
//! the process configuration JSON its ConfigMap holds per class
//! (`GetMonitorProcessConfiguration`, marshalled as `fdb-kubernetes-monitor`'s API
//! declares it), the pod's two containers (`configureContainersForUnifiedImages`), its
//! volumes, and the annotations `fdb-kubernetes-monitor` writes on its pod once it runs a
//! configuration (`UpdateAnnotations`: the file's bytes as read, and the environment its
//! arguments use with `BINARY_DIR`). Read from their sources as facts; our own code.

use serde_json::{Value, json};

use super::*;

/// The monitor image of both containers (the Go operator's unified base image).
const MONITOR_IMAGE: &str = "foundationdb/fdb-kubernetes-monitor";
/// Where the monitor finds the `fdbserver` of its own image's version.
const IMAGE_BINARY_DIR: &str = "/usr/bin";
const MONITOR_LOG: &str = "/var/log/fdb-trace-logs/monitor.log";

/// One argument as the monitor's API declares it, serialized as Go's `json.Marshal`
/// writes it: fields in declaration order, empty ones left out (`omitempty`).
#[derive(Debug, Clone, Default, serde::Serialize)]
struct GoArgument {
    #[serde(rename = "type", skip_serializing_if = "str::is_empty")]
    kind: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    value: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    values: Vec<GoArgument>,
    #[serde(skip_serializing_if = "str::is_empty")]
    source: &'static str,
    #[serde(skip_serializing_if = "is_zero")]
    multiplier: i64,
    #[serde(skip_serializing_if = "is_zero")]
    offset: i64,
}

/// The monitor's process configuration, as Go marshals it.
#[derive(Debug, Clone, serde::Serialize)]
struct GoConfiguration {
    version: String,
    arguments: Vec<GoArgument>,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

fn literal(value: impl Into<String>) -> GoArgument {
    GoArgument {
        value: value.into(),
        ..GoArgument::default()
    }
}

fn environment(source: &'static str) -> GoArgument {
    GoArgument {
        kind: "Environment",
        source,
        ..GoArgument::default()
    }
}

fn process_number(multiplier: i64, offset: i64) -> GoArgument {
    GoArgument {
        kind: "ProcessNumber",
        multiplier,
        offset,
        ..GoArgument::default()
    }
}

fn concatenate(values: Vec<GoArgument>) -> GoArgument {
    GoArgument {
        kind: "Concatenate",
        values,
        ..GoArgument::default()
    }
}

/// `--<name>=[$<variable>]:<4499 + 2 * process number>` (brackets: the unified form).
fn address(name: &str, variable: &'static str) -> GoArgument {
    concatenate(vec![
        literal(format!("--{name}=[")),
        environment(variable),
        literal("]:"),
        process_number(2, 4499),
    ])
}

impl GoV2Cluster {
    /// The ConfigMap value of `fdbmonitor-conf-<class>-json`: Go's `json.Marshal` of the
    /// configuration (fields in declaration order, empty ones left out), one server per
    /// pod, explicit listen address and DNS locality (v2 defaults).
    pub(super) fn process_configuration(&self, class: &str) -> String {
        let locality = |name: &str, variable: &'static str| {
            concatenate(vec![
                literal(format!("--locality_{name}=")),
                environment(variable),
            ])
        };
        let configuration = GoConfiguration {
            version: self.version.clone(),
            arguments: vec![
                literal("--cluster_file=/var/fdb/data/fdb.cluster"),
                literal("--seed_cluster_file=/var/dynamic-conf/fdb.cluster"),
                address("public_address", "FDB_PUBLIC_IP"),
                literal(format!("--class={class}")),
                literal("--logdir=/var/log/fdb-trace-logs"),
                literal(format!("--loggroup={}", self.name)),
                concatenate(vec![
                    literal("--datadir=/var/fdb/data/"),
                    process_number(0, 0),
                ]),
                concatenate(vec![
                    literal("--locality_process_id="),
                    environment("FDB_INSTANCE_ID"),
                    literal("-"),
                    process_number(0, 0),
                ]),
                locality("instance_id", "FDB_INSTANCE_ID"),
                locality("machineid", "FDB_MACHINE_ID"),
                locality("zoneid", "FDB_ZONE_ID"),
                address("listen_address", "FDB_POD_IP"),
                locality("dns_name", "FDB_DNS_NAME"),
            ],
        };
        serde_json::to_string(&configuration).unwrap_or_default()
    }

    /// The annotations the monitor of `group`'s pod wrote after it loaded its
    /// configuration: the file as read, and the variables its arguments use (Go marshals
    /// a map with its keys sorted) with the binary's directory.
    pub(super) fn monitor_annotations(&self, group: &Group) -> [(String, String); 2] {
        let environment = std::collections::BTreeMap::from([
            ("BINARY_DIR", IMAGE_BINARY_DIR.to_owned()),
            ("FDB_DNS_NAME", self.dns_name(&group.id)),
            ("FDB_INSTANCE_ID", group.id.clone()),
            ("FDB_MACHINE_ID", group.node.clone()),
            ("FDB_POD_IP", group.ip.clone()),
            ("FDB_PUBLIC_IP", group.ip.clone()),
            ("FDB_ZONE_ID", group.node.clone()),
        ]);
        [
            (
                "foundationdb.org/launcher-current-configuration".to_owned(),
                self.process_configuration(group.class),
            ),
            (
                "foundationdb.org/launcher-environment".to_owned(),
                json!(environment).to_string(),
            ),
        ]
    }

    /// The monitor image of the cluster's version.
    pub(super) fn monitor_image(&self) -> String {
        format!("{MONITOR_IMAGE}:{}", self.version)
    }

    /// The main container: `fdb-kubernetes-monitor` reading `config.json` from the
    /// ConfigMap mount, with the environment its arguments and its pod client use.
    pub(super) fn monitor_container(&self, group: &Group) -> Value {
        let field = |name: &str, path: &str| json!({"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}});
        let mut env = vec![
            json!({"name": "FDB_CLUSTER_FILE", "value": "/var/dynamic-conf/fdb.cluster"}),
            field("FDB_POD_NAME", "metadata.name"),
            field("FDB_POD_NAMESPACE", "metadata.namespace"),
            json!({"name": "FDB_NETWORK_OPTION_TRACE_LOG_GROUP", "value": self.name}),
            json!({"name": "FDB_NETWORK_OPTION_TRACE_ENABLE", "value": "/var/log/fdb-trace-logs"}),
            field("FDB_NODE_NAME", "spec.nodeName"),
        ];
        env.extend(self.substitution_env(group));
        let amounts = json!({"cpu": "1", "memory": "8Gi"});
        json!({
            "name": "foundationdb",
            "image": self.monitor_image(),
            "imagePullPolicy": "IfNotPresent",
            "args": ["--input-dir", "/var/dynamic-conf", "--log-path", MONITOR_LOG],
            "env": env,
            "volumeMounts": [
                {"name": "data", "mountPath": "/var/fdb/data"},
                {"name": "config-map", "mountPath": "/var/dynamic-conf"},
                {"name": "shared-binaries", "mountPath": "/var/fdb/shared-binaries"},
                {"name": "fdb-trace-logs", "mountPath": "/var/log/fdb-trace-logs"},
            ],
            "resources": {"requests": amounts, "limits": amounts},
            "securityContext": {"readOnlyRootFilesystem": true},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        })
    }

    /// The sidecar-mode container: the same image copying its binaries for upgrades.
    pub(super) fn monitor_sidecar(&self) -> Value {
        let amounts = json!({"cpu": "100m", "memory": "256Mi"});
        json!({
            "name": "foundationdb-kubernetes-sidecar",
            "image": self.monitor_image(),
            "imagePullPolicy": "IfNotPresent",
            "args": [
                "--mode", "sidecar",
                "--output-dir", "/var/fdb/shared-binaries",
                "--main-container-version", self.version,
                "--copy-binary", "fdbserver",
                "--copy-binary", "fdbcli",
                "--log-path", MONITOR_LOG,
            ],
            "volumeMounts": [
                {"name": "shared-binaries", "mountPath": "/var/fdb/shared-binaries"},
                {"name": "fdb-trace-logs", "mountPath": "/var/log/fdb-trace-logs"},
            ],
            "resources": {"requests": amounts, "limits": amounts},
            "securityContext": {"readOnlyRootFilesystem": true},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        })
    }

    /// The volumes of a unified pod, in the Go operator's order.
    pub(super) fn monitor_volumes(&self, group: &Group, data: Value) -> Value {
        json!([
            data,
            {"name": "shared-binaries", "emptyDir": {}},
            {"name": "config-map", "configMap": {
                "name": format!("{}-config", self.name),
                "items": [
                    {"key": format!("fdbmonitor-conf-{}-json", group.class), "path": "config.json"},
                    {"key": "cluster-file", "path": "fdb.cluster"},
                ],
                "defaultMode": 420,
            }},
            {"name": "fdb-trace-logs", "emptyDir": {}},
        ])
    }
}
