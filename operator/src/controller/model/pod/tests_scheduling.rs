//! Unit tests of the pod model: fault domains, DNS, TLS, public IPs, bin packing,
//! affinity merging, versions and images.

use k8s_openapi::api::core::v1::Pod;

use super::affinity::PREFERRED_TERM_WEIGHT;
use super::tests::{args, cluster, container, env, field_path, pod, storage_1, volume};
use super::*;
use fdb_shared::api::cluster::settings::CLUSTER_NAME_LABEL;

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
fn versions_and_images() {
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

    // A patch upgrade (protocol compatible) rolls out as a plain pod update: new and
    // updated pods run spec.version.
    let mut patching = cluster("");
    patching.spec.version = "7.1.59".to_owned();
    patching.status = Some(serde_json::from_str(r#"{"runningVersion": "7.1.57"}"#).unwrap());
    let pod = build_pod(&patching, &storage_1(), &PodOptions::default()).unwrap();
    assert_eq!(
        container(&pod, MAIN_CONTAINER).image.as_deref(),
        Some("foundationdb/foundationdb:7.1.59")
    );

    let mut nameless = cluster("");
    nameless.metadata.uid = None;
    assert!(matches!(
        build_pod(&nameless, &storage_1(), &PodOptions::default()),
        Err(PodModelError::MissingUid { .. })
    ));
}
