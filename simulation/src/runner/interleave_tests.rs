//! A user's write that arrives while the served world advances (an operator pass under
//! way) lands between two of the operator's requests, as on a real API server: the
//! operator's next read sees it, and its write from the object it read before gets 409
//! (`kube/interleave.rs`). Real `kubectl` when installed (skipped, saying so, when not).

use std::sync::Arc;
use std::time::{Duration, Instant};

use fdb_operator::clock::VirtualClock;
use fdb_shared::api::FoundationDBCluster;
use kube::Api;
use serde_json::json;

use super::{USER_ACTOR, operator_kube_client};
use crate::event_log::EventLog;
use crate::kube::FakeApiServer;
use crate::serve::{SERVED_ACTOR, http, kubeconfig};

fn installed_kubectl() -> Option<std::path::PathBuf> {
    let out = std::process::Command::new("sh")
        .args(["-c", "command -v kubectl"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&out.stdout).trim().into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubectl_patch_during_an_advance_is_seen_by_the_operators_next_read() {
    let Some(kubectl) = installed_kubectl() else {
        eprintln!("SKIPPED: kubectl is not installed");
        return;
    };
    let clock = VirtualClock::fixed_epoch();
    let api = FakeApiServer::new(Arc::new(clock.clone()), 1);
    let log = EventLog::new(Arc::new(clock.clone()));
    let turn = Arc::new(tokio::sync::Mutex::new(()));
    let extras = http::Extras {
        exec: None,
        actor: SERVED_ACTOR,
        tools: None,
        turn: Some(turn.clone()),
        control: Arc::new(crate::serve::control::Control::new(api.clone())),
    };
    let server = http::start(
        &api,
        Arc::new(clock.clone()),
        "127.0.0.1:0".parse().unwrap(),
        extras,
    )
    .await
    .unwrap();
    api.create_as(
        USER_ACTOR,
        json!({"apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
               "metadata": {"name": "sample", "namespace": "default"},
               "spec": {"version": "7.1.57"}}),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kubeconfig");
    kubeconfig::write(&config, server.address, "default").unwrap();
    let clusters: Api<FoundationDBCluster> =
        Api::namespaced(operator_kube_client(&api, &log), "default");
    // The operator's pass has read the cluster...
    let stale = clusters.get("sample").await.unwrap();
    // ... and the world advances (holding its turn) when the user's write arrives.
    let advancing = turn.lock().await;
    let mut patch = tokio::process::Command::new(&kubectl)
        .arg("--kubeconfig")
        .arg(&config)
        .args([
            "patch",
            "foundationdbcluster",
            "sample",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"processCounts":{"storage":5}}}"#,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The operator goes on reading, as a pass does: a read sees the write once it has
    // arrived, while the world still advances.
    let started = Instant::now();
    let seen = loop {
        let now = clusters.get("sample").await.unwrap();
        if now.spec.process_counts.storage == Some(5) {
            break now;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the user's patch waited for the advance to end: the operator never read it"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let output = tokio::time::timeout(Duration::from_secs(30), patch.wait())
        .await
        .expect("kubectl patch still waits while the world advances")
        .unwrap();
    assert!(output.success(), "kubectl patch failed");
    // Applied atomically, with a new resourceVersion.
    assert_ne!(
        seen.metadata.resource_version,
        stale.metadata.resource_version
    );
    // The operator's write from the object it read before the user's is refused.
    let refused = clusters
        .replace("sample", &Default::default(), &stale)
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, kube::Error::Api(status) if status.code == 409),
        "{refused:?}"
    );
    drop(advancing);
    server.stop().await;
}
