//! The pods of the Go operator v2 cluster model: main container, sidecar and init
//! container as its `pod_models.go` builds them for split images, or the monitor's two
//! containers for unified ones ([`super::unified`]) (read as facts, written here).

use serde_json::{Value, json};

use super::*;

impl GoV2Cluster {
    /// The environment the Go operator gives the sidecar and init containers for the
    /// monitor conf's variables (`getEnvForMonitorConfigSubstitution` with the v2
    /// defaults, then the DNS name).
    pub(super) fn substitution_env(&self, group: &Group) -> Vec<Value> {
        let field = |name: &str, path: &str| json!({"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}});
        vec![
            field("FDB_PUBLIC_IP", "status.podIP"),
            field("FDB_POD_IP", "status.podIP"),
            field("FDB_MACHINE_ID", "spec.nodeName"),
            field("FDB_ZONE_ID", "spec.nodeName"),
            json!({"name": "FDB_INSTANCE_ID", "value": group.id}),
            json!({"name": "FDB_DNS_NAME", "value": self.dns_name(&group.id)}),
        ]
    }

    pub(super) fn sidecar_args(&self, init: bool) -> Vec<String> {
        let mut args: Vec<String> = [
            "--copy-file",
            "fdb.cluster",
            "--input-monitor-conf",
            "fdbmonitor.conf",
            "--copy-binary",
            "fdbserver",
            "--copy-binary",
            "fdbcli",
            "--main-container-version",
            &self.version,
            "--substitute-variable",
            "FDB_POD_IP",
            "--substitute-variable",
            "FDB_DNS_NAME",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        if init {
            args.push("--init-mode".to_owned());
        }
        args
    }

    pub(super) fn sidecar(&self, group: &Group, init: bool) -> Value {
        let mut env = self.substitution_env(group);
        if !init {
            // The Go operator always sets the peer rules, empty without TLS.
            env.push(json!({"name": "FDB_TLS_VERIFY_PEERS", "value": ""}));
        }
        let amounts = json!({"cpu": "100m", "memory": "256Mi"});
        let mut container = json!({
            "name": if init { "foundationdb-kubernetes-init" } else { "foundationdb-kubernetes-sidecar" },
            "image": format!("foundationdb/foundationdb-kubernetes-sidecar:{}-1", self.version),
            "imagePullPolicy": "IfNotPresent",
            "args": self.sidecar_args(init),
            "env": env,
            "volumeMounts": [
                {"name": "config-map", "mountPath": "/var/input-files"},
                {"name": "dynamic-conf", "mountPath": "/var/output-files"},
            ],
            "resources": {"requests": amounts, "limits": amounts},
            "securityContext": {"readOnlyRootFilesystem": true},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        });
        if !init {
            container["livenessProbe"] = json!({
                "tcpSocket": {"port": 8080},
                "timeoutSeconds": 1,
                "periodSeconds": 30,
                "failureThreshold": 5,
                "successThreshold": 1,
            });
        }
        container
    }

    pub(super) fn main_container(&self) -> Value {
        let amounts = json!({"cpu": "1", "memory": "8Gi"});
        json!({
            "name": "foundationdb",
            "image": format!("foundationdb/foundationdb:{}", self.version),
            "imagePullPolicy": "IfNotPresent",
            "command": ["sh", "-c"],
            "args": [format!(
                "fdbmonitor --conffile /var/dynamic-conf/fdbmonitor.conf --lockfile \
                 /var/dynamic-conf/fdbmonitor.lockfile --loggroup {} >> \
                 /var/log/fdb-trace-logs/fdbmonitor-$(date '+%Y-%m-%d').log 2>&1",
                self.name
            )],
            "env": [{"name": "FDB_CLUSTER_FILE", "value": "/var/dynamic-conf/fdb.cluster"}],
            "volumeMounts": [
                {"name": "data", "mountPath": "/var/fdb/data"},
                {"name": "dynamic-conf", "mountPath": "/var/dynamic-conf"},
                {"name": "fdb-trace-logs", "mountPath": "/var/log/fdb-trace-logs"},
            ],
            "resources": {"requests": amounts, "limits": amounts},
            "securityContext": {"readOnlyRootFilesystem": true},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        })
    }

    pub(super) fn pod(&self, group: &Group, index: usize) -> Value {
        let pod_name = self.pod_name(&group.id);
        let data = if group.class == "stateless" {
            json!({"name": "data", "emptyDir": {}})
        } else {
            json!({"name": "data", "persistentVolumeClaim": {"claimName": format!("{pod_name}-data")}})
        };
        let mut selector = self.labels(None);
        selector[CLASS_LABEL] = json!(group.class);
        let (main_image, sidecar_image) = if self.unified {
            (self.monitor_image(), self.monitor_image())
        } else {
            (
                format!("foundationdb/foundationdb:{}", self.version),
                format!(
                    "foundationdb/foundationdb-kubernetes-sidecar:{}-1",
                    self.version
                ),
            )
        };
        let mut pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": self.namespace,
                "uid": Self::uid(2000 + index),
                "creationTimestamp": CREATED,
                "labels": self.labels(Some(group)),
                "annotations": Self::split_annotations(group, index),
                "ownerReferences": self.owner(),
            },
            "spec": {
                "initContainers": [self.sidecar(group, true)],
                "containers": [self.main_container(), self.sidecar(group, false)],
                "volumes": [
                    data,
                    {"name": "dynamic-conf", "emptyDir": {}},
                    {"name": "config-map", "configMap": {
                        "name": format!("{}-config", self.name),
                        "items": [
                            {"key": format!("fdbmonitor-conf-{}", group.class), "path": "fdbmonitor.conf"},
                            {"key": "cluster-file", "path": "fdb.cluster"},
                        ],
                        "defaultMode": 420,
                    }},
                    {"name": "fdb-trace-logs", "emptyDir": {}},
                ],
                "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                    "weight": 1,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": selector},
                    },
                }]}},
                "hostname": pod_name,
                "subdomain": self.name,
                "nodeName": group.node,
                "restartPolicy": "Always",
                "dnsPolicy": "ClusterFirst",
                "schedulerName": "default-scheduler",
                "terminationGracePeriodSeconds": 30,
                "securityContext": {},
                "tolerations": [
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                     "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                     "effect": "NoExecute", "tolerationSeconds": 300},
                ],
            },
            "status": Self::pod_status(group, main_image, sidecar_image),
        });
        if self.unified {
            self.make_unified(&mut pod, group);
        }
        pod
    }

    /// The annotations the Go operator writes on a split pod.
    fn split_annotations(group: &Group, index: usize) -> Value {
        json!({
            // The Go operator's own hash of the spec it built.
            "foundationdb.org/last-applied-spec":
                format!("{:064x}", 0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(index as u64 + 1)),
            "foundationdb.org/last-applied-config-map":
                "0f9c2d7e5b3a18466c4e2a0d9b8f7e6d5c4b3a29180716253443526170819203",
            "foundationdb.org/public-ip-source": "pod",
            "foundationdb.org/image-type": "split",
            "foundationdb.org/ip-family": "0",
            "foundationdb.org/current-node": group.node,
        })
    }

    /// A running pod's status as the kubelet reported it.
    fn pod_status(group: &Group, main_image: String, sidecar_image: String) -> Value {
        let container_status = |name: &str, image: String| {
            json!({"name": name, "image": image, "ready": true, "restartCount": 0,
                   "started": true, "state": {"running": {"startedAt": CREATED}}})
        };
        let containers = ["foundationdb", "foundationdb-kubernetes-sidecar"];
        json!({
            "phase": "Running",
            "podIP": group.ip,
            "podIPs": [{"ip": group.ip}],
            "conditions": [
                {"type": "Initialized", "status": "True"},
                {"type": "Ready", "status": "True"},
                {"type": "ContainersReady", "status": "True"},
                {"type": "PodScheduled", "status": "True"},
            ],
            "initContainerStatuses": [{
                "name": "foundationdb-kubernetes-init", "image": sidecar_image.clone(),
                "ready": true, "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
            }],
            "containerStatuses": [
                container_status(containers[0], main_image),
                container_status(containers[1], sidecar_image),
            ],
        })
    }

    /// The unified image's pod: fdb-kubernetes-monitor and its sidecar, no init
    /// container, its volumes and annotations.
    fn make_unified(&self, pod: &mut Value, group: &Group) {
        let volumes = self.monitor_volumes(group, pod["spec"]["volumes"][0].clone());
        let spec = &mut pod["spec"];
        if let Some(spec) = spec.as_object_mut() {
            spec.remove("initContainers");
        }
        spec["containers"] = json!([self.monitor_container(group), self.monitor_sidecar()]);
        spec["volumes"] = volumes;
        if let Some(status) = pod["status"].as_object_mut() {
            status.remove("initContainerStatuses");
        }
        let annotations = &mut pod["metadata"]["annotations"];
        annotations["foundationdb.org/image-type"] = json!("unified");
        for (key, value) in self.monitor_annotations(group) {
            annotations[key] = json!(value);
        }
    }
}
