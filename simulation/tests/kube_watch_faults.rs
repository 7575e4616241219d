//! The simulated API server's watches (through `kube::runtime::watcher` and raw
//! `Api::watch`), injected conflicts, request counters and the write log.

// Test helpers outside `#[test]` fns fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use fdb_operator::clock::VirtualClock;
use fdb_simulation::kube::{FakeApiServer, Verb};
use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use serde_json::json;

fn server(seed: u64) -> FakeApiServer {
    FakeApiServer::new(Arc::new(VirtualClock::fixed_epoch()), seed)
}

fn config_map(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "data": {}}))
        .unwrap()
}

async fn next<S: Stream + Unpin>(stream: &mut S) -> S::Item {
    tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("an event within 5 seconds")
        .expect("the stream goes on")
}

fn summarize(event: watcher::Event<ConfigMap>) -> String {
    let name = |m: &ConfigMap| m.metadata.name.clone().unwrap_or_default();
    match event {
        watcher::Event::Init => "init".into(),
        watcher::Event::InitApply(m) => format!("init-apply {}", name(&m)),
        watcher::Event::InitDone => "init-done".into(),
        watcher::Event::Apply(m) => {
            format!("apply {} {}", name(&m), m.data.unwrap_or_default().len())
        }
        watcher::Event::Delete(m) => format!("delete {}", name(&m)),
    }
}

async fn watcher_sees_changes(config: watcher::Config) {
    let server = server(1);
    let maps: Api<ConfigMap> = Api::namespaced(server.client("operator"), "db");
    let pp = PostParams::default();
    maps.create(&pp, &config_map("before", json!({"app": "fdb"})))
        .await
        .unwrap();
    maps.create(&pp, &config_map("unrelated", json!({"app": "web"})))
        .await
        .unwrap();
    let mut events = watcher(maps.clone(), config.labels("app=fdb")).boxed();
    assert_eq!(summarize(next(&mut events).await.unwrap()), "init");
    assert_eq!(
        summarize(next(&mut events).await.unwrap()),
        "init-apply before"
    );
    assert_eq!(summarize(next(&mut events).await.unwrap()), "init-done");

    let writer: Api<ConfigMap> = Api::namespaced(server.client("kubelet"), "db");
    writer
        .create(&pp, &config_map("after", json!({"app": "fdb"})))
        .await
        .unwrap();
    writer
        .patch(
            "after",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "v"}})),
        )
        .await
        .unwrap();
    writer
        .patch(
            "unrelated",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "v"}})),
        )
        .await
        .unwrap();
    writer
        .delete("before", &DeleteParams::default())
        .await
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(summarize(next(&mut events).await.unwrap()));
    }
    assert_eq!(seen, ["apply after 0", "apply after 1", "delete before"]);
    assert_eq!(server.request_counts()["operator"].watch, 1);
}

#[tokio::test]
async fn runtime_watcher_list_then_watch_sees_added_modified_deleted() {
    watcher_sees_changes(watcher::Config::default()).await;
}

#[tokio::test]
async fn runtime_watcher_streaming_list_sees_added_modified_deleted() {
    watcher_sees_changes(watcher::Config::default().streaming_lists()).await;
}

#[tokio::test]
async fn raw_watch_resumes_and_reports_selector_transitions() {
    let server = server(1);
    let maps: Api<ConfigMap> = Api::namespaced(server.client("operator"), "db");
    let pp = PostParams::default();
    let first = maps
        .create(&pp, &config_map("a", json!({"role": "x"})))
        .await
        .unwrap();
    let since = first.metadata.resource_version.clone().unwrap();
    maps.create(&pp, &config_map("b", json!({"role": "x"})))
        .await
        .unwrap();
    let params = WatchParams::default().labels("role=x");
    let mut stream = maps.watch(&params, &since).await.unwrap().boxed();
    match next(&mut stream).await.unwrap() {
        WatchEvent::Added(m) => assert_eq!(m.metadata.name.as_deref(), Some("b")),
        other => panic!("expected the replayed ADDED b, got {other:?}"),
    }
    let relabel = |role: &str| Patch::Merge(json!({"metadata": {"labels": {"role": role}}}));
    maps.patch("a", &PatchParams::default(), &relabel("y"))
        .await
        .unwrap();
    maps.patch("a", &PatchParams::default(), &relabel("x"))
        .await
        .unwrap();
    let kinds: Vec<String> = stream
        .by_ref()
        .take(2)
        .map_ok(|event| match event {
            WatchEvent::Added(m) => format!("ADDED {}", m.metadata.name.unwrap_or_default()),
            WatchEvent::Deleted(m) => format!("DELETED {}", m.metadata.name.unwrap_or_default()),
            other => format!("{other:?}"),
        })
        .try_collect()
        .await
        .unwrap();
    assert_eq!(kinds, ["DELETED a", "ADDED a"]);
    assert_eq!(server.open_watches(), 1);
    server.close_watches();
    assert!(
        stream.next().await.is_none(),
        "closing watches ends the stream"
    );
}

async fn operator_write_outcomes(seed: u64) -> Vec<u16> {
    let server = server(seed);
    server.set_write_conflict_rate("operator", 0.5);
    let setup: Api<ConfigMap> = Api::namespaced(server.client("kubelet"), "db");
    setup
        .create(&PostParams::default(), &config_map("c", json!({})))
        .await
        .unwrap();
    let maps: Api<ConfigMap> = Api::namespaced(server.client("operator"), "db");
    let mut outcomes = Vec::new();
    for index in 0..30 {
        let patch = Patch::Merge(json!({"data": {"n": index.to_string()}}));
        outcomes.push(
            match maps.patch("c", &PatchParams::default(), &patch).await {
                Ok(_) => 200,
                Err(kube::Error::Api(status)) => status.code,
                Err(other) => panic!("unexpected error {other:?}"),
            },
        );
    }
    // Reads and other actors' writes are never failed.
    maps.get("c").await.unwrap();
    setup
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "1"}})),
        )
        .await
        .unwrap();
    let log = server.take_write_log();
    let injected = log
        .iter()
        .filter(|w| w.detail == "injected conflict")
        .count();
    assert_eq!(injected, outcomes.iter().filter(|c| **c == 409).count());
    assert_eq!(server.request_counts()["operator"].patch, 30);
    outcomes
}

#[tokio::test]
async fn conflict_faults_are_seeded_and_reproducible() {
    let first = operator_write_outcomes(7).await;
    assert_eq!(first, operator_write_outcomes(7).await);
    assert_ne!(first, operator_write_outcomes(8).await);
    let conflicts = first.iter().filter(|code| **code == 409).count();
    assert!(
        (5..=25).contains(&conflicts),
        "{conflicts} of 30 writes conflicted at rate 0.5"
    );
    assert!(first.iter().all(|code| *code == 200 || *code == 409));
}

#[tokio::test]
async fn counters_and_write_log_per_actor() {
    let server = server(1);
    let operator: Api<ConfigMap> = Api::namespaced(server.client("operator"), "db");
    let kubelet: Api<ConfigMap> = Api::namespaced(server.client("kubelet"), "db");
    let pp = PostParams::default();
    operator
        .create(&pp, &config_map("c", json!({"a": "1"})))
        .await
        .unwrap();
    operator.get("c").await.unwrap();
    operator.list(&Default::default()).await.unwrap();
    let patch = Patch::Merge(json!({"metadata": {"labels": {"a": "2"}}}));
    operator
        .patch("c", &PatchParams::default(), &patch)
        .await
        .unwrap();
    let mut current = kubelet.get("c").await.unwrap();
    current.data = Some([("x".to_string(), "y".to_string())].into());
    kubelet.replace("c", &pp, &current).await.unwrap();
    operator
        .delete("c", &DeleteParams::default())
        .await
        .unwrap();
    operator.get("c").await.unwrap_err();

    let counts = server.request_counts();
    let operator_counts = counts["operator"];
    assert_eq!(
        (
            operator_counts.get,
            operator_counts.list,
            operator_counts.create
        ),
        (2, 1, 1)
    );
    assert_eq!(
        (
            operator_counts.patch,
            operator_counts.delete,
            operator_counts.update
        ),
        (1, 1, 0)
    );
    assert_eq!((counts["kubelet"].get, counts["kubelet"].update), (1, 1));

    let log: Vec<(String, Verb, String, String, u16, String)> = server
        .take_write_log()
        .into_iter()
        .map(|w| (w.actor, w.verb, w.resource, w.name, w.code, w.detail))
        .collect();
    let entry = |actor: &str, verb, code, detail: &str| {
        (
            actor.to_string(),
            verb,
            "configmaps".to_string(),
            "c".to_string(),
            code,
            detail.to_string(),
        )
    };
    assert_eq!(
        log,
        [
            entry("operator", Verb::Create, 201, ""),
            entry(
                "operator",
                Verb::Patch,
                200,
                "merge patch: metadata.labels.a"
            ),
            entry("kubelet", Verb::Update, 200, "data.x"),
            entry("operator", Verb::Delete, 200, "removed"),
        ]
    );
    assert!(server.take_write_log().is_empty(), "the log is drained");
}

#[tokio::test]
async fn watch_options_are_checked_as_the_real_server_does() {
    let server = server(1);
    let client = server.client("kubectl");
    let watch = |query: &str| {
        let request = http::Request::get(format!(
            "/api/v1/namespaces/db/configmaps?watch=true&{query}"
        ))
        .body(kube::client::Body::empty())
        .unwrap();
        let client = client.clone();
        async move {
            let response = client.send(request).await.unwrap();
            let code = response.status().as_u16();
            if code == 200 {
                // A watch stream never ends: its head is the answer.
                return (code, String::new());
            }
            let body = http_body_util::BodyExt::collect(response.into_body())
                .await
                .unwrap()
                .to_bytes();
            let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
            (
                code,
                status["message"].as_str().unwrap_or_default().to_owned(),
            )
        }
    };
    // What kubectl and kube's streaming list send are accepted.
    for accepted in [
        "allowWatchBookmarks=true&resourceVersion=0&timeoutSeconds=418",
        "allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
    ] {
        assert_eq!(watch(accepted).await.0, 200, "{accepted}");
    }
    let (code, message) = watch("resourceVersion=0&resourceVersionMatch=NotOlderThan").await;
    assert_eq!(code, 422);
    assert!(
        message.contains("resourceVersionMatch is forbidden for watch unless sendInitialEvents"),
        "{message}"
    );
    let (code, message) = watch("sendInitialEvents=true").await;
    assert_eq!(code, 422);
    assert!(
        message.contains("sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"),
        "{message}"
    );
    let (code, message) = watch("sendInitialEvents=true&resourceVersionMatch=Exact").await;
    assert_eq!(code, 422);
    assert!(
        message.contains("Unsupported value: \"Exact\""),
        "{message}"
    );
}
