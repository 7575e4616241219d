//! Pods and services as a real API server treats them: what a pod update may change,
//! binding, eviction, deletecollection, default tolerations and cluster IPs.

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, EvictParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::{api_error, pod, server};
use fdb_simulation::kube::{ResourceKey, Verb};

#[tokio::test]
async fn pod_updates_may_change_images_and_little_else() {
    let (server, _) = server();
    let pods: Api<Pod> = Api::namespaced(server.client("operator"), "db");
    let pp = PatchParams::default();
    let created = pods
        .create(&PostParams::default(), &pod("p", json!({}), Some("node-1")))
        .await
        .unwrap();
    let tolerations: Vec<(Option<String>, Option<i64>)> = created
        .spec
        .as_ref()
        .unwrap()
        .tolerations
        .clone()
        .unwrap()
        .into_iter()
        .map(|t| (t.key, t.toleration_seconds))
        .collect();
    assert_eq!(
        tolerations,
        [
            (Some("node.kubernetes.io/not-ready".into()), Some(300)),
            (Some("node.kubernetes.io/unreachable".into()), Some(300)),
        ],
        "DefaultTolerationSeconds"
    );

    let image = pods
        .patch(
            "p",
            &pp,
            // Strategic: a merge patch would replace the whole list and drop the
            // service account mount admission added, which a real server refuses.
            &Patch::Strategic(json!({"metadata": {"labels": {"a": "b"}},
                                 "spec": {"containers": [{"name": "fdb", "image": "fdb:7.3"}]}})),
        )
        .await
        .unwrap();
    assert_eq!(
        image.spec.unwrap().containers[0].image.as_deref(),
        Some("fdb:7.3")
    );
    let forbidden = pods
        .patch(
            "p",
            &pp,
            &Patch::Strategic(
                json!({"spec": {"containers": [{"name": "fdb", "args": ["--knob"]}]}}),
            ),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = forbidden else {
        panic!("expected an API error");
    };
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert!(
        status.message.starts_with(
            "Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other than \
             `spec.containers[*].image`,`spec.initContainers[*].image`,\
             `spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing \
             tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it \
             was previously negative)"
        ),
        "{}",
        status.message
    );
    let mut replaced = pods.get("p").await.unwrap();
    replaced.spec.as_mut().unwrap().node_name = Some("node-2".into());
    let moved = pods
        .replace("p", &PostParams::default(), &replaced)
        .await
        .unwrap_err();
    assert_eq!(api_error(moved).0, 422);
    // Status and metadata stay writable.
    pods.patch_status(
        "p",
        &pp,
        &Patch::Merge(json!({"status": {"phase": "Running"}})),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn the_scheduler_binds_and_drains_evict() {
    let (server, clock) = server();
    let pods: Api<Pod> = Api::namespaced(server.client("operator"), "db");
    let pp = PostParams::default();
    pods.create(&pp, &pod("a", json!({"class": "storage"}), None))
        .await
        .unwrap();
    server
        .bind_pod_as("scheduler", "db", "a", "node-3")
        .unwrap();
    let bound = pods.get("a").await.unwrap();
    assert_eq!(bound.spec.unwrap().node_name.as_deref(), Some("node-3"));
    assert!(
        bound
            .status
            .unwrap()
            .conditions
            .unwrap()
            .iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "True")
    );
    assert_eq!(
        server
            .bind_pod_as("scheduler", "db", "a", "node-4")
            .unwrap_err()
            .code,
        409
    );

    // Eviction through the kube client: a graceful delete.
    clock.advance_seconds(5);
    pods.evict("a", &EvictParams::default()).await.unwrap();
    let evicted = pods.get("a").await.unwrap();
    assert!(evicted.metadata.deletion_timestamp.is_some());
    assert_eq!(evicted.metadata.deletion_grace_period_seconds, Some(30));
    pods.create(&pp, &pod("b", json!({"class": "log"}), Some("node-1")))
        .await
        .unwrap();
    server.evict_as("user", "db", "b").unwrap();
    assert!(
        server
            .get(&ResourceKey::new("", "v1", "pods", "db", "b"))
            .unwrap()
            .pointer("/metadata/deletionTimestamp")
            .is_some()
    );
    assert_eq!(server.evict_as("user", "db", "nope").unwrap_err().code, 404);
    let log: Vec<_> = server
        .take_write_log()
        .into_iter()
        .filter(|w| w.subresource.as_deref() == Some("eviction"))
        .map(|w| (w.actor, w.verb, w.name, w.code))
        .collect();
    assert_eq!(
        log,
        [
            ("operator".to_owned(), Verb::Create, "a".to_owned(), 201),
            ("user".to_owned(), Verb::Create, "b".to_owned(), 201),
            ("user".to_owned(), Verb::Create, "nope".to_owned(), 404),
        ]
    );
}

#[tokio::test]
async fn delete_collection_is_one_request() {
    let (server, _) = server();
    let pods: Api<Pod> = Api::namespaced(server.client("operator"), "db");
    let pp = PostParams::default();
    for (name, class) in [("s1", "storage"), ("s2", "storage"), ("l1", "log")] {
        pods.create(&pp, &pod(name, json!({"class": class}), Some("node-1")))
            .await
            .unwrap();
    }
    let before = server.take_write_log().len();
    assert!(before > 0);
    let deleted = server
        .delete_collection_as("user", "pods", "db", "class=storage")
        .unwrap();
    assert_eq!(deleted, ["s1", "s2"]);
    let writes = server.take_write_log();
    assert_eq!(writes.len(), 1, "{writes:?}");
    let left = pods.list(&ListParams::default()).await.unwrap();
    let terminating: Vec<_> = left
        .items
        .iter()
        .map(|p| {
            (
                p.metadata.name.clone().unwrap(),
                p.metadata.deletion_timestamp.is_some(),
            )
        })
        .collect();
    assert_eq!(
        terminating,
        [
            ("l1".to_owned(), false),
            ("s1".to_owned(), true),
            ("s2".to_owned(), true)
        ]
    );
    assert!(
        server
            .delete_collection_as("user", "widgets", "db", "")
            .is_err()
    );
}

#[tokio::test]
async fn cluster_ip_services_get_a_stable_ip() {
    let (server, _) = server();
    let services: Api<Service> = Api::namespaced(server.client("operator"), "db");
    let pp = PostParams::default();
    let service = |name: &str, spec: serde_json::Value| -> Service {
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
    };
    let a = services
        .create(&pp, &service("a", json!({"ports": [{"port": 4501}]})))
        .await
        .unwrap();
    let spec = a.spec.unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.cluster_ip.as_deref(), Some("10.96.0.11"));
    assert_eq!(spec.cluster_ips.unwrap(), ["10.96.0.11"]);
    let headless = services
        .create(&pp, &service("h", json!({"clusterIP": "None"})))
        .await
        .unwrap();
    assert_eq!(headless.spec.unwrap().cluster_ip.as_deref(), Some("None"));
    let b = services
        .create(&pp, &service("b", json!({})))
        .await
        .unwrap();
    assert_eq!(b.spec.unwrap().cluster_ip.as_deref(), Some("10.96.0.12"));
    // An update without the IP keeps it; one that changes it is refused.
    let mut replaced = services.get("a").await.unwrap();
    replaced.spec.as_mut().unwrap().cluster_ip = None;
    replaced.spec.as_mut().unwrap().cluster_ips = None;
    let kept = services.replace("a", &pp, &replaced).await.unwrap();
    assert_eq!(kept.spec.unwrap().cluster_ip.as_deref(), Some("10.96.0.11"));
    let changed = services
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"clusterIP": "10.96.0.99"}})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(changed), (422, "Invalid".into()));
}
