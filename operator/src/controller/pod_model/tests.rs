//! Test fixtures and unit tests of the pod model: names, labels, merges, fault domains,
//! DNS, TLS, bin packing, PVCs, services and hashes.

use std::collections::BTreeMap;

use fdb_shared::api::cluster::ProcessGroupStatus;
use fdb_shared::api::{FoundationDBCluster, ProcessClass};
use k8s_openapi::api::core::v1::{Container, EnvVar, Pod};

use super::*;

/// A cluster `sample` in namespace `fdb` (UID `uid-1`, version 7.1.57) with `spec_yaml` as
/// its spec.
pub(crate) fn cluster(spec_yaml: &str) -> FoundationDBCluster {
    let spec = if spec_yaml.trim().is_empty() {
        "version: 7.1.57".to_owned()
    } else {
        format!("version: 7.1.57\n{spec_yaml}")
    };
    let mut cluster = FoundationDBCluster::new("sample", serde_yaml_ng::from_str(&spec).unwrap());
    cluster.metadata.namespace = Some("fdb".to_owned());
    cluster.metadata.uid = Some("uid-1".to_owned());
    cluster
}

/// A process group of `class` with ID `id`.
pub(crate) fn group(class: ProcessClass, id: &str) -> ProcessGroupStatus {
    ProcessGroupStatus {
        process_group_id: id.to_owned(),
        process_class: class,
        addresses: Vec::new(),
        removal_timestamp: None,
        exclusion_timestamp: None,
        exclusion_skipped: false,
        fault_domain: None,
        process_group_conditions: Vec::new(),
    }
}

pub(crate) fn storage_1() -> ProcessGroupStatus {
    group(ProcessClass::Storage, "storage-1")
}

pub(crate) fn pod(cluster: &FoundationDBCluster, group: &ProcessGroupStatus) -> Pod {
    build_pod(cluster, group, &PodOptions::default()).unwrap()
}

pub(crate) fn container<'a>(pod: &'a Pod, name: &str) -> &'a Container {
    let spec = pod.spec.as_ref().unwrap();
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no container {name}"))
}

pub(crate) fn env<'a>(container: &'a Container, name: &str) -> Option<&'a EnvVar> {
    container.env.iter().flatten().find(|e| e.name == name)
}

pub(crate) fn field_path(var: &EnvVar) -> Option<&str> {
    var.value_from
        .as_ref()?
        .field_ref
        .as_ref()
        .map(|f| f.field_path.as_str())
}

pub(crate) fn args(container: &Container) -> String {
    container.args.clone().unwrap_or_default().join(" ")
}

fn volume<'a>(pod: &'a Pod, name: &str) -> &'a k8s_openapi::api::core::v1::Volume {
    pod.spec
        .as_ref()
        .unwrap()
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == name)
        .unwrap()
}

#[test]
fn process_group_ids_pod_and_pvc_names() {
    let plain = cluster("");
    assert_eq!(
        process_group_id(&plain, ProcessClass::Storage, 3),
        "storage-3"
    );
    assert_eq!(
        process_group_id(&plain, ProcessClass::ClusterController, 1),
        "cluster_controller-1"
    );
    assert_eq!(
        parse_process_group_id(&plain, "cluster_controller-12"),
        Some((ProcessClass::ClusterController, 12))
    );
    assert_eq!(parse_process_group_id(&plain, "storage-0"), None);
    assert_eq!(parse_process_group_id(&plain, "blob-1"), None);
    assert_eq!(parse_process_group_id(&plain, "storage"), None);
    let cc = group(ProcessClass::ClusterController, "cluster_controller-1");
    assert_eq!(pod_name(&plain, &cc), "sample-cluster-controller-1");
    assert_eq!(pvc_name(&plain, &storage_1()), "sample-storage-1-data");

    let prefixed = cluster("processGroupIDPrefix: dc1");
    let id = process_group_id(&prefixed, ProcessClass::Log, 2);
    assert_eq!(id, "dc1-log-2");
    assert_eq!(
        parse_process_group_id(&prefixed, &id),
        Some((ProcessClass::Log, 2))
    );
    assert_eq!(parse_process_group_id(&prefixed, "log-2"), None);
    assert_eq!(parse_process_group_id(&prefixed, "dc2-log-2"), None);
    // The prefix is not part of the pod name.
    assert_eq!(
        pod_name(&prefixed, &group(ProcessClass::Log, &id)),
        "sample-log-2"
    );
    // IDs the cluster did not generate still get a valid name.
    assert_eq!(
        pod_name(&prefixed, &group(ProcessClass::Log, "dc1-Odd_ID")),
        "sample-odd-id"
    );
}

#[test]
fn labels_follow_the_label_config() {
    let default = cluster("");
    let cc = group(ProcessClass::ClusterController, "cluster_controller-1");
    assert_eq!(
        process_group_labels(&default, &cc),
        BTreeMap::from([
            (CLUSTER_NAME_LABEL.to_owned(), "sample".to_owned()),
            (
                PROCESS_CLASS_LABEL.to_owned(),
                "cluster_controller".to_owned()
            ),
            (
                PROCESS_GROUP_ID_LABEL.to_owned(),
                "cluster_controller-1".to_owned()
            ),
        ])
    );
    let custom = cluster(
        "labels:\n  matchLabels: {app: db}\n  processClassLabels: [a/class, b/class]\n  processGroupIDLabels: [a/id]\n  resourceLabels: {team: x}",
    );
    assert_eq!(
        cluster_labels(&custom),
        BTreeMap::from([("app".to_owned(), "db".to_owned())])
    );
    let labels = process_group_labels(&custom, &storage_1());
    assert_eq!(labels.len(), 4);
    assert_eq!(labels["b/class"], "storage");
    assert_eq!(labels["a/id"], "storage-1");
    let pod = pod(&custom, &storage_1());
    assert_eq!(pod.metadata.labels.as_ref().unwrap()["team"], "x");
}

#[test]
fn stateless_pod_uses_an_empty_dir_and_has_no_pvc() {
    let cluster = cluster("");
    let stateless = group(ProcessClass::Stateless, "stateless-4");
    let pod = pod(&cluster, &stateless);
    assert_eq!(pod.metadata.name.as_deref(), Some("sample-stateless-4"));
    assert!(volume(&pod, DATA_VOLUME).empty_dir.is_some());
    let items = volume(&pod, CONFIG_MAP_VOLUME)
        .config_map
        .as_ref()
        .unwrap()
        .items
        .clone()
        .unwrap();
    assert_eq!(items[0].key, "fdbmonitor-conf-stateless");
    assert_eq!(build_pvc(&cluster, &stateless).unwrap(), None);
}

#[test]
fn user_pod_template_is_merged() {
    let cluster = cluster(
        r#"processes:
  general:
    podTemplate:
      metadata:
        labels: {team: storage, foundationdb.org/fdb-process-class: forged}
        annotations: {note: kept}
      spec:
        tolerations: [{key: dedicated, operator: Exists}]
        nodeSelector: {disk: ssd}
        volumes: [{name: extra, emptyDir: {}}]
        containers:
        - name: foundationdb
          image: ignored/image
          resources: {requests: {cpu: "2", memory: 8Gi}}
          env: [{name: EXTRA, value: "1"}, {name: FDB_INSTANCE_ID, value: forged}]
          volumeMounts: [{name: extra, mountPath: /extra}, {name: extra, mountPath: /var/fdb/data}]
          securityContext: {runAsUser: 4059}
        - name: foundationdb-kubernetes-sidecar
          resources: {requests: {cpu: 50m}}
        - name: logger
          image: busybox
        initContainers:
        - name: prepare
          image: busybox
"#,
    );
    let pod = pod(&cluster, &storage_1());
    let meta_labels = pod.metadata.labels.as_ref().unwrap();
    assert_eq!(meta_labels["team"], "storage");
    assert_eq!(meta_labels[PROCESS_CLASS_LABEL], "storage");
    assert_eq!(pod.metadata.annotations.as_ref().unwrap()["note"], "kept");
    let spec = pod.spec.as_ref().unwrap();
    let names: Vec<_> = spec.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, [MAIN_CONTAINER, SIDECAR_CONTAINER, "logger"]);
    let inits: Vec<_> = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(inits, [INIT_CONTAINER, "prepare"]);
    assert_eq!(
        spec.tolerations.as_ref().unwrap()[0].key.as_deref(),
        Some("dedicated")
    );
    assert_eq!(spec.node_selector.as_ref().unwrap()["disk"], "ssd");
    assert!(spec.volumes.iter().flatten().any(|v| v.name == "extra"));

    let main = container(&pod, MAIN_CONTAINER);
    assert_eq!(
        main.image.as_deref(),
        Some("foundationdb/foundationdb:7.1.57")
    );
    let requests = main.resources.as_ref().unwrap().requests.as_ref().unwrap();
    assert_eq!(requests["memory"].0, "8Gi");
    assert_eq!(env(main, "EXTRA").unwrap().value.as_deref(), Some("1"));
    assert_eq!(
        env(main, "FDB_INSTANCE_ID").unwrap().value.as_deref(),
        Some("storage-1")
    );
    assert_eq!(
        main.env
            .as_ref()
            .unwrap()
            .iter()
            .filter(|e| e.name == "FDB_INSTANCE_ID")
            .count(),
        1
    );
    let mounts: Vec<_> = main
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| (m.name.as_str(), m.mount_path.as_str()))
        .collect();
    assert!(mounts.contains(&("extra", "/extra")));
    assert!(mounts.contains(&("data", "/var/fdb/data")));
    assert!(!mounts.contains(&("extra", "/var/fdb/data")));
    assert_eq!(
        main.security_context.as_ref().unwrap().run_as_user,
        Some(4059)
    );

    // The user set sidecar resources: no defaults added.
    let sidecar = container(&pod, SIDECAR_CONTAINER);
    let resources = sidecar.resources.as_ref().unwrap();
    assert_eq!(resources.requests.as_ref().unwrap()["cpu"].0, "50m");
    assert!(resources.limits.is_none());
    // The init container keeps the defaults.
    let init = container(&pod, INIT_CONTAINER);
    assert_eq!(
        init.resources.as_ref().unwrap().limits.as_ref().unwrap()["memory"].0,
        "256Mi"
    );
}

#[test]
fn class_template_replaces_the_general_one() {
    let cluster = cluster(
        "processes:\n  general:\n    podTemplate: {metadata: {labels: {from: general}}}\n  log:\n    podTemplate: {metadata: {labels: {from: log}}}",
    );
    let log = pod(&cluster, &group(ProcessClass::Log, "log-1"));
    assert_eq!(log.metadata.labels.as_ref().unwrap()["from"], "log");
    let storage = pod(&cluster, &storage_1());
    assert_eq!(storage.metadata.labels.as_ref().unwrap()["from"], "general");
}

#[test]
fn fault_domain_variants() {
    let zone = |pod: &Pod| {
        env(container(pod, MAIN_CONTAINER), "FDB_ZONE_ID")
            .unwrap()
            .clone()
    };
    let machine = |pod: &Pod| {
        env(container(pod, SIDECAR_CONTAINER), "FDB_MACHINE_ID")
            .unwrap()
            .clone()
    };
    let anti = |pod: &Pod| pod.spec.as_ref().unwrap().affinity.clone();

    let default = pod(&cluster(""), &storage_1());
    assert_eq!(field_path(&zone(&default)), Some("spec.nodeName"));
    assert!(anti(&default).is_some());

    let none = pod(
        &cluster("faultDomain: {key: foundationdb.org/none}"),
        &storage_1(),
    );
    assert_eq!(field_path(&zone(&none)), Some("metadata.name"));
    assert_eq!(field_path(&machine(&none)), Some("metadata.name"));
    assert_eq!(anti(&none), None);

    let kc = pod(
        &cluster("faultDomain: {key: foundationdb.org/kubernetes-cluster, value: kc2}"),
        &storage_1(),
    );
    assert_eq!(zone(&kc).value.as_deref(), Some("kc2"));
    assert_eq!(field_path(&machine(&kc)), Some("spec.nodeName"));
    assert_eq!(anti(&kc), None);
    let err = build_pod(
        &cluster("faultDomain: {key: foundationdb.org/kubernetes-cluster}"),
        &storage_1(),
        &PodOptions::default(),
    );
    assert_eq!(err.unwrap_err(), PodModelError::MissingFaultDomainValue);

    let rack = pod(
        &cluster("faultDomain: {key: topology.kubernetes.io/zone, valueFrom: spec.nodeName}"),
        &storage_1(),
    );
    let term = &anti(&rack)
        .unwrap()
        .pod_anti_affinity
        .unwrap()
        .preferred_during_scheduling_ignored_during_execution
        .unwrap()[0];
    assert_eq!(
        term.pod_affinity_term.topology_key,
        "topology.kubernetes.io/zone"
    );
}

#[test]
fn dns_names_on_and_off() {
    let on = pod(&cluster(""), &storage_1());
    let spec = on.spec.as_ref().unwrap();
    assert_eq!(spec.hostname.as_deref(), Some("sample-storage-1"));
    assert_eq!(spec.subdomain.as_deref(), Some("sample"));
    let sidecar = container(&on, SIDECAR_CONTAINER);
    assert!(args(sidecar).contains("--substitute-variable FDB_DNS_NAME"));

    let domain = pod(&cluster("routing: {dnsDomain: example.org}"), &storage_1());
    assert_eq!(
        env(container(&domain, MAIN_CONTAINER), "FDB_DNS_NAME")
            .unwrap()
            .value
            .as_deref(),
        Some("sample-storage-1.sample.fdb.svc.example.org")
    );

    let off = pod(
        &cluster("routing: {useDNSInClusterFile: false}"),
        &storage_1(),
    );
    let spec = off.spec.as_ref().unwrap();
    assert_eq!(
        (spec.hostname.as_deref(), spec.subdomain.as_deref()),
        (None, None)
    );
    assert!(env(container(&off, MAIN_CONTAINER), "FDB_DNS_NAME").is_none());
    assert!(!args(container(&off, SIDECAR_CONTAINER)).contains("FDB_DNS_NAME"));
}

#[test]
fn tls_trusted_cas_and_sidecar_variables() {
    let cluster = cluster(
        "mainContainer: {enableTls: true}\nsidecarContainer: {enableTls: true, peerVerificationRules: S.CN=op}\ntrustedCAs: [ca1, ca2]\nsidecarVariables: [FDB_POD_IP, RACK]\nrouting: {useDNSInClusterFile: false, podIPFamily: 6}",
    );
    let pod = pod(&cluster, &storage_1());
    let sidecar = container(&pod, SIDECAR_CONTAINER);
    assert_eq!(
        args(sidecar),
        "--copy-file fdb.cluster --copy-file ca.pem --input-monitor-conf fdbmonitor.conf \
         --copy-binary fdbserver --copy-binary fdbcli --main-container-version 7.1.57 \
         --substitute-variable FDB_POD_IP --substitute-variable RACK --public-ip-family 6 --tls"
    );
    assert_eq!(
        env(sidecar, "FDB_TLS_VERIFY_PEERS")
            .unwrap()
            .value
            .as_deref(),
        Some("S.CN=op")
    );
    assert_eq!(
        env(sidecar, "FDB_TLS_CA_FILE").unwrap().value.as_deref(),
        Some("/var/input-files/ca.pem")
    );
    assert_eq!(
        field_path(env(sidecar, "FDB_POD_IP").unwrap()),
        Some("status.podIPs")
    );
    let init = container(&pod, INIT_CONTAINER);
    assert!(args(init).starts_with("--init-mode --copy-file fdb.cluster --copy-file ca.pem"));
    assert!(!args(init).contains("--tls"));
    let main = container(&pod, MAIN_CONTAINER);
    assert_eq!(
        env(main, "FDB_TLS_CA_FILE").unwrap().value.as_deref(),
        Some("/var/dynamic-conf/ca.pem")
    );
    let items = volume(&pod, CONFIG_MAP_VOLUME)
        .config_map
        .as_ref()
        .unwrap()
        .items
        .clone()
        .unwrap();
    assert_eq!(
        items.last().map(|i| (i.key.as_str(), i.path.as_str())),
        Some(("ca-file", "ca.pem"))
    );
}

#[test]
fn public_ip_from_service_and_probes() {
    let cluster = cluster(
        "routing: {publicIPSource: service}\nsidecarContainer: {enableLivenessProbe: false, enableReadinessProbe: true}",
    );
    let pod = pod(&cluster, &storage_1());
    assert_eq!(
        pod.metadata.annotations.as_ref().unwrap()[PUBLIC_IP_SOURCE_ANNOTATION],
        "service"
    );
    let main = container(&pod, MAIN_CONTAINER);
    assert_eq!(
        field_path(env(main, "FDB_PUBLIC_IP").unwrap()),
        Some("metadata.annotations['foundationdb.org/public-ip']")
    );
    let sidecar = container(&pod, SIDECAR_CONTAINER);
    assert!(sidecar.liveness_probe.is_none());
    assert!(
        sidecar
            .readiness_probe
            .as_ref()
            .unwrap()
            .tcp_socket
            .is_some()
    );
}

#[test]
fn bin_packing_labels_zone_and_affinity() {
    let cluster = cluster("faultDomain: {zoneCount: 3}");
    assert_eq!(default_distribution_key(&cluster, 7).as_deref(), Some("1"));
    assert_eq!(
        default_distribution_key(&super::tests::cluster(""), 7),
        None
    );
    assert_eq!(
        default_distribution_key(
            &super::tests::cluster("faultDomain: {key: foundationdb.org/none, zoneCount: 3}"),
            7
        ),
        None
    );
    let options = PodOptions {
        distribution_key: Some("1".to_owned()),
        ..PodOptions::default()
    };
    let pod = build_pod(&cluster, &storage_1(), &options).unwrap();
    assert_eq!(
        pod.metadata.labels.as_ref().unwrap()[DISTRIBUTION_KEY_LABEL],
        "1"
    );
    assert_eq!(
        env(container(&pod, MAIN_CONTAINER), "FDB_ZONE_ID")
            .unwrap()
            .value
            .as_deref(),
        Some("1")
    );
    let affinity = pod.spec.as_ref().unwrap().affinity.clone().unwrap();
    let pack = &affinity
        .pod_affinity
        .unwrap()
        .preferred_during_scheduling_ignored_during_execution
        .unwrap()[0];
    let pack_labels = pack
        .pod_affinity_term
        .label_selector
        .as_ref()
        .unwrap()
        .match_labels
        .clone()
        .unwrap();
    assert_eq!(pack_labels[DISTRIBUTION_KEY_LABEL], "1");
    assert_eq!(pack_labels[CLUSTER_NAME_LABEL], "sample");
    let anti = affinity.pod_anti_affinity.unwrap();
    assert!(
        anti.preferred_during_scheduling_ignored_during_execution
            .is_none()
    );
    let spread = &anti
        .required_during_scheduling_ignored_during_execution
        .unwrap()[0];
    let expr = &spread
        .label_selector
        .as_ref()
        .unwrap()
        .match_expressions
        .as_ref()
        .unwrap()[0];
    assert_eq!(
        (expr.key.as_str(), expr.operator.as_str()),
        (DISTRIBUTION_KEY_LABEL, "NotIn")
    );
    assert_eq!(expr.values.as_deref(), Some(&["1".to_owned()][..]));
    assert_eq!(spread.topology_key, "kubernetes.io/hostname");
}

#[test]
fn user_affinity_terms_are_kept() {
    let cluster = cluster(
        "processes:\n  general:\n    podTemplate:\n      spec:\n        affinity:\n          nodeAffinity:\n            requiredDuringSchedulingIgnoredDuringExecution:\n              nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [fdb]}]}]\n          podAntiAffinity:\n            preferredDuringSchedulingIgnoredDuringExecution:\n            - {weight: 50, podAffinityTerm: {topologyKey: rack, labelSelector: {matchLabels: {x: y}}}}",
    );
    let affinity = pod(&cluster, &storage_1()).spec.unwrap().affinity.unwrap();
    assert!(affinity.node_affinity.is_some());
    let terms = affinity
        .pod_anti_affinity
        .unwrap()
        .preferred_during_scheduling_ignored_during_execution
        .unwrap();
    assert_eq!(
        terms.iter().map(|t| t.weight).collect::<Vec<_>>(),
        [50, PREFERRED_TERM_WEIGHT]
    );
}

#[test]
fn versions_images_and_unsupported_image_type() {
    let mut upgrading = cluster("sidecarContainer: {imageConfigs: [{baseImage: reg/sidecar}]}");
    upgrading.spec.version = "7.3.43".to_owned();
    upgrading.status = Some(serde_json::from_str(r#"{"runningVersion": "7.1.57"}"#).unwrap());
    let options = PodOptions {
        sidecar_version: Some("7.3.43".to_owned()),
        ..PodOptions::default()
    };
    let pod = build_pod(&upgrading, &storage_1(), &options).unwrap();
    assert_eq!(
        container(&pod, MAIN_CONTAINER).image.as_deref(),
        Some("foundationdb/foundationdb:7.1.57")
    );
    let sidecar = container(&pod, SIDECAR_CONTAINER);
    assert_eq!(sidecar.image.as_deref(), Some("reg/sidecar:7.3.43-1"));
    assert!(args(sidecar).contains("--main-container-version 7.1.57"));

    let unified = build_pod(
        &cluster("imageType: unified"),
        &storage_1(),
        &PodOptions::default(),
    );
    let err = unified.unwrap_err();
    assert!(err.to_string().contains("unified"), "{err}");

    let mut nameless = cluster("");
    nameless.metadata.uid = None;
    assert!(matches!(
        build_pod(&nameless, &storage_1(), &PodOptions::default()),
        Err(PodModelError::MissingUid { .. })
    ));
}

#[test]
fn pvc_defaults_and_template() {
    let default = build_pvc(&cluster(""), &storage_1()).unwrap().unwrap();
    let expected = r#"apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  annotations:
    foundationdb.org/last-applied-spec: HASH
  labels:
    foundationdb.org/fdb-cluster-name: sample
    foundationdb.org/fdb-process-class: storage
    foundationdb.org/fdb-process-group-id: storage-1
  name: sample-storage-1-data
  namespace: fdb
  ownerReferences:
  - apiVersion: apps.foundationdb.org/v1beta2
    blockOwnerDeletion: true
    controller: true
    kind: FoundationDBCluster
    name: sample
    uid: uid-1
spec:
  accessModes:
  - ReadWriteOnce
  resources:
    requests:
      storage: 128G
"#
    .replace("HASH", &pvc_spec_hash(&default));
    assert_eq!(serde_yaml_ng::to_string(&default).unwrap(), expected);

    let templated = cluster(
        "processes:\n  storage:\n    volumeClaimTemplate:\n      metadata: {labels: {tier: fast}, annotations: {a: b}}\n      spec: {storageClassName: ssd, resources: {requests: {storage: 1Ti}}}",
    );
    let pvc = build_pvc(&templated, &storage_1()).unwrap().unwrap();
    assert_eq!(pvc.metadata.labels.as_ref().unwrap()["tier"], "fast");
    assert_eq!(pvc.metadata.annotations.as_ref().unwrap()["a"], "b");
    let spec = pvc.spec.as_ref().unwrap();
    assert_eq!(spec.storage_class_name.as_deref(), Some("ssd"));
    assert_eq!(
        spec.resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"].0,
        "1Ti"
    );
    assert_ne!(pvc_spec_hash(&pvc), pvc_spec_hash(&default));

    let own_volume = cluster(
        "processes:\n  general:\n    podTemplate:\n      spec: {volumes: [{name: data, hostPath: {path: /mnt}}]}",
    );
    assert_eq!(build_pvc(&own_volume, &storage_1()).unwrap(), None);
    assert!(
        volume(&pod(&own_volume, &storage_1()), DATA_VOLUME)
            .host_path
            .is_some()
    );
}

#[test]
fn services_on_and_off() {
    let default = cluster("");
    assert_eq!(
        build_process_group_service(&default, &storage_1()).unwrap(),
        None
    );
    let headless = build_headless_service(&default).unwrap();
    assert_eq!(headless.metadata.name.as_deref(), Some("sample"));
    let spec = headless.spec.unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
    assert_eq!(spec.publish_not_ready_addresses, Some(true));
    assert_eq!(spec.selector.unwrap(), cluster_labels(&default));

    assert_eq!(
        build_headless_service(&cluster("routing: {useDNSInClusterFile: false}")),
        None
    );
    assert!(
        build_headless_service(&cluster(
            "routing: {useDNSInClusterFile: false, headlessService: true}"
        ))
        .is_some()
    );

    let services = cluster("routing: {publicIPSource: service}\nstorageServersPerPod: 2");
    let service = build_process_group_service(&services, &storage_1())
        .unwrap()
        .unwrap();
    assert_eq!(service.metadata.name.as_deref(), Some("sample-storage-1"));
    let spec = service.spec.unwrap();
    assert_eq!(
        spec.selector.unwrap(),
        process_group_labels(&services, &storage_1())
    );
    let ports: Vec<_> = spec
        .ports
        .unwrap()
        .into_iter()
        .map(|p| (p.name.unwrap(), p.port))
        .collect();
    assert_eq!(
        ports,
        [("non-tls".to_owned(), 4501), ("non-tls-2".to_owned(), 4503)]
    );
    let tls = cluster("routing: {publicIPSource: service}\nmainContainer: {enableTls: true}");
    let ports = build_process_group_service(&tls, &storage_1())
        .unwrap()
        .unwrap()
        .spec
        .unwrap()
        .ports
        .unwrap();
    assert_eq!(
        (ports[0].name.as_deref(), ports[0].port),
        (Some("tls"), 4500)
    );
}

#[test]
fn servers_per_pod_by_class() {
    let cluster = cluster("storageServersPerPod: 3\nlogServersPerPod: 2");
    assert_eq!(servers_per_pod(&cluster, ProcessClass::Storage), 3);
    assert_eq!(servers_per_pod(&cluster, ProcessClass::Log), 2);
    assert_eq!(servers_per_pod(&cluster, ProcessClass::Transaction), 2);
    assert_eq!(servers_per_pod(&cluster, ProcessClass::Stateless), 1);
    assert_eq!(
        servers_per_pod(
            &super::tests::cluster("storageServersPerPod: -4"),
            ProcessClass::Storage
        ),
        1
    );
    let pod = pod(&cluster, &storage_1());
    let items = volume(&pod, CONFIG_MAP_VOLUME)
        .config_map
        .as_ref()
        .unwrap()
        .items
        .clone()
        .unwrap();
    assert_eq!(items[0].key, "fdbmonitor-conf-storage-density-3");
}

#[test]
fn spec_hash_is_stable_and_tracks_changes() {
    let cluster = cluster("");
    let first = pod(&cluster, &storage_1());
    let second = pod(&cluster, &storage_1());
    assert_eq!(first, second);
    let annotation = &first.metadata.annotations.as_ref().unwrap()[LAST_APPLIED_SPEC_ANNOTATION];
    assert_eq!(annotation, &pod_spec_hash(&first));
    assert_eq!(annotation.len(), 64);

    let mut changed = cluster.clone();
    changed.spec.version = "7.1.59".to_owned();
    assert_ne!(
        pod_spec_hash(&pod(&changed, &storage_1())),
        pod_spec_hash(&first)
    );
    let other_group = pod(&cluster, &group(ProcessClass::Storage, "storage-2"));
    assert_ne!(pod_spec_hash(&other_group), pod_spec_hash(&first));
    // Metadata-only changes are updated in place, not by recreating the pod.
    let relabelled = super::tests::cluster("labels: {resourceLabels: {team: x}}");
    assert_eq!(
        pod_spec_hash(&pod(&relabelled, &storage_1())),
        pod_spec_hash(&first)
    );
}
