//! The FoundationDB custom resources as a real API server treats them: pruned, defaulted
//! and validated against the served CRDs (422 naming the field, `/status` included,
//! ratcheted on update), `dryRun=All` persisting nothing, and the request kinds the
//! simulated server does not speak refused as a server without them refuses them.

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::{cluster_resource, server};

fn cluster(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
}

fn refusal(error: kube::Error) -> (u16, String) {
    match error {
        kube::Error::Api(status) => (status.code, status.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Sends a raw request through the actor's client and returns code and JSON body.
async fn raw(
    client: &kube::Client,
    method: &str,
    uri: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let request = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(body)
        .unwrap();
    let response = client.send(request.map(kube::client::Body::from)).await;
    let response = match response {
        Ok(response) => response,
        Err(kube::Error::Api(status)) => {
            return (status.code, json!({"message": status.message}));
        }
        Err(other) => panic!("{other:?}"),
    };
    let code = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test]
async fn wrong_types_and_enums_are_refused_with_the_path_even_on_status() {
    let (server, _) = server();
    let clusters: Api<DynamicObject> =
        Api::namespaced_with(server.client("user"), "db", &cluster_resource());
    let wrong = clusters
        .create(
            &PostParams::default(),
            &cluster(
                "sample",
                json!({"version": "7.1.57", "processCounts": {"storage": "three"}}),
            ),
        )
        .await;
    assert_eq!(
        refusal(wrong.unwrap_err()),
        (
            422,
            "FoundationDBCluster.apps.foundationdb.org \"sample\" is invalid: \
             spec.processCounts.storage: Invalid value: \"string\": spec.processCounts.storage \
             in body must be of type integer: \"string\""
                .to_owned()
        )
    );
    clusters
        .create(
            &PostParams::default(),
            &cluster("sample", json!({"version": "7.1.57"})),
        )
        .await
        .unwrap();
    let status = clusters
        .patch_status(
            "sample",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"databaseConfiguration": {
                "perpetual_storage_wiggle_engine": "x"}}})),
        )
        .await;
    let (code, message) = refusal(status.unwrap_err());
    assert_eq!(code, 422);
    assert!(
        message.starts_with(
            "FoundationDBCluster.apps.foundationdb.org \"sample\" is invalid: \
             status.databaseConfiguration.perpetual_storage_wiggle_engine: Unsupported value: \
             \"x\": supported values: \"ssd\", \"ssd-1\""
        ),
        "{message}"
    );
    let stored = clusters.get("sample").await.unwrap();
    assert!(stored.data["status"].get("databaseConfiguration").is_none());
}

#[tokio::test]
async fn unknown_fields_are_pruned_and_defaults_applied() {
    let (server, _) = server();
    let clusters: Api<DynamicObject> =
        Api::namespaced_with(server.client("user"), "db", &cluster_resource());
    let created = clusters
        .create(
            &PostParams::default(),
            &cluster(
                "sample",
                json!({"version": "7.1.57", "bogusField": 1,
                       "processCounts": {"storage": 3, "alsoBogus": true}}),
            ),
        )
        .await
        .unwrap();
    assert!(created.data["spec"].get("bogusField").is_none());
    assert_eq!(created.data["spec"]["processCounts"], json!({"storage": 3}));
    let stored = clusters.get("sample").await.unwrap();
    assert!(stored.data["spec"].get("bogusField").is_none());
}

#[tokio::test]
async fn an_unchanged_invalid_value_is_kept_on_update() {
    let (server, _) = server();
    // Stored before the stricter schema (a snapshot restores it as it was).
    server
        .restore(json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "old", "namespace": "db"},
            "spec": {"version": "7.1.57"},
            "status": {"databaseConfiguration": {"perpetual_storage_wiggle_engine": "nope"}},
        }))
        .unwrap();
    let clusters: Api<DynamicObject> =
        Api::namespaced_with(server.client("user"), "db", &cluster_resource());
    let labelled = clusters
        .patch(
            "old",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labelled.metadata.labels.unwrap()["a"], "b");
    let changed = clusters
        .patch_status(
            "old",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"databaseConfiguration": {
                "perpetual_storage_wiggle_engine": "still-nope"}}})),
        )
        .await;
    assert_eq!(refusal(changed.unwrap_err()).0, 422);
}

#[tokio::test]
async fn dry_run_writes_persist_nothing() {
    let (server, _) = server();
    let clusters: Api<DynamicObject> =
        Api::namespaced_with(server.client("user"), "db", &cluster_resource());
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let answered = clusters
        .create(&dry, &cluster("dry", json!({"version": "7.1.57"})))
        .await
        .unwrap();
    assert_eq!(answered.metadata.name.as_deref(), Some("dry"));
    assert!(answered.metadata.uid.is_some());
    assert!(clusters.get_opt("dry").await.unwrap().is_none());
    let invalid = clusters
        .create(
            &dry,
            &cluster("dry", json!({"processCounts": {"storage": "x"}})),
        )
        .await;
    assert_eq!(refusal(invalid.unwrap_err()).0, 422, "a dry run validates");

    let real = clusters
        .create(
            &PostParams::default(),
            &cluster("real", json!({"version": "7.1.57"})),
        )
        .await
        .unwrap();
    let version_before = server.resource_version();
    let dry_patch = PatchParams {
        dry_run: true,
        ..PatchParams::default()
    };
    let patched = clusters
        .patch(
            "real",
            &dry_patch,
            &Patch::Merge(json!({"spec": {"version": "7.3.43"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["spec"]["version"], "7.3.43");
    let dry_delete = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };
    clusters.delete("real", &dry_delete).await.unwrap();
    let stored = clusters.get("real").await.unwrap();
    assert_eq!(stored.data["spec"]["version"], "7.1.57");
    assert_eq!(
        stored.metadata.resource_version,
        real.metadata.resource_version
    );
    assert_eq!(
        server.resource_version(),
        version_before,
        "nothing was written"
    );
    assert!(
        server.take_write_log().iter().all(|w| w.name != "dry"),
        "dry runs are not logged as writes"
    );
}

#[tokio::test]
async fn request_kinds_the_server_does_not_speak_are_refused_not_ignored() {
    let (server, _) = server();
    let client = server.client("user");
    let path = "/apis/apps.foundationdb.org/v1beta2/namespaces/db/foundationdbclusters";
    let body = serde_json::to_vec(&cluster("c", json!({"version": "7.1.57"}))).unwrap();
    let (code, status) = raw(
        &client,
        "POST",
        &format!("{path}?dryRun=Some"),
        "application/json",
        body.clone(),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: \
         []string{\"Some\"}: supported values: \"All\""
    );
    let (code, _) = raw(
        &client,
        "POST",
        path,
        "application/vnd.kubernetes.protobuf",
        body.clone(),
    )
    .await;
    assert_eq!(code, 415, "protobuf is not spoken");
    let (code, _) = raw(
        &client,
        "PATCH",
        &format!("{path}/c"),
        "application/apply-patch+yaml",
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(code, 415, "no server-side apply");
    let yaml = b"apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata:\n  name: y\nspec:\n  version: 7.1.57\n";
    let (code, created) = raw(&client, "POST", path, "application/yaml", yaml.to_vec()).await;
    assert_eq!(
        (code, created["metadata"]["name"].clone()),
        (201, json!("y"))
    );
    assert!(
        server
            .list("apps.foundationdb.org", "foundationdbclusters", Some("db"))
            .len()
            == 1,
        "only the YAML create was stored"
    );
}

#[tokio::test]
async fn strict_field_validation_refuses_unknown_fields_instead_of_dropping_them() {
    let (server, _) = server();
    let client = server.client("user");
    let path = "/apis/apps.foundationdb.org/v1beta2/namespaces/db/foundationdbclusters";
    let body = serde_json::to_vec(&cluster(
        "strict",
        json!({"version": "7.1.57", "bogusField": 1, "processCounts": {"alsoBogus": 2}}),
    ))
    .unwrap();
    let (code, status) = raw(
        &client,
        "POST",
        &format!("{path}?fieldValidation=Strict"),
        "application/json",
        body.clone(),
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        status["message"],
        "strict decoding error: unknown field \"spec.bogusField\", unknown field \
         \"spec.processCounts.alsoBogus\""
    );
    let (code, _) = raw(
        &client,
        "POST",
        &format!("{path}?fieldValidation=Loose"),
        "application/json",
        body.clone(),
    )
    .await;
    assert_eq!(code, 422, "an unknown fieldValidation value");
    assert!(
        server
            .list("apps.foundationdb.org", "foundationdbclusters", None)
            .is_empty()
    );
    let (code, created) = raw(
        &client,
        "POST",
        &format!("{path}?fieldValidation=Ignore"),
        "application/json",
        body,
    )
    .await;
    assert_eq!(code, 201);
    assert!(created["spec"].get("bogusField").is_none());
}
