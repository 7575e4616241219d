//! A snapshot of a cluster as the Go `fdb-kubernetes-operator` v2 (2.33) leaves it once
//! Reconciled, split image or unified (its default): the objects and the `status json` a
//! capture of such a cluster holds, for take-over scenarios (issues 21 and 22) and
//! benchmarks.
//!
//! Built from the Go operator's models, learnt from its source (`internal/pod_models.go`,
//! `configmap_helper.go`, `monitor_conf.go`, `service_helper.go`, `deprecations.go`) as
//! facts; this is our own code. What it writes, as the Go operator does with a spec that
//! sets only the version, `redundancy_mode: double` and, for a split cluster,
//! `imageType: split` (unset, v2 builds unified pods: [`unified`]):
//! - its default process counts (3 storage, 4 log, 9 stateless), process group IDs
//!   `<class>-<n>`, pods `<cluster>-<id>`, PVCs `<pod>-data` for storage and log;
//! - pods of its split-image model: the main container runs `sh -c "fdbmonitor ... >>
//!   log"` with only `FDB_CLUSTER_FILE` in its environment, the sidecar and init
//!   containers copy the files and substitute `FDB_POD_IP` (explicit listen address, a v2
//!   default) and `FDB_DNS_NAME` (DNS names in the cluster file, a v2 default); default
//!   resources (1 CPU / 8Gi main, 100m / 256Mi sidecars), read-only root file systems, a
//!   preferred anti-affinity per class on the hostname, `hostname`/`subdomain` for the
//!   headless service;
//! - its labels and annotations: its own `last-applied-spec` hash, `public-ip-source`,
//!   `image-type`, `ip-family`, `last-applied-config-map`, `current-node`;
//! - its ConfigMap (cluster file, running version, one monitor conf per class as its
//!   `GetMonitorConf` renders it) and its headless Service;
//! - the cluster's status as it writes it: process groups with addresses and fault
//!   domains, `requiredAddresses`, `generations`, `health`, `imageTypes`, the servers per
//!   disk, `locks`, the desired and reconciled group counts.
//!
//! The fault domain is the node (the Go default, `kubernetes.io/hostname`); the pods are
//! spread over `zones` nodes, each node one zone.

use serde_json::{Value, json};

use crate::kube::service_account::token_volume_suffix;
use crate::kube::{admission, core_defaults};

mod pods;
mod unified;

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct GoV2Cluster {
    /// The cluster's name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// The FoundationDB version it runs.
    pub version: String,
    /// Nodes (each a zone) the pods are spread over.
    pub zones: usize,
    /// Storage process groups (the Go default for double redundancy is 3).
    pub storage: usize,
    /// Bytes each storage process holds (`kvstore_used_bytes` in `status json`).
    pub storage_bytes: i64,
    /// Unified-image pods (`imageType` unset, the v2 default) instead of split ones
    /// (`imageType: split`).
    pub unified: bool,
}

impl Default for GoV2Cluster {
    fn default() -> Self {
        Self {
            name: "go".to_owned(),
            namespace: "default".to_owned(),
            version: "7.1.57".to_owned(),
            zones: 3,
            storage: 3,
            storage_bytes: 1 << 30,
            unified: false,
        }
    }
}

/// The capture: the objects (as the API server returns them) and `status json`.
#[derive(Debug, Clone, PartialEq)]
pub struct GoV2Snapshot {
    /// Nodes, the cluster, its ConfigMap, Service, PVCs and pods.
    pub objects: Vec<Value>,
    /// The database's `status json`.
    pub status: Value,
}

/// One process group of the generated cluster.
struct Group {
    id: String,
    class: &'static str,
    node: String,
    ip: String,
}

const CLUSTER_LABEL: &str = "foundationdb.org/fdb-cluster-name";
const CLASS_LABEL: &str = "foundationdb.org/fdb-process-class";
const GROUP_LABEL: &str = "foundationdb.org/fdb-process-group-id";
/// The Go operator's default log processes for double redundancy (logs 3 + F 1).
const GO_LOG_COUNT: usize = 4;
/// The Go operator's default stateless processes for double redundancy.
const GO_STATELESS_COUNT: usize = 9;
const UID_PREFIX: &str = "6f1c0000-0000-4000-8000-";
const CREATED: &str = "2026-01-05T09:00:00Z";

impl GoV2Cluster {
    fn pod_name(&self, id: &str) -> String {
        format!("{}-{id}", self.name)
    }

    fn dns_name(&self, id: &str) -> String {
        format!(
            "{}.{}.{}.svc.cluster.local",
            self.pod_name(id),
            self.name,
            self.namespace
        )
    }

    fn groups(&self) -> Vec<Group> {
        let counts = [
            ("storage", self.storage),
            ("log", GO_LOG_COUNT),
            ("stateless", GO_STATELESS_COUNT),
        ];
        let mut groups = Vec::new();
        for (class, count) in counts {
            for n in 1..=count {
                let index = groups.len();
                groups.push(Group {
                    id: format!("{class}-{n}"),
                    class,
                    node: format!("node-{}", index % self.zones.max(1) + 1),
                    ip: format!("10.7.{}.{}", index / 250, index % 250 + 2),
                });
            }
        }
        groups
    }

    fn uid(index: usize) -> String {
        format!("{UID_PREFIX}{index:012}")
    }

    /// The cluster file: the first storage process of each of the first three zones,
    /// by DNS name.
    fn connection_string(&self, groups: &[Group]) -> String {
        let mut coordinators: Vec<&Group> = Vec::new();
        for group in groups {
            if coordinators.len() < 3 && !coordinators.iter().any(|c| c.node == group.node) {
                coordinators.push(group);
            }
        }
        let addresses: Vec<String> = coordinators
            .iter()
            .map(|g| format!("{}:4501", self.dns_name(&g.id)))
            .collect();
        format!("{}:GoV2Gen0@{}", self.name, addresses.join(","))
    }

    /// Generates the snapshot.
    pub fn generate(&self) -> GoV2Snapshot {
        let groups = self.groups();
        let connection = self.connection_string(&groups);
        let mut objects = Vec::new();
        for n in 1..=self.zones.max(1) {
            objects.push(node(&format!("node-{n}"), n));
        }
        objects.push(self.cluster(&groups, &connection));
        objects.push(self.config_map(&connection));
        let mut service = self.headless_service();
        core_defaults::default_service(&mut service);
        objects.push(service);
        // As a real API server returns them: with what defaulting and admission added.
        for (index, group) in groups.iter().enumerate() {
            if group.class != "stateless" {
                let mut claim = self.pvc(group, index);
                core_defaults::default_claim(&mut claim, Some("standard"));
                objects.push(claim);
            }
            let mut pod = self.pod(group, index);
            let serial = u64::try_from(index).unwrap_or(u64::MAX);
            admission::admit_pod(&mut pod, &token_volume_suffix(serial));
            objects.push(pod);
        }
        GoV2Snapshot {
            objects,
            status: self.status_json(&groups, &connection),
        }
    }

    fn owner(&self) -> Value {
        json!([{
            "apiVersion": "apps.foundationdb.org/v1beta2",
            "kind": "FoundationDBCluster",
            "name": self.name,
            "uid": Self::uid(0),
            "controller": true,
        }])
    }

    fn labels(&self, group: Option<&Group>) -> Value {
        let mut labels = json!({CLUSTER_LABEL: self.name});
        if let Some(group) = group {
            labels[CLASS_LABEL] = json!(group.class);
            labels[GROUP_LABEL] = json!(group.id);
        }
        labels
    }

    /// `split` or `unified`.
    fn image_type(&self) -> &'static str {
        if self.unified { "unified" } else { "split" }
    }

    fn cluster(&self, groups: &[Group], connection: &str) -> Value {
        let mut spec = json!({
            "version": self.version,
            "databaseConfiguration": {"redundancy_mode": "double"},
        });
        if !self.unified {
            // Unset, the Go operator v2 builds unified pods.
            spec["imageType"] = json!("split");
        }
        let process_groups: Vec<Value> = groups
            .iter()
            .map(|g| {
                json!({
                    "processGroupID": g.id,
                    "processClass": g.class,
                    "addresses": [g.ip],
                    "faultDomain": g.node,
                })
            })
            .collect();
        json!({
            "apiVersion": "apps.foundationdb.org/v1beta2",
            "kind": "FoundationDBCluster",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "uid": Self::uid(0),
                "generation": 1,
                "creationTimestamp": CREATED,
            },
            "spec": spec,
            "status": {
                "configured": true,
                "connectionString": connection,
                "runningVersion": self.version,
                "databaseConfiguration": database_configuration(),
                "generations": {"reconciled": 1},
                "health": {
                    "available": true,
                    "healthy": true,
                    "fullReplication": true,
                },
                "requiredAddresses": {"nonTLS": true},
                "hasListenIPsForAllPods": true,
                "imageTypes": [self.image_type()],
                "storageServersPerDisk": [1],
                "logServersPerDisk": [1],
                "processGroups": process_groups,
                "locks": {},
                "maintenanceModeInfo": {},
                "desiredProcessGroups": groups.len(),
                "reconciledProcessGroups": groups.len(),
            },
        })
    }

    /// The monitor conf the Go operator's `GetMonitorConf` renders for one class (split
    /// image, one server per pod, explicit listen address, DNS locality).
    fn monitor_conf(&self, class: &str) -> String {
        [
            "[general]",
            "kill_on_configuration_change = false",
            "restart_delay = 60",
            "[fdbserver.1]",
            "command = $BINARY_DIR/fdbserver",
            "cluster_file = /var/fdb/data/fdb.cluster",
            "seed_cluster_file = /var/dynamic-conf/fdb.cluster",
            "public_address = $FDB_PUBLIC_IP:4501",
            &format!("class = {class}"),
            "logdir = /var/log/fdb-trace-logs",
            &format!("loggroup = {}", self.name),
            "datadir = /var/fdb/data",
            "locality_instance_id = $FDB_INSTANCE_ID",
            "locality_machineid = $FDB_MACHINE_ID",
            "locality_zoneid = $FDB_ZONE_ID",
            "listen_address = $FDB_POD_IP:4501",
            "locality_dns_name = $FDB_DNS_NAME",
        ]
        .join("\n")
    }

    fn config_map(&self, connection: &str) -> Value {
        let mut data = json!({
            "cluster-file": connection,
            "running-version": self.version,
        });
        for class in ["storage", "log", "stateless"] {
            if self.unified {
                data[format!("fdbmonitor-conf-{class}-json")] =
                    json!(self.process_configuration(class));
            } else {
                data[format!("fdbmonitor-conf-{class}")] = json!(self.monitor_conf(class));
            }
        }
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": format!("{}-config", self.name),
                "namespace": self.namespace,
                "uid": Self::uid(1),
                "creationTimestamp": CREATED,
                "labels": self.labels(None),
                "ownerReferences": self.owner(),
            },
            "data": data,
        })
    }

    fn headless_service(&self) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "uid": Self::uid(2),
                "creationTimestamp": CREATED,
                "labels": self.labels(None),
                "ownerReferences": self.owner(),
            },
            "spec": {
                "clusterIP": "None",
                "clusterIPs": ["None"],
                "type": "ClusterIP",
                "selector": self.labels(None),
            },
        })
    }

    fn pvc(&self, group: &Group, index: usize) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": format!("{}-data", self.pod_name(&group.id)),
                "namespace": self.namespace,
                "uid": Self::uid(1000 + index),
                "creationTimestamp": CREATED,
                "labels": self.labels(Some(group)),
                "annotations": {
                    "foundationdb.org/last-applied-spec": "5b0f3e9e2d1c8a7f6e5d4c3b2a190817",
                },
                "ownerReferences": self.owner(),
            },
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "128G"}},
                "volumeMode": "Filesystem",
                "volumeName": format!("pv-{}", self.pod_name(&group.id)),
            },
            "status": {
                "phase": "Bound",
                "accessModes": ["ReadWriteOnce"],
                "capacity": {"storage": "128G"},
            },
        })
    }

    /// The `status json` entry of the `index`th process listed, for `group`.
    fn process_json(&self, group: &Group, index: usize, roles: Vec<Value>) -> Value {
        // The unified configuration passes `--locality_process_id=<group>-<n>`.
        let process_id_locality = if self.unified {
            format!("{}-1", group.id)
        } else {
            format!("{:032x}", index + 1)
        };
        json!({
            "address": format!("{}:4501", group.ip),
            "class_type": group.class,
            "class_source": "command_line",
            "version": self.version,
            "excluded": false,
            "fault_domain": group.node,
            "locality": {
                "instance_id": group.id,
                "machineid": group.node,
                "zoneid": group.node,
                "dns_name": self.dns_name(&group.id),
                "processid": process_id_locality,
            },
            "roles": roles,
        })
    }

    /// `status json` of the database: its configuration, coordinators, processes (with
    /// their localities, command lines and roles) and the data of each storage process.
    fn status_json(&self, groups: &[Group], connection: &str) -> Value {
        let mut processes = serde_json::Map::new();
        let mut stateless_roles = [
            "cluster_controller",
            "master",
            "grv_proxy",
            "commit_proxy",
            "commit_proxy",
            "resolver",
            "ratekeeper",
            "data_distributor",
        ]
        .into_iter();
        let mut logs = 0;
        // From the last group back: the roles sit where a fresh recruitment (lowest
        // addresses first) would not put them, as roles of a long-lived cluster do.
        for group in groups.iter().rev() {
            let roles: Vec<Value> = match group.class {
                "storage" => {
                    vec![json!({"role": "storage", "kvstore_used_bytes": self.storage_bytes})]
                }
                "log" if logs < 3 => {
                    logs += 1;
                    vec![json!({"role": "log", "kvstore_used_bytes": 1 << 20})]
                }
                "stateless" => stateless_roles
                    .next()
                    .map(|role| json!({"role": role}))
                    .into_iter()
                    .collect(),
                _ => Vec::new(),
            };
            let process_id = format!("{:032x}", groups.len() * 7919 + processes.len());
            let process = self.process_json(group, processes.len(), roles);
            processes.insert(process_id, process);
        }
        let coordinators: Vec<Value> = connection
            .split('@')
            .nth(1)
            .unwrap_or_default()
            .split(',')
            .map(|address| json!({"address": address, "reachable": true}))
            .collect();
        let mut configuration = database_configuration();
        configuration["excluded_servers"] = json!([]);
        json!({
            "client": {
                "coordinators": {"coordinators": coordinators, "quorum_reachable": true},
                "database_status": {"available": true, "healthy": true},
            },
            "cluster": {
                "connection_string": connection,
                "configuration": configuration,
                "processes": processes,
                "clients": {"count": 0, "supported_versions": []},
                "data": {"state": {"healthy": true, "name": "healthy"}},
                "database_available": true,
            },
        })
    }
}

/// The database configuration the Go operator's status and the database both show:
/// double redundancy with the Go operator's default counts.
fn database_configuration() -> Value {
    json!({
        "redundancy_mode": "double",
        "storage_engine": "ssd-2",
        "usable_regions": 1,
        "logs": 3,
        "proxies": 3,
        "resolvers": 1,
        "log_routers": -1,
        "remote_logs": -1,
    })
}

fn node(name: &str, index: usize) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": format!("{UID_PREFIX}{:012}", 900 + index),
            "creationTimestamp": CREATED,
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": format!("zone-{index}"),
            },
        },
        "spec": {},
        "status": {
            "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
            "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::snapshot::SnapshotSpec;

    #[test]
    fn the_go_v2_snapshot_holds_together() {
        let snapshot = GoV2Cluster::default().generate();
        let spec = SnapshotSpec {
            objects: Value::Array(snapshot.objects.clone()),
            status: Some(snapshot.status.clone()),
            cluster: None,
        };
        let captured = spec.check().unwrap_or_else(|(f, m)| panic!("{f}: {m}"));
        let pods = captured
            .objects
            .iter()
            .filter(|o| o["kind"] == "Pod")
            .count();
        assert_eq!(pods, 16);
        let connection = captured.cluster["status"]["connectionString"]
            .as_str()
            .unwrap();
        assert!(connection.contains(".go.default.svc.cluster.local:4501"));
    }

    #[test]
    fn the_go_unified_snapshot_holds_together_and_its_json_is_what_we_would_write() {
        let generator = GoV2Cluster {
            unified: true,
            ..GoV2Cluster::default()
        };
        let snapshot = generator.generate();
        let spec = SnapshotSpec {
            objects: Value::Array(snapshot.objects.clone()),
            status: Some(snapshot.status.clone()),
            cluster: None,
        };
        let captured = spec.check().unwrap_or_else(|(f, m)| panic!("{f}: {m}"));
        assert_eq!(captured.cluster["spec"].get("imageType"), None);
        assert_eq!(captured.cluster["status"]["imageTypes"], json!(["unified"]));
        let cluster: fdb_shared::api::FoundationDBCluster =
            serde_json::from_value(captured.cluster.clone()).unwrap();
        let config_map = captured
            .objects
            .iter()
            .find(|o| o["kind"] == "ConfigMap")
            .unwrap();
        // The Go operator's bytes are the ones this operator writes for the same spec:
        // taking the cluster over rewrites no ConfigMap key.
        for class in [
            fdb_shared::api::ProcessClass::Storage,
            fdb_shared::api::ProcessClass::Log,
            fdb_shared::api::ProcessClass::Stateless,
        ] {
            let ours =
                fdb_operator::controller::desired_process_configuration(&cluster, class, true);
            let key = format!("fdbmonitor-conf-{class}-json");
            assert_eq!(
                config_map["data"][&key].as_str().unwrap(),
                serde_json::to_string(&ours).unwrap(),
                "{key}"
            );
        }
        let pod = captured
            .objects
            .iter()
            .find(|o| o["kind"] == "Pod")
            .unwrap();
        let annotations = &pod["metadata"]["annotations"];
        assert_eq!(annotations["foundationdb.org/image-type"], "unified");
        let environment: std::collections::BTreeMap<String, String> = serde_json::from_str(
            annotations["foundationdb.org/launcher-environment"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(environment["BINARY_DIR"], "/usr/bin");
        assert!(pod["spec"].get("initContainers").is_none());
    }
}
