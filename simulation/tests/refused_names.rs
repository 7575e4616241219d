//! A pass over a cluster whose names cannot fit: refused with an InvalidSpec Event that
//! the API server accepts, and nothing created.

// Test helpers outside `#[test]` fns fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use fdb_shared::sidecar::client::SidecarClientFactory;
use kube::api::PostParams;

use fdb_operator::clock::{Clock, VirtualClock};
use fdb_operator::controller::{Context, ReconcileError, run_pass};
use fdb_operator::controller::{FdbcliAdminProvider, HttpSidecarProvider};
use fdb_shared::api::FoundationDBCluster;
use fdb_simulation::kube::FakeApiServer;
use kube::Api;

async fn refused_pass(name: &str) -> (FakeApiServer, String) {
    let clock = VirtualClock::starting_at(jiff::Timestamp::UNIX_EPOCH);
    let server = FakeApiServer::new(Arc::new(clock.clone()) as Arc<dyn Clock>, 7);
    let client = server.client("operator");
    let mut cluster =
        FoundationDBCluster::new(name, serde_yaml_ng::from_str("version: 7.1.57").unwrap());
    cluster.metadata.namespace = Some("fdb".to_owned());
    Api::<FoundationDBCluster>::namespaced(client.clone(), "fdb")
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
    let ctx = Context::new(
        client,
        Arc::new(FdbcliAdminProvider {
            tools: fdb_operator::fdb::FdbTools::new(
                PathBuf::from("/nonexistent"),
                Some(PathBuf::from("/nonexistent/fdbcli")),
            ),
            work_dir: std::env::temp_dir(),
            tls: None,
            runner: fdb_operator::fdb::ProcessRunner::shared(),
        }),
        Arc::new(HttpSidecarProvider::new(
            SidecarClientFactory::new(None).unwrap(),
            false,
        )),
        Arc::new(clock),
    );
    let error = run_pass(&ctx, "fdb", name).await.unwrap_err();
    assert!(matches!(error, ReconcileError::InvalidSpec(_)), "{error}");
    (server, error.to_string())
}

#[tokio::test]
async fn a_cluster_whose_names_cannot_fit_gets_an_invalid_spec_event_and_nothing_else() {
    // 70 characters: pod names would be too long. 250: even `<name>.<time>`, the name
    // kube's recorder gave Events, is over 253 characters, so no Event could be written.
    for length in [70, 250] {
        let name = "a".repeat(length);
        let (server, error) = refused_pass(&name).await;
        assert!(error.contains("metadata.name"), "{error}");
        let events = server.list("events.k8s.io", "events", Some("fdb"));
        assert_eq!(events.len(), 1, "{length}: {events:?}");
        let event = &events[0];
        assert_eq!(event["reason"], "InvalidSpec");
        assert_eq!(event["regarding"]["name"], name.as_str());
        assert!(
            event["note"].as_str().unwrap().contains("metadata.name"),
            "{event}"
        );
        for plural in ["pods", "persistentvolumeclaims", "services", "configmaps"] {
            assert!(server.list("", plural, Some("fdb")).is_empty(), "{plural}");
        }
    }
}
