//! What `kubectl delete` reads while it waits for a pod to go (GET, LIST by
//! `fieldSelector=metadata.name=<name>`, WATCH from the list's resourceVersion with
//! `allowWatchBookmarks` and `timeoutSeconds`), when the pod's controller recreates it
//! under the same name: the answers of a real API server, event for event.

use futures::{FutureExt as _, StreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

use super::{config_map, pod, server};

/// Type and uid of each event already sent on the watch (none is awaited).
async fn pending_events(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<Pod>>> + Unpin),
) -> Vec<(String, String)> {
    let mut seen = Vec::new();
    while let Some(Some(event)) = stream.next().now_or_never() {
        let (kind, pod) = match event.unwrap() {
            WatchEvent::Added(p) => ("ADDED", p),
            WatchEvent::Modified(p) => ("MODIFIED", p),
            WatchEvent::Deleted(p) => ("DELETED", p),
            other => panic!("unexpected event {other:?}"),
        };
        seen.push((kind.to_owned(), pod.metadata.uid.unwrap_or_default()));
    }
    seen
}

#[tokio::test]
async fn a_wait_for_deletion_sees_the_deletion_of_a_pod_recreated_under_its_name() {
    let (server, _) = server();
    let pods: Api<Pod> = Api::namespaced(server.client("kubectl"), "db");
    let maps = Api::namespaced(server.client("other"), "db");
    let pp = PostParams::default();
    let old = pods
        .create(&pp, &pod("p", json!({}), Some("node-1")))
        .await
        .unwrap();
    let old_uid = old.metadata.uid.clone().unwrap();
    pods.delete("p", &DeleteParams::default()).await.unwrap();
    // Other writes: the store's resourceVersion moves past the pod's.
    maps.create(&pp, &config_map("other", json!({})))
        .await
        .unwrap();
    let by_name = ListParams::default().fields("metadata.name=p");
    let listed = pods.list(&by_name).await.unwrap();
    let list_version = listed.metadata.resource_version.clone().unwrap();
    assert_eq!(
        list_version,
        server.resource_version().to_string(),
        "a list answers the store's resourceVersion, not its items'"
    );
    assert_eq!(listed.items.len(), 1);

    // The kubelet removes the pod, its controller recreates it, and only then does
    // the watch from the list's version start: the replay carries both.
    assert!(server.finish_pod_deletion("db", "p").unwrap());
    let new = pods
        .create(&pp, &pod("p", json!({}), Some("node-1")))
        .await
        .unwrap();
    let new_uid = new.metadata.uid.clone().unwrap();
    let watch = WatchParams::default()
        .fields("metadata.name=p")
        .timeout(290);
    assert!(watch.bookmarks, "kube asks for bookmarks, as kubectl does");
    let mut stream = pods.watch(&watch, &list_version).await.unwrap().boxed();
    assert_eq!(
        pending_events(&mut stream).await,
        [
            ("DELETED".into(), old_uid),
            ("ADDED".into(), new_uid.clone())
        ]
    );

    // A list taken after the removal holds nothing, and a watch from its version sees
    // only the new pod (a real server answers the same; kubectl's wait then watches the
    // new pod: its own race, kubernetes/kubernetes#123177).
    pods.delete("p", &DeleteParams::default()).await.unwrap();
    assert!(server.finish_pod_deletion("db", "p").unwrap());
    let emptied = pods.list(&by_name).await.unwrap();
    assert!(emptied.items.is_empty());
    let after = emptied.metadata.resource_version.unwrap();
    assert_eq!(after, server.resource_version().to_string());
    let third = pods
        .create(&pp, &pod("p", json!({}), Some("node-1")))
        .await
        .unwrap();
    let mut stream = pods.watch(&watch, &after).await.unwrap().boxed();
    assert_eq!(
        pending_events(&mut stream).await,
        [("ADDED".into(), third.metadata.uid.unwrap())]
    );
}
