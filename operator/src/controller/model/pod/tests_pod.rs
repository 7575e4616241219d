//! Snapshot of the whole default storage pod: every field the operator sets, in one
//! literal reviewed by hand (docs/controller-model.md, "The pod"). A change to the pod
//! model shows up here as a readable diff.

use super::tests::{cluster, pod, storage_1};

const DEFAULT_STORAGE_POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  annotations:
    foundationdb.org/image-type: split
    foundationdb.org/last-applied-spec: 723cae1885ef8165e9405d2d64eb5986f8bda529a6ba43c9b05f1004fbf85007
    foundationdb.org/public-ip-source: pod
  labels:
    foundationdb.org/fdb-cluster-name: sample
    foundationdb.org/fdb-process-class: storage
    foundationdb.org/fdb-process-group-id: storage-1
  name: sample-storage-1
  namespace: fdb
  ownerReferences:
  - apiVersion: apps.foundationdb.org/v1beta2
    blockOwnerDeletion: true
    controller: true
    kind: FoundationDBCluster
    name: sample
    uid: uid-1
spec:
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - podAffinityTerm:
          labelSelector:
            matchLabels:
              foundationdb.org/fdb-cluster-name: sample
              foundationdb.org/fdb-process-class: storage
          topologyKey: kubernetes.io/hostname
        weight: 1
  containers:
  - command:
    - fdbmonitor
    - --conffile
    - /var/dynamic-conf/fdbmonitor.conf
    - --lockfile
    - /var/dynamic-conf/fdbmonitor.lockfile
    env:
    - name: FDB_PUBLIC_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    - name: FDB_POD_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    - name: FDB_MACHINE_ID
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    - name: FDB_ZONE_ID
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    - name: FDB_INSTANCE_ID
      value: storage-1
    - name: FDB_DNS_NAME
      value: sample-storage-1.sample.fdb.svc.cluster.local
    - name: FDB_CLUSTER_FILE
      value: /var/dynamic-conf/fdb.cluster
    image: foundationdb/foundationdb:7.1.57
    name: foundationdb
    volumeMounts:
    - mountPath: /var/fdb/data
      name: data
    - mountPath: /var/dynamic-conf
      name: dynamic-conf
    - mountPath: /var/log/fdb-trace-logs
      name: fdb-trace-logs
  - args:
    - --copy-file
    - fdb.cluster
    - --input-monitor-conf
    - fdbmonitor.conf
    - --copy-binary
    - fdbserver
    - --copy-binary
    - fdbcli
    - --main-container-version
    - 7.1.57
    - --substitute-variable
    - FDB_POD_IP
    - --substitute-variable
    - FDB_DNS_NAME
    env:
    - name: FDB_PUBLIC_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    - name: FDB_POD_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    - name: FDB_MACHINE_ID
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    - name: FDB_ZONE_ID
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    - name: FDB_INSTANCE_ID
      value: storage-1
    - name: FDB_DNS_NAME
      value: sample-storage-1.sample.fdb.svc.cluster.local
    image: foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1
    livenessProbe:
      failureThreshold: 5
      periodSeconds: 30
      tcpSocket:
        port: 8080
      timeoutSeconds: 1
    name: foundationdb-kubernetes-sidecar
    resources:
      limits:
        cpu: 100m
        memory: 256Mi
      requests:
        cpu: 100m
        memory: 256Mi
    volumeMounts:
    - mountPath: /var/input-files
      name: config-map
    - mountPath: /var/output-files
      name: dynamic-conf
  hostname: sample-storage-1
  initContainers:
  - args:
    - --init-mode
    - --copy-file
    - fdb.cluster
    - --input-monitor-conf
    - fdbmonitor.conf
    - --copy-binary
    - fdbserver
    - --copy-binary
    - fdbcli
    - --main-container-version
    - 7.1.57
    - --substitute-variable
    - FDB_POD_IP
    - --substitute-variable
    - FDB_DNS_NAME
    env:
    - name: FDB_PUBLIC_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    - name: FDB_POD_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    - name: FDB_MACHINE_ID
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    - name: FDB_ZONE_ID
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    - name: FDB_INSTANCE_ID
      value: storage-1
    - name: FDB_DNS_NAME
      value: sample-storage-1.sample.fdb.svc.cluster.local
    image: foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1
    name: foundationdb-kubernetes-init
    resources:
      limits:
        cpu: 100m
        memory: 256Mi
      requests:
        cpu: 100m
        memory: 256Mi
    volumeMounts:
    - mountPath: /var/input-files
      name: config-map
    - mountPath: /var/output-files
      name: dynamic-conf
  subdomain: sample
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: sample-storage-1-data
  - emptyDir: {}
    name: dynamic-conf
  - configMap:
      items:
      - key: fdbmonitor-conf-storage
        path: fdbmonitor.conf
      - key: cluster-file
        path: fdb.cluster
      name: sample-config
    name: config-map
  - emptyDir: {}
    name: fdb-trace-logs
"#;

#[test]
fn default_storage_pod_matches_the_snapshot() {
    let actual = serde_yaml_ng::to_string(&pod(&cluster(""), &storage_1())).unwrap();
    if actual != DEFAULT_STORAGE_POD {
        let diff = similar::TextDiff::from_lines(DEFAULT_STORAGE_POD, actual.as_str());
        panic!(
            "default storage pod changed:\n{}",
            diff.unified_diff().header("expected", "actual")
        );
    }
}
