use super::*;
use crate::controller::fixtures::{Fixture, cluster, group};
use crate::controller::model::desired::pod_options;
use crate::controller::model::pod::{build_pod, build_pvc};

const BASE: &str = "version: 7.1.57";

/// The snapshot of a cluster now specified by `now_spec` whose group `id` has the pod and
/// PVC the operator built under `old_spec`.
fn made_under(old_spec: &str, now_spec: &str, id: &str) -> ClusterSnapshot {
    let old = cluster(old_spec);
    let status = group(id);
    let pod = build_pod(&old, &status, &pod_options(&old, &status)).unwrap();
    let pvc = build_pvc(&old, &status).unwrap();
    Fixture::new(now_spec)
        .groups([status])
        .pods([pod])
        .pvcs(pvc)
        .build()
}

fn change(
    snapshot: &ClusterSnapshot,
    id: &str,
    policy: ReplacePolicy,
) -> Option<ReplaceOnlyChange> {
    let group = snapshot.group(id).unwrap();
    replace_only_change(snapshot, &group, policy).unwrap()
}

fn default_change(old: &str, new: &str, id: &str) -> Option<ReplaceOnlyChange> {
    change(&made_under(old, new, id), id, ReplacePolicy::default())
}

#[test]
fn an_unchanged_spec_and_in_place_changes_need_no_replacement() {
    assert_eq!(default_change(BASE, BASE, "storage-1"), None);
    // An environment variable or an image change rolls out by recreating the pod.
    let env = "{version: 7.1.57, processes: {general: {podTemplate: {spec: {containers: [{name: foundationdb, env: [{name: A, value: b}]}]}}}}}";
    assert_eq!(default_change(BASE, env, "storage-1"), None);
    assert_eq!(default_change(BASE, "version: 7.1.59", "log-1"), None);
}

#[test]
fn a_new_id_prefix_replaces_every_group_of_the_old_one() {
    let snapshot = made_under(
        BASE,
        "{version: 7.1.57, processGroupIDPrefix: blue}",
        "storage-1",
    );
    assert_eq!(
        change(&snapshot, "storage-1", ReplacePolicy::default()),
        Some(ReplaceOnlyChange::ProcessGroupIdPrefix {
            desired: "blue-storage-1".into()
        })
    );
    // A group already made with the prefix is fine.
    let prefixed = "{version: 7.1.57, processGroupIDPrefix: blue}";
    assert_eq!(default_change(prefixed, prefixed, "blue-storage-1"), None);
}

#[test]
fn a_bigger_volume_replaces_stateful_groups_only() {
    let bigger = "{version: 7.1.57, processes: {general: {volumeClaimTemplate: {spec: {resources: {requests: {storage: 256G}}}}}}}";
    assert_eq!(
        default_change(BASE, bigger, "storage-1"),
        Some(ReplaceOnlyChange::PvcSpec)
    );
    assert_eq!(default_change(BASE, bigger, "stateless-1"), None);
}

/// A PVC as another operator made it for group `id` of `spec`: our claim's spec with
/// `storage` requested and what the API server adds, under another spec hash.
fn foreign_pvc(
    spec: &str,
    id: &str,
    storage: &str,
) -> k8s_openapi::api::core::v1::PersistentVolumeClaim {
    let mut pvc = build_pvc(&cluster(spec), &group(id)).unwrap().unwrap();
    pvc.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(
            LAST_APPLIED_SPEC_ANNOTATION.into(),
            "5b0f3e9e2d1c8a7f".into(),
        );
    let claim = pvc.spec.get_or_insert_with(Default::default);
    claim.volume_mode = Some("Filesystem".into());
    claim.volume_name = Some(format!("pv-{id}"));
    claim
        .resources
        .get_or_insert_with(Default::default)
        .requests
        .get_or_insert_with(Default::default)
        .insert(
            "storage".into(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity(storage.into()),
        );
    pvc
}

#[test]
fn another_operators_pvc_is_kept_when_it_has_what_ours_asks_for_and_replaced_when_not() {
    let judge = |storage: &str| {
        let snapshot = Fixture::new(BASE)
            .groups([group("storage-1")])
            .pvcs([foreign_pvc(BASE, "storage-1", storage)])
            .build();
        change(&snapshot, "storage-1", ReplacePolicy::default())
    };
    // The Go operator's default claim: the size, access mode and no class ours asks for.
    assert_eq!(judge("128G"), None);
    // A smaller volume lacks what ours asks for.
    assert_eq!(judge("64G"), Some(ReplaceOnlyChange::PvcSpec));
    // Read without a spec (never from the cache, which holds PVC specs), the hash decides.
    let mut bare = foreign_pvc(BASE, "storage-1", "128G");
    bare.spec = None;
    let snapshot = Fixture::new(BASE)
        .groups([group("storage-1")])
        .pvcs([bare])
        .build();
    assert_eq!(
        change(&snapshot, "storage-1", ReplacePolicy::default()),
        Some(ReplaceOnlyChange::PvcSpec)
    );
}

#[test]
fn ip_source_servers_per_pod_and_node_selector_need_new_groups() {
    assert!(matches!(
        default_change(
            BASE,
            "{version: 7.1.57, routing: {publicIPSource: service}}",
            "log-1"
        ),
        Some(ReplaceOnlyChange::PublicIpSource { .. })
    ));
    assert_eq!(
        default_change(
            BASE,
            "{version: 7.1.57, storageServersPerPod: 2}",
            "storage-1"
        ),
        Some(ReplaceOnlyChange::ServersPerPod {
            live: "fdbmonitor-conf-storage".into(),
            desired: "fdbmonitor-conf-storage-density-2".into()
        })
    );
    assert_eq!(
        default_change(BASE, "{version: 7.1.57, storageServersPerPod: 2}", "log-1"),
        None,
        "log pods follow logServersPerPod"
    );
    let selector = "{version: 7.1.57, processes: {general: {podTemplate: {spec: {nodeSelector: {disk: nvme}}}}}}";
    assert_eq!(
        default_change(BASE, selector, "stateless-1"),
        Some(ReplaceOnlyChange::NodeSelector)
    );
}

fn with_main_resources(cpu: &str, replace: bool) -> String {
    format!(
        "{{version: 7.1.57, replaceInstancesWhenResourcesChange: {replace}, processes: {{general: {{podTemplate: {{spec: {{containers: [{{name: foundationdb, resources: {{requests: {{cpu: {cpu}}}}}}}]}}}}}}}}}}"
    )
}

#[test]
fn bigger_resources_replace_only_when_asked() {
    let small = with_main_resources("500m", true);
    assert_eq!(
        default_change(&small, &with_main_resources("2", true), "storage-1"),
        Some(ReplaceOnlyChange::BiggerResources {
            container: "foundationdb".into(),
            resource: "cpu requests".into()
        })
    );
    assert_eq!(
        default_change(&small, &with_main_resources("2", false), "storage-1"),
        None,
        "without replaceInstancesWhenResourcesChange the pod is recreated"
    );
    assert_eq!(
        default_change(&with_main_resources("2", true), &small, "storage-1"),
        None,
        "smaller resources are recreated in place"
    );
}

#[test]
fn file_ownership_changes_replace_only_with_the_operator_flag() {
    let owned = "{version: 7.1.57, processes: {general: {podTemplate: {spec: {securityContext: {fsGroup: 4059}}}}}}";
    let snapshot = made_under(BASE, owned, "storage-1");
    assert_eq!(
        change(&snapshot, "storage-1", ReplacePolicy::default()),
        None
    );
    let flag = ReplacePolicy {
        replace_on_security_context_change: true,
    };
    assert_eq!(
        change(&snapshot, "storage-1", flag),
        Some(ReplaceOnlyChange::FileSecurityContext)
    );
}

#[test]
fn a_pod_of_another_image_type_is_replaced_and_terminating_objects_are_not_judged() {
    let status = group("storage-1");
    let base = cluster(BASE);
    let mut unified = build_pod(&base, &status, &pod_options(&base, &status)).unwrap();
    unified
        .annotations_mut()
        .insert(IMAGE_TYPE_ANNOTATION.into(), "unified".into());
    let snapshot = Fixture::new(BASE)
        .groups([status.clone()])
        .pods([unified.clone()])
        .build();
    assert_eq!(
        change(&snapshot, "storage-1", ReplacePolicy::default()),
        Some(ReplaceOnlyChange::ImageType {
            live: "unified".into(),
            desired: "split".into()
        })
    );
    unified.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::from_second(1).unwrap(),
        ));
    let terminating = Fixture::new(BASE).groups([status]).pods([unified]).build();
    assert_eq!(
        change(&terminating, "storage-1", ReplacePolicy::default()),
        None
    );
}

#[test]
fn an_ip_family_change_replaces_the_group() {
    let six = "{version: 7.1.57, routing: {podIPFamily: 6}}";
    let four = "{version: 7.1.57, routing: {podIPFamily: 4}}";
    assert_eq!(
        default_change(BASE, six, "storage-1"),
        Some(ReplaceOnlyChange::IpFamily {
            live: "unset".into(),
            desired: "6".into()
        })
    );
    assert_eq!(
        default_change(six, four, "log-1"),
        Some(ReplaceOnlyChange::IpFamily {
            live: "6".into(),
            desired: "4".into()
        })
    );
    assert_eq!(
        default_change(six, BASE, "log-1"),
        Some(ReplaceOnlyChange::IpFamily {
            live: "6".into(),
            desired: "unset".into()
        })
    );
    assert_eq!(default_change(six, six, "storage-1"), None);
    let unified_six = "{version: 7.1.57, imageType: unified, routing: {podIPFamily: 6}}";
    assert_eq!(default_change(unified_six, unified_six, "storage-1"), None);
}

/// The Go operator writes `foundationdb.org/ip-family: "0"` on pods made without a family
/// (`PodIPFamilyUnset`): taking such a cluster over must not replace every group.
#[test]
fn a_go_pod_marked_with_family_zero_is_unset() {
    let old = cluster(BASE);
    let status = group("storage-1");
    let mut pod = build_pod(&old, &status, &pod_options(&old, &status)).unwrap();
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(IP_FAMILY_ANNOTATION.to_owned(), "0".to_owned());
    let snapshot = Fixture::new(BASE)
        .groups([status])
        .pods([pod.clone()])
        .build();
    assert_eq!(
        change(&snapshot, "storage-1", ReplacePolicy::default()),
        None
    );
    // Asked for a family now, the same pod is replaced (from unset).
    let status = group("storage-1");
    let snapshot = Fixture::new("{version: 7.1.57, routing: {podIPFamily: 6}}")
        .groups([status])
        .pods([pod])
        .build();
    assert_eq!(
        change(&snapshot, "storage-1", ReplacePolicy::default()),
        Some(ReplaceOnlyChange::IpFamily {
            live: "unset".into(),
            desired: "6".into()
        })
    );
}

/// A spec that writes `podIPFamily: 0` (Go's `PodIPFamilyUnset`) chooses no family: its
/// pods are the pods of a spec without the field, and neither replaces the other's.
#[test]
fn a_spec_with_family_zero_makes_the_pods_of_an_unset_family() {
    let zero = "{version: 7.1.57, routing: {podIPFamily: 0}}";
    let (unset_cluster, zero_cluster) = (cluster(BASE), cluster(zero));
    let status = group("storage-1");
    let unset_pod = build_pod(
        &unset_cluster,
        &status,
        &pod_options(&unset_cluster, &status),
    )
    .unwrap();
    let zero_pod = build_pod(&zero_cluster, &status, &pod_options(&zero_cluster, &status)).unwrap();
    assert_eq!(zero_pod.spec, unset_pod.spec);
    assert!(
        !zero_pod
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key(IP_FAMILY_ANNOTATION)
    );
    assert_eq!(default_change(BASE, zero, "storage-1"), None);
    assert_eq!(default_change(zero, BASE, "log-1"), None);
}
