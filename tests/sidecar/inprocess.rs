//! In-process tests: the router through `tower::ServiceExt::oneshot`, and the shared
//! `SidecarClient` against sidecars started with `Sidecar::start` on loopback.

#[cfg(test)] // test helpers: unwrap/expect allowed as in tests
mod support;

use std::collections::BTreeMap;

use axum::body::Body;
use fdb_shared::sidecar::{SidecarApi, SidecarClient, SidecarClientError, protocol};
use fdb_sidecar::{AppState, ExitReason, Sidecar, SidecarConfig, app};
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use support::{CLUSTER, PRIMARY, PodDirs, pod_env, sha256};
use tower::ServiceExt;

#[cfg(test)] // helpers of the tests below: unwrap allowed as in tests
mod helpers {
    use super::*;

    pub fn config(dirs: &PodDirs, extra: &[&str], env: &BTreeMap<String, String>) -> SidecarConfig {
        let mut args = dirs.pod_args();
        args.extend(extra.iter().map(|s| s.to_string()));
        SidecarConfig::from_args(args, env).unwrap()
    }

    pub async fn call(state: &AppState, method: &str, uri: &str) -> (StatusCode, String) {
        let request = Request::builder()
            .method(method)
            .uri(uri)
            .body(Body::empty())
            .unwrap();
        let response = app(state.clone()).oneshot(request).await.unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }
}

use helpers::{call, config};

#[cfg(test)]
mod hardening_inprocess;

#[tokio::test]
async fn router_serves_the_contract_in_process() {
    let dirs = PodDirs::new();
    let state = AppState::new(config(&dirs, &[], &pod_env())).unwrap();
    fdb_sidecar::copy::run_startup_copies(&state.config).unwrap();
    assert_eq!(
        call(&state, "GET", "/ready").await,
        (StatusCode::OK, "OK\n".into())
    );
    assert_eq!(
        call(&state, "GET", "/check_hash/fdb.cluster").await,
        (StatusCode::OK, sha256(CLUSTER.as_bytes()))
    );
    assert_eq!(
        call(&state, "GET", "/check_hash/%2e%2e/version").await.0,
        StatusCode::FORBIDDEN
    );
    let (status, body) = call(&state, "GET", "/is_present/x/y").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains("x/y not found"));
    assert_eq!(
        call(&state, "POST", "/refresh_certs").await,
        (StatusCode::BAD_REQUEST, "Server is not using TLS".into())
    );
    assert_eq!(
        call(&state, "GET", "/what").await,
        (StatusCode::NOT_FOUND, "Path /what not found".into())
    );
    assert_eq!(call(&state, "POST", "/restart").await.0, StatusCode::OK);
    assert!(state.restart.is_cancelled());
}

#[tokio::test]
async fn known_paths_with_the_wrong_method_are_not_found() {
    let dirs = PodDirs::new();
    let state = AppState::new(config(&dirs, &[], &pod_env())).unwrap();
    for (method, path) in [
        ("GET", "/copy_files"),
        ("GET", "/restart"),
        ("POST", "/ready"),
        ("DELETE", "/substitutions"),
        ("POST", "/check_hash/fdb.cluster"),
        ("PUT", "/is_present/fdb.cluster"),
    ] {
        assert_eq!(
            call(&state, method, path).await,
            (StatusCode::NOT_FOUND, format!("Path {path} not found")),
            "{method} {path}"
        );
    }
    assert!(!state.restart.is_cancelled());
}

#[tokio::test]
async fn a_missing_output_dir_answers_not_found() {
    let dirs = PodDirs::new();
    let state = AppState::new(config(&dirs, &[], &pod_env())).unwrap();
    std::fs::remove_dir_all(dirs.path("out")).unwrap();
    for uri in ["/check_hash/fdb.cluster", "/is_present/fdb.cluster"] {
        assert_eq!(
            call(&state, "GET", uri).await,
            (StatusCode::NOT_FOUND, "fdb.cluster not found".into()),
            "{uri}"
        );
    }
}

#[tokio::test]
async fn a_template_with_an_unset_variable_is_a_client_error() {
    let dirs = PodDirs::new();
    let state = AppState::new(config(&dirs, &[], &pod_env())).unwrap();
    fdb_sidecar::copy::run_startup_copies(&state.config).unwrap();
    let before = dirs.read("out/fdbmonitor.conf");
    dirs.write(
        "in/fdbmonitor.conf",
        "[fdbserver.1]\npublic_address = $FDB_NO_SUCH_VAR:4501\n",
    );
    let (status, body) = call(&state, "POST", "/copy_monitor_conf").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("$FDB_NO_SUCH_VAR"), "{body}");
    assert!(body.contains("line 2"), "{body}");
    assert_eq!(dirs.read("out/fdbmonitor.conf"), before);
}

#[tokio::test]
async fn client_drives_an_in_process_sidecar_during_an_upgrade() {
    let dirs = PodDirs::new();
    let config = config(&dirs, &["--main-container-version", "7.1.50"], &pod_env());
    let running = Sidecar::start(config, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let base = format!("http://{}", running.local_addr());
    let client = SidecarClient::new(&base, None).unwrap();

    client.ready().await.unwrap();
    let subs = client.substitutions().await.unwrap();
    assert_eq!(
        subs["BINARY_DIR"],
        format!("/var/dynamic-conf/bin/{PRIMARY}")
    );
    assert_eq!(
        client.check_hash(protocol::CLUSTER_FILE).await.unwrap(),
        Some(sha256(CLUSTER.as_bytes()))
    );
    assert_eq!(client.check_hash("missing").await.unwrap(), None);
    assert!(
        client
            .is_present(&protocol::staged_binary_path(PRIMARY, "fdbserver"))
            .await
            .unwrap()
    );
    assert!(!client.is_present("bin/9.9.9/fdbserver").await.unwrap());

    // The operator's loop: the hash differs after a ConfigMap change until copy_files.
    dirs.write("in/fdb.cluster", "new:c@127.0.0.3:4501");
    assert_ne!(
        client.check_hash("fdb.cluster").await.unwrap(),
        Some(sha256(b"new:c@127.0.0.3:4501"))
    );
    client.copy_files().await.unwrap();
    assert_eq!(
        client.check_hash("fdb.cluster").await.unwrap(),
        Some(sha256(b"new:c@127.0.0.3:4501"))
    );
    client.copy_binaries().await.unwrap();
    client.copy_libraries().await.unwrap();
    client.copy_monitor_conf().await.unwrap();

    // The client refuses paths the url crate would silently normalize.
    let err = client.check_hash("../version").await.unwrap_err();
    assert!(
        matches!(err, SidecarClientError::InvalidPath { .. }),
        "{err}"
    );
    assert!(!err.is_unreachable());

    assert_eq!(running.stop().await, ExitReason::Stopped);
    let err = client.ready().await.unwrap_err();
    assert!(err.is_unreachable(), "{err}");
}

#[tokio::test]
async fn many_sidecars_in_one_process_with_their_own_env_and_restart_signal() {
    let mut pods = Vec::new();
    for i in 1..=3 {
        let dirs = PodDirs::new();
        let mut env = pod_env();
        env.insert("FDB_INSTANCE_ID".into(), format!("storage-{i}"));
        env.insert("FDB_POD_IP".into(), format!("127.0.0.{i}"));
        let config = config(&dirs, &[], &env);
        let bind = format!("127.0.0.{i}:0").parse().unwrap();
        let running = Sidecar::start(config, bind).await.unwrap();
        pods.push((dirs, running));
    }
    for (i, (dirs, running)) in pods.iter().enumerate() {
        let client = SidecarClient::new(&format!("http://{}", running.local_addr()), None).unwrap();
        let subs = client.substitutions().await.unwrap();
        assert_eq!(subs["FDB_INSTANCE_ID"], format!("storage-{}", i + 1));
        assert_eq!(subs["FDB_PUBLIC_IP"], format!("127.0.0.{}", i + 1));
        assert!(
            dirs.read("out/fdbmonitor.conf")
                .contains(&format!("public_address = 127.0.0.{}:4501", i + 1))
        );
    }
    let (_dirs, mut first) = pods.remove(0);
    let client = SidecarClient::new(&format!("http://{}", first.local_addr()), None).unwrap();
    client.restart().await.unwrap();
    assert_eq!(first.wait().await, ExitReason::RestartRequested);
    // The other sidecars keep serving.
    for (_dirs, running) in &pods {
        SidecarClient::new(&format!("http://{}", running.local_addr()), None)
            .unwrap()
            .ready()
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn start_fails_clearly_when_a_startup_copy_fails() {
    let dirs = PodDirs::new();
    std::fs::remove_file(dirs.path("in/fdb.cluster")).unwrap();
    let err = Sidecar::start(
        config(&dirs, &[], &pod_env()),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap_err();
    let text = fdb_shared::error_chain::chain_text(&err);
    assert!(
        text.starts_with("start-up copy failed: Input file ")
            && text.ends_with("fdb.cluster not found"),
        "{text}"
    );
}
