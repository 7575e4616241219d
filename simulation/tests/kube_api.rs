//! The simulated API server through real `kube::Api` clients: CRUD, selectors, conflicts,
//! patches, generation rules, finalizers and graceful pod deletion; in `delete_wait`, what
//! `kubectl delete` reads while it waits; in `pod_rules`, what pod updates may change,
//! binding, eviction, deletecollection and cluster IPs; in `crd_schemas`, the CRD schema
//! checks of the FoundationDB kinds, `dryRun` and the media types spoken.

// Test helpers outside `#[test]` fns fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use fdb_operator::clock::VirtualClock;
use fdb_simulation::kube::{FakeApiServer, ResourceKey, Verb};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use serde_json::{Value, json};

#[path = "kube_api/crd_schemas.rs"]
mod crd_schemas;
#[path = "kube_api/delete_wait.rs"]
mod delete_wait;
#[path = "kube_api/pod_rules.rs"]
mod pod_rules;

fn server() -> (FakeApiServer, VirtualClock) {
    let clock = VirtualClock::fixed_epoch();
    (FakeApiServer::new(Arc::new(clock.clone()), 1), clock)
}

fn api_error(error: kube::Error) -> (u16, String) {
    match error {
        kube::Error::Api(status) => (status.code, status.reason),
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn pod(name: &str, labels: Value, node: Option<&str>) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "fdb", "image": "fdb:7.1"}]},
    }))
    .unwrap()
}

fn config_map(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).unwrap()
}

fn cluster_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps.foundationdb.org", "v1beta2", "FoundationDBCluster"),
        "foundationdbclusters",
    )
}

#[tokio::test]
async fn create_get_list_with_label_selectors() {
    let (server, _) = server();
    let pods: Api<Pod> = Api::namespaced(server.client("operator"), "db");
    let pp = PostParams::default();
    let created = pods
        .create(
            &pp,
            &pod("storage-1", json!({"class": "storage", "app": "fdb"}), None),
        )
        .await
        .unwrap();
    let meta = &created.metadata;
    assert_eq!(meta.namespace.as_deref(), Some("db"));
    assert_eq!(meta.generation, Some(1));
    assert!(meta.uid.is_some());
    assert_eq!(
        meta.creation_timestamp.as_ref().map(|t| t.0.as_second()),
        Some(1_767_225_600)
    );
    assert_eq!(
        created.status.and_then(|s| s.phase).as_deref(),
        Some("Pending")
    );
    pods.create(
        &pp,
        &pod("log-1", json!({"class": "log", "app": "fdb"}), None),
    )
    .await
    .unwrap();
    pods.create(&pp, &pod("other", json!({"app": "web"}), None))
        .await
        .unwrap();
    let mut generated = pod("", json!({"class": "stateless"}), None);
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("stateless-".into());
    let generated = pods.create(&pp, &generated).await.unwrap();
    let generated_name = generated.metadata.name.unwrap();
    assert!(generated_name.starts_with("stateless-") && generated_name.len() == 15);

    let names = |list: kube::core::ObjectList<Pod>| -> Vec<String> {
        list.items
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .collect()
    };
    let fdb = pods
        .list(&ListParams::default().labels("app=fdb"))
        .await
        .unwrap();
    assert!(fdb.metadata.resource_version.is_some());
    assert_eq!(names(fdb), ["log-1", "storage-1"]);
    let set = pods
        .list(&ListParams::default().labels("class in (log,stateless)"))
        .await
        .unwrap();
    assert_eq!(names(set), ["log-1", generated_name.as_str()]);
    let not = pods
        .list(&ListParams::default().labels("app,app!=fdb"))
        .await
        .unwrap();
    assert_eq!(names(not), ["other"]);
    let by_name = pods
        .list(&ListParams::default().fields("metadata.name=log-1"))
        .await
        .unwrap();
    assert_eq!(names(by_name), ["log-1"]);
    let page = pods.list(&ListParams::default().limit(3)).await.unwrap();
    let token = page.metadata.continue_.clone().unwrap();
    assert_eq!(page.items.len(), 3);
    let rest = pods
        .list(&ListParams::default().limit(3).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(names(rest), ["storage-1"]);
    let elsewhere: Api<Pod> = Api::namespaced(server.client("operator"), "other-ns");
    assert!(
        elsewhere
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let all: Api<Pod> = Api::all(server.client("operator"));
    assert_eq!(
        all.list(&ListParams::default()).await.unwrap().items.len(),
        4
    );

    assert_eq!(
        pods.get("log-1").await.unwrap().metadata.name.as_deref(),
        Some("log-1")
    );
    assert_eq!(
        api_error(pods.get("missing").await.unwrap_err()),
        (404, "NotFound".into())
    );
    let duplicate = pods
        .create(&pp, &pod("log-1", json!({}), None))
        .await
        .unwrap_err();
    assert_eq!(api_error(duplicate), (409, "AlreadyExists".into()));
    let invalid = pods
        .create(&pp, &pod("Not_Valid", json!({}), None))
        .await
        .unwrap_err();
    assert_eq!(api_error(invalid), (422, "Invalid".into()));
    let typed = server.list_typed::<Pod>(Some("db")).unwrap();
    assert_eq!(typed.len(), 4);
    assert!(
        server
            .get_typed::<Pod>(Some("db"), "storage-1")
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn stale_replace_conflicts_and_resource_versions_are_global() {
    let (server, _) = server();
    let maps: Api<ConfigMap> = Api::namespaced(server.client("operator"), "db");
    let first = maps
        .create(&PostParams::default(), &config_map("a", json!({"k": "1"})))
        .await
        .unwrap();
    let second = maps
        .create(&PostParams::default(), &config_map("b", json!({})))
        .await
        .unwrap();
    let rv = |m: &ConfigMap| {
        m.metadata
            .resource_version
            .clone()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    assert!(rv(&second) > rv(&first));

    let mut fresh = first.clone();
    fresh.data = Some(BTreeMap::from([("k".into(), "2".into())]));
    let replaced = maps
        .replace("a", &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert!(rv(&replaced) > rv(&second));
    let mut stale = first.clone();
    stale.data = Some(BTreeMap::from([("k".into(), "3".into())]));
    let error = maps
        .replace("a", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert_eq!(api_error(error), (409, "Conflict".into()));
    // Without a resourceVersion the update is unconditional.
    stale.metadata.resource_version = None;
    let forced = maps
        .replace("a", &PostParams::default(), &stale)
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["k"], "3");
    // A write that changes nothing keeps the resourceVersion.
    let before = server.resource_version();
    maps.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {}})),
    )
    .await
    .unwrap();
    assert_eq!(server.resource_version(), before);
    let missing = maps
        .replace("zzz", &PostParams::default(), &config_map("zzz", json!({})))
        .await;
    assert_eq!(api_error(missing.unwrap_err()).0, 404);
}

#[tokio::test]
async fn merge_json_and_strategic_patches() {
    let (server, _) = server();
    let maps: Api<ConfigMap> = Api::namespaced(server.client("operator"), "db");
    maps.create(
        &PostParams::default(),
        &config_map("c", json!({"a": "1", "b": "2"})),
    )
    .await
    .unwrap();
    let pp = PatchParams::default();
    let merged = maps
        .patch(
            "c",
            &pp,
            &Patch::Merge(json!({"data": {"a": null, "c": "3"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        merged.data.unwrap(),
        BTreeMap::from([("b".into(), "2".into()), ("c".into(), "3".into())])
    );
    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "replace", "path": "/data/b", "value": "20"},
        {"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}
    ]))
    .unwrap();
    let patched = maps.patch("c", &pp, &Patch::<()>::Json(ops)).await.unwrap();
    assert_eq!(patched.data.unwrap()["b"], "20");
    assert_eq!(patched.metadata.labels.unwrap()["x"], "y");
    let stale = maps
        .patch(
            "c",
            &pp,
            &Patch::Merge(json!({"metadata": {"resourceVersion": "1"}, "data": {"z": "1"}})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(stale), (409, "Conflict".into()));

    let pods: Api<Pod> = Api::namespaced(server.client("operator"), "db");
    pods.create(&PostParams::default(), &pod("p", json!({}), Some("node-1")))
        .await
        .unwrap();
    // Containers merge by name: one container's image changes alone.
    let patched = pods
        .patch(
            "p",
            &pp,
            &Patch::Strategic(
                json!({"spec": {"containers": [{"name": "fdb", "image": "fdb:7.3"}]}}),
            ),
        )
        .await
        .unwrap();
    let containers: Vec<(String, Option<String>)> = patched
        .spec
        .unwrap()
        .containers
        .into_iter()
        .map(|c| (c.name, c.image))
        .collect();
    assert_eq!(containers, [("fdb".to_owned(), Some("fdb:7.3".to_owned()))]);
    // Adding a container to an existing pod is refused, as on a real server.
    let added = pods
        .patch(
            "p",
            &pp,
            &Patch::Strategic(
                json!({"spec": {"containers": [{"name": "sidecar", "image": "sc:1"}]}}),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(added), (422, "Invalid".into()));
    let apply = pods
        .patch("p", &PatchParams::apply("test"), &Patch::Apply(json!({})))
        .await;
    assert_eq!(api_error(apply.unwrap_err()).0, 415);
}

#[tokio::test]
async fn generation_and_status_subresource_on_a_custom_resource() {
    let (server, _) = server();
    let clusters: Api<DynamicObject> =
        Api::namespaced_with(server.client("operator"), "db", &cluster_resource());
    let mut object = DynamicObject::new("sample", &cluster_resource());
    object.data = json!({"spec": {"version": "7.1.57"}, "status": {"ignored": true}});
    let created = clusters
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert!(
        created.data.get("status").is_none(),
        "status is dropped on create"
    );

    let pp = PatchParams::default();
    let generation = |o: &DynamicObject| o.metadata.generation.unwrap();
    let labelled = clusters
        .patch(
            "sample",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    assert_eq!(generation(&labelled), 1);
    let spec = clusters
        .patch(
            "sample",
            &pp,
            &Patch::Merge(json!({"spec": {"processCounts": {"storage": 3}}})),
        )
        .await
        .unwrap();
    assert_eq!(generation(&spec), 2);
    let status_via_main = clusters
        .patch(
            "sample",
            &pp,
            &Patch::Merge(json!({"status": {"generations": {"reconciled": 2}}})),
        )
        .await
        .unwrap();
    assert!(status_via_main.data.get("status").is_none());
    assert_eq!(generation(&status_via_main), 2);

    let status = clusters
        .patch_status(
            "sample",
            &pp,
            &Patch::Merge(
                json!({"spec": {"version": "9.9.9"}, "status": {"generations": {"reconciled": 2}}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["generations"]["reconciled"], 2);
    assert_eq!(
        status.data["spec"]["version"], "7.1.57",
        "/status ignores spec"
    );
    assert_eq!(generation(&status), 2);

    let mut replacement = status.clone();
    replacement.data["status"] = json!({"health": {"available": true}});
    replacement.data["spec"]["version"] = json!("7.3.43");
    let replaced = clusters
        .replace_status("sample", &PostParams::default(), &replacement)
        .await
        .unwrap();
    // The CRD's `default:`s fill what the write left out, as a real server's defaulting.
    let defaulted_status = json!({"configured": false, "hasIncorrectConfigMap": false,
        "hasIncorrectServiceConfig": false, "hasListenIPsForAllPods": false,
        "needsNewCoordinators": false,
        "health": {"available": true, "fullReplication": false, "healthy": false}});
    assert_eq!(replaced.data["status"], defaulted_status);
    assert_eq!(replaced.data["spec"]["version"], "7.1.57");
    let stale = clusters
        .replace("sample", &PostParams::default(), &replacement)
        .await;
    assert_eq!(
        api_error(stale.unwrap_err()).0,
        409,
        "the status write moved the resourceVersion"
    );
    replacement.metadata.resource_version = replaced.metadata.resource_version.clone();
    let replaced = clusters
        .replace("sample", &PostParams::default(), &replacement)
        .await
        .unwrap();
    assert_eq!(replaced.data["spec"]["version"], "7.3.43");
    assert_eq!(
        replaced.data["status"], defaulted_status,
        "main ignores status"
    );
    assert_eq!(generation(&replaced), 3);
    let strategic = clusters
        .patch("sample", &pp, &Patch::Strategic(json!({"spec": {}})))
        .await;
    assert_eq!(api_error(strategic.unwrap_err()).0, 415);

    let unknown = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(server.client("operator"), "db", &unknown);
    let error = widgets.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(api_error(error), (404, "NotFound".into()));
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let (server, _) = server();
    let maps: Api<ConfigMap> = Api::namespaced(server.client("operator"), "db");
    let mut map = config_map("held", json!({}));
    map.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    maps.create(&PostParams::default(), &map).await.unwrap();
    let pending = maps.delete("held", &DeleteParams::default()).await.unwrap();
    let pending = pending.left().expect("object kept while finalizers remain");
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert!(maps.get("held").await.is_ok());
    let more = maps
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold", "x/new"]}})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(more), (422, "Invalid".into()));
    maps.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(api_error(maps.get("held").await.unwrap_err()).0, 404);

    maps.create(&PostParams::default(), &config_map("plain", json!({})))
        .await
        .unwrap();
    let gone = maps
        .delete("plain", &DeleteParams::default())
        .await
        .unwrap();
    assert!(gone.is_right(), "deleted at once, answered with a Status");
    assert_eq!(
        api_error(
            maps.delete("plain", &DeleteParams::default())
                .await
                .unwrap_err()
        )
        .0,
        404
    );
}

#[tokio::test]
async fn graceful_pod_deletion_waits_for_the_kubelet() {
    let (server, clock) = server();
    let pods: Api<Pod> = Api::namespaced(server.client("operator"), "db");
    let pp = PostParams::default();
    pods.create(&pp, &pod("scheduled", json!({}), Some("node-1")))
        .await
        .unwrap();
    clock.advance_seconds(10);
    let terminating = pods
        .delete("scheduled", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    let meta = &terminating.metadata;
    assert_eq!(meta.deletion_grace_period_seconds, Some(30));
    assert_eq!(
        meta.deletion_timestamp.as_ref().map(|t| t.0.as_second()),
        Some(1_767_225_600 + 10 + 30)
    );
    assert_eq!(
        meta.generation,
        Some(2),
        "graceful deletion bumps generation"
    );
    // A second delete does not extend the grace period.
    let again = pods
        .delete("scheduled", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        terminating.metadata.resource_version
    );
    assert!(pods.get("scheduled").await.is_ok());
    assert!(server.finish_pod_deletion("db", "scheduled").unwrap());
    assert!(
        server
            .get(&ResourceKey::new("", "v1", "pods", "db", "scheduled"))
            .is_none()
    );

    pods.create(&pp, &pod("forced", json!({}), Some("node-1")))
        .await
        .unwrap();
    let gone = pods
        .delete("forced", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    assert!(gone.is_right());
    // A pod never scheduled has no kubelet to wait for.
    pods.create(&pp, &pod("unscheduled", json!({}), None))
        .await
        .unwrap();
    assert!(
        pods.delete("unscheduled", &DeleteParams::default())
            .await
            .unwrap()
            .is_right()
    );
    pods.create(&pp, &pod("alive", json!({}), Some("node-1")))
        .await
        .unwrap();
    assert!(!server.finish_pod_deletion("db", "alive").unwrap());
    assert_eq!(
        server.finish_pod_deletion("db", "nope").unwrap_err().code,
        404
    );

    let kubelet_deletes: Vec<_> = server
        .take_write_log()
        .into_iter()
        .filter(|w| w.actor == "kubelet")
        .map(|w| (w.verb, w.name, w.code))
        .collect();
    assert_eq!(
        kubelet_deletes,
        [(Verb::Delete, "scheduled".to_string(), 200)]
    );
}
