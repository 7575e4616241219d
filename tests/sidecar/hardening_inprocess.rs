//! In-process hardening tests (issue 14): writes stay inside the output dir, hashes never
//! come from behind a symlink swapped in mid-request, only regular files are present, and
//! unusable inputs are client errors that do not reveal server paths.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fdb_sidecar::AppState;
use http::StatusCode;

use crate::helpers::{call, config};
use crate::support::{CLUSTER, PRIMARY, PodDirs, pod_env, sha256};

/// Every file below `dir` (recursively, not following symlinks).
fn files_below(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).expect("read_dir") {
            let entry = entry.expect("entry");
            let kind = entry.file_type().expect("file type");
            if kind.is_dir() {
                pending.push(entry.path());
            } else {
                found.push(entry.path().display().to_string());
            }
        }
    }
    found.sort();
    found
}

fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_dir())
}

fn is_regular(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

#[tokio::test]
async fn copies_never_write_through_symlinked_output_components() {
    let dirs = PodDirs::new();
    for outside in [
        "elsewhere/bin",
        "elsewhere/lib",
        "elsewhere/version",
        "elsewhere/mv",
    ] {
        std::fs::create_dir_all(dirs.path(outside)).expect("mkdir");
    }
    dirs.write("elsewhere/victim.so", "outside");
    symlink(dirs.path("elsewhere/bin"), dirs.path("out/bin")).expect("symlink");
    symlink(dirs.path("elsewhere/lib"), dirs.path("out/lib")).expect("symlink");
    let extra = [
        "--main-container-version",
        "7.1.50",
        "--copy-library",
        "7.1.57",
        "--copy-library",
        "6.3.25",
    ];
    let state = AppState::new(config(&dirs, &extra, &pod_env())).expect("state");

    // Start-up copies.
    fdb_sidecar::copy::run_startup_copies(&state.config).expect("start-up copies");
    assert_eq!(
        files_below(&dirs.path("elsewhere")),
        vec![dirs.path("elsewhere/victim.so").display().to_string()]
    );
    assert!(is_real_dir(&dirs.path("out/bin")));
    assert!(is_real_dir(&dirs.path("out/lib")));
    assert_eq!(
        dirs.read(&format!("out/bin/{PRIMARY}/fdbserver")),
        format!("fake fdbserver {PRIMARY}\n")
    );
    assert_eq!(dirs.read("out/lib/libfdb_c.so"), "lib 7.1.57");
    assert_eq!(
        dirs.read("out/lib/multiversion/libfdb_c_6.3.25.so"),
        "lib 6.3.25"
    );

    // Deeper components and targets turned into symlinks later: the HTTP copies.
    let version_dir = dirs.path(&format!("out/bin/{PRIMARY}"));
    std::fs::remove_dir_all(&version_dir).expect("rm");
    symlink(dirs.path("elsewhere/version"), &version_dir).expect("symlink");
    std::fs::remove_dir_all(dirs.path("out/lib/multiversion")).expect("rm");
    symlink(dirs.path("elsewhere/mv"), dirs.path("out/lib/multiversion")).expect("symlink");
    std::fs::remove_file(dirs.path("out/lib/libfdb_c.so")).expect("rm");
    symlink(
        dirs.path("elsewhere/victim.so"),
        dirs.path("out/lib/libfdb_c.so"),
    )
    .expect("symlink");
    for path in ["/copy_binaries", "/copy_libraries"] {
        assert_eq!(
            call(&state, "POST", path).await,
            (StatusCode::OK, "OK\n".to_owned()),
            "{path}"
        );
    }
    assert_eq!(
        files_below(&dirs.path("elsewhere")),
        vec![dirs.path("elsewhere/victim.so").display().to_string()]
    );
    assert_eq!(dirs.read("elsewhere/victim.so"), "outside");
    assert!(is_real_dir(&version_dir));
    assert!(is_regular(&version_dir.join("fdbserver")));
    assert!(is_regular(&version_dir.join("fdbcli")));
    assert!(is_real_dir(&dirs.path("out/lib/multiversion")));
    assert!(is_regular(&dirs.path("out/lib/libfdb_c.so")));
    assert_eq!(dirs.read("out/lib/libfdb_c.so"), "lib 7.1.57");
    assert_eq!(
        dirs.read("out/lib/multiversion/libfdb_c_6.3.25.so"),
        "lib 6.3.25"
    );
}

#[tokio::test]
async fn hashes_never_come_from_behind_a_swapped_symlink() {
    let dirs = PodDirs::new();
    dirs.write("out/d/f", "inside");
    dirs.write("outside/f", "secret outside the output dir");
    symlink(dirs.path("outside"), dirs.path("out/d.link")).expect("symlink");
    let state = AppState::new(config(&dirs, &[], &pod_env())).expect("state");
    let inside = sha256(b"inside");
    let secret = sha256(b"secret outside the output dir");

    // Swap out/d between the real directory and a symlink to the outside one, each step
    // an atomic rename, until told to stop (or after a bounded number of rounds).
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let out = dirs.path("out");
        std::thread::spawn(move || {
            let mut rounds = 0u32;
            while !stop.load(Ordering::Relaxed) && rounds < 1_000_000 {
                rounds += 1;
                let _ = std::fs::rename(out.join("d"), out.join("d.real"));
                let _ = std::fs::rename(out.join("d.link"), out.join("d"));
                let _ = std::fs::rename(out.join("d"), out.join("d.link"));
                let _ = std::fs::rename(out.join("d.real"), out.join("d"));
            }
        })
    };
    let started = Instant::now();
    let mut leaked = 0;
    for _ in 0..3_000 {
        if started.elapsed() > Duration::from_secs(4) {
            break;
        }
        let (status, body) = call(&state, "GET", "/check_hash/d/f").await;
        if body == secret {
            leaked += 1;
        } else if status == StatusCode::OK {
            assert_eq!(body, inside);
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().expect("swapper");
    assert_eq!(
        leaked, 0,
        "the hash of a file outside the output dir was served"
    );
    // The swap leaves a real directory in place: the file is served again.
    assert_eq!(
        call(&state, "GET", "/check_hash/d/f").await,
        (StatusCode::OK, inside)
    );
}

#[tokio::test]
async fn only_regular_files_are_present() {
    let dirs = PodDirs::new();
    let state = AppState::new(config(&dirs, &[], &pod_env())).expect("state");
    fdb_sidecar::copy::run_startup_copies(&state.config).expect("copies");
    // A directory where an upgrade expects a staged binary.
    std::fs::create_dir_all(dirs.path("out/bin/7.3.1/fdbserver")).expect("mkdir");
    let status = std::process::Command::new("mkfifo")
        .arg(dirs.path("out/pipe"))
        .status()
        .expect("mkfifo");
    assert!(status.success());
    symlink(dirs.path("out/bin"), dirs.path("out/dirlink")).expect("symlink");
    for rel in [
        "bin/7.3.1/fdbserver".to_owned(),
        "bin".to_owned(),
        "pipe".to_owned(),
        "dirlink".to_owned(),
    ] {
        assert_eq!(
            call(&state, "GET", &format!("/is_present/{rel}")).await,
            (
                StatusCode::BAD_REQUEST,
                format!("{rel} is not a regular file")
            ),
            "{rel}"
        );
    }
    assert_eq!(
        call(&state, "GET", "/is_present/fdb.cluster").await,
        (StatusCode::OK, "OK\n".to_owned())
    );
    assert_eq!(
        call(&state, "GET", "/check_hash/fdb.cluster").await,
        (StatusCode::OK, sha256(CLUSTER.as_bytes()))
    );
}

#[tokio::test]
async fn unusable_inputs_are_client_errors_without_server_paths() {
    let dirs = PodDirs::new();
    let state = AppState::new(config(&dirs, &[], &pod_env())).expect("state");
    fdb_sidecar::copy::run_startup_copies(&state.config).expect("copies");
    let conf_before = dirs.read("out/fdbmonitor.conf");
    let root = dirs.root.path().display().to_string();

    std::fs::write(
        dirs.path("in/fdbmonitor.conf"),
        b"id = \xff\xfe $FDB_INSTANCE_ID\n",
    )
    .expect("write");
    let (status, body) = call(&state, "POST", "/copy_monitor_conf").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body.contains("fdbmonitor.conf is not valid UTF-8"),
        "{body}"
    );
    assert!(!body.contains(&root), "{body}");

    std::fs::remove_file(dirs.path("in/fdbmonitor.conf")).expect("rm");
    std::fs::create_dir(dirs.path("in/fdbmonitor.conf")).expect("mkdir");
    let (status, body) = call(&state, "POST", "/copy_monitor_conf").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body.contains("fdbmonitor.conf is not a regular file"),
        "{body}"
    );
    assert!(!body.contains(&root), "{body}");

    std::fs::remove_file(dirs.path("in/fdb.cluster")).expect("rm");
    std::fs::create_dir(dirs.path("in/fdb.cluster")).expect("mkdir");
    let (status, body) = call(&state, "POST", "/copy_files").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("fdb.cluster is not a regular file"), "{body}");
    assert!(!body.contains(&root), "{body}");

    assert_eq!(dirs.read("out/fdbmonitor.conf"), conf_before);
    assert_eq!(dirs.read("out/fdb.cluster"), CLUSTER);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_stuck_past_its_timeout_answers_503_and_turns_readiness_false() {
    let dirs = PodDirs::new();
    let state =
        AppState::new(config(&dirs, &["--copy-timeout-seconds", "1"], &pod_env())).expect("state");
    fdb_sidecar::copy::run_startup_copies(&state.config).expect("copies");
    // A copy stuck on its input (a hung volume), until released; bounded so that a
    // failing test cannot hang.
    let (release, stuck) = std::sync::mpsc::channel::<()>();
    let err = state
        .run_copy("copy_files", move |_config| {
            let _ = stuck.recv_timeout(Duration::from_secs(30));
            Ok(())
        })
        .await
        .expect_err("a stuck copy times out");
    let response = axum::response::IntoResponse::into_response(err);
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);

    let deadline = Instant::now() + Duration::from_secs(5);
    let not_ready = loop {
        let answer = call(&state, "GET", "/ready").await;
        if answer.0 != StatusCode::OK || Instant::now() > deadline {
            break answer;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        not_ready.0,
        StatusCode::SERVICE_UNAVAILABLE,
        "{not_ready:?}"
    );
    assert!(not_ready.1.contains("copy_files"), "{not_ready:?}");
    // Hashing does not depend on the copy.
    assert_eq!(
        call(&state, "GET", "/check_hash/fdb.cluster").await,
        (StatusCode::OK, sha256(CLUSTER.as_bytes()))
    );
    // Further copies wait for it, but answer in time.
    let (status, body) = call(&state, "POST", "/copy_monitor_conf").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.contains("copy_files has been running"), "{body}");

    release.send(()).expect("release");
    let deadline = Instant::now() + Duration::from_secs(5);
    while call(&state, "GET", "/ready").await.0 != StatusCode::OK {
        assert!(Instant::now() < deadline, "readiness comes back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        call(&state, "POST", "/copy_monitor_conf").await,
        (StatusCode::OK, "OK\n".to_owned())
    );
}
