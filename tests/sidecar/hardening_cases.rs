//! Black-box hardening tests (issue 14): stuck copy inputs and idle connections must not
//! make the sidecar unreachable or starve hashing.

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::timeout;

use crate::support::{CLUSTER, PodDirs, SidecarProcess, http, pod_env, sha256};

/// Creates a FIFO at `path`.
fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo");
    assert!(status.success());
}

#[tokio::test]
async fn copies_stuck_on_a_fifo_input_starve_neither_hashing_nor_readiness() {
    let dirs = PodDirs::new();
    let sidecar = SidecarProcess::start(dirs.pod_args(), &pod_env());
    let addr = sidecar.addr;
    // The ConfigMap key turns into a FIFO: opening it for reading would wait for a
    // writer forever.
    std::fs::remove_file(dirs.path("in/fdb.cluster")).expect("remove");
    mkfifo(&dirs.path("in/fdb.cluster"));

    // More copies than the binary has blocking threads (8).
    let copies: Vec<_> = (0..12)
        .map(|_| {
            tokio::spawn(timeout(
                Duration::from_secs(30),
                http(addr, "POST", "/copy_files"),
            ))
        })
        .collect();
    // Give the copies a head start so that they reach the server first.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let hash = timeout(
        Duration::from_secs(5),
        http(addr, "GET", "/check_hash/fdb.cluster"),
    )
    .await
    .expect("check_hash must not wait for stuck copies");
    assert_eq!(
        (hash.status, hash.body.as_str()),
        (200, sha256(CLUSTER.as_bytes()).as_str())
    );
    let ready = timeout(Duration::from_secs(5), http(addr, "GET", "/ready"))
        .await
        .expect("/ready answers");
    assert_eq!(ready.status, 200, "{ready:?}");

    for copy in copies {
        let answer = copy
            .await
            .expect("task")
            .expect("a copy of a FIFO answers instead of hanging");
        assert_eq!(answer.status, 400, "{answer:?}");
        assert!(
            answer.body.contains("fdb.cluster is not a regular file"),
            "{answer:?}"
        );
        let root = dirs.root.path().display().to_string();
        assert!(!answer.body.contains(&root), "{answer:?}");
    }
    // The previous copy in the output dir is untouched.
    assert_eq!(dirs.read("out/fdb.cluster"), CLUSTER);
}

#[tokio::test]
async fn idle_and_slow_connections_do_not_lock_out_new_clients() {
    let dirs = PodDirs::new();
    let sidecar = SidecarProcess::start(dirs.pod_args(), &pod_env());
    let addr = sidecar.addr;
    // As many connections as --max-connections (default 128): half send nothing, half
    // trickle an unfinished header block (slowloris).
    let mut idle = Vec::new();
    for i in 0..128 {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        if i % 2 == 1 {
            stream
                .write_all(b"GET /ready HTTP/1.1\r\nHost: sidecar\r\nX-Slow: ")
                .await
                .expect("write");
        }
        idle.push(stream);
    }
    for path in ["/ready", "/check_hash/fdb.cluster", "/ready"] {
        let answer = timeout(Duration::from_secs(3), http(addr, "GET", path))
            .await
            .unwrap_or_else(|_| panic!("{path} must be served within 3 s"));
        assert_eq!(answer.status, 200, "{path}: {answer:?}");
    }
    drop(idle);
}
