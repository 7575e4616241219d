//! Black-box tests of the `fdb-sidecar` binary: started on a free loopback port with
//! temporary directories, driven over raw HTTP.

#[cfg(test)]
mod hardening_cases;
#[cfg(test)] // test helpers: unwrap/expect allowed as in tests
mod support;
#[cfg(test)]
mod tls_cases;

use std::os::unix::fs::symlink;

use support::{
    CLUSTER, PRIMARY, PodDirs, SidecarProcess, command, eventually, http, mode, pod_env, sha256,
};

#[tokio::test]
async fn every_endpoint_answers_with_the_contract_bodies() {
    let dirs = PodDirs::new();
    let mut args = dirs.pod_args();
    args.extend(["--main-container-version".to_owned(), PRIMARY.to_owned()]);
    let sidecar = SidecarProcess::start(args, &pod_env());
    let addr = sidecar.addr;

    let ready = http(addr, "GET", "/ready").await;
    assert_eq!((ready.status, ready.body.as_str()), (200, "OK\n"));
    assert!(
        ready
            .headers
            .to_ascii_lowercase()
            .contains("content-type: text/plain")
    );

    let subs = http(addr, "GET", "/substitutions").await;
    assert_eq!(subs.status, 200);
    let subs: serde_json::Value = serde_json::from_str(&subs.body).unwrap();
    assert_eq!(subs["FDB_PUBLIC_IP"], "127.0.0.1");
    assert_eq!(subs["FDB_MACHINE_ID"], "pod-1");
    assert_eq!(subs["FDB_ZONE_ID"], "pod-1");
    assert_eq!(subs["FDB_INSTANCE_ID"], "storage-1");
    assert_eq!(subs["BINARY_DIR"], "/usr/bin");

    let hash = http(addr, "GET", "/check_hash/fdb.cluster").await;
    assert_eq!(
        (hash.status, hash.body.as_str()),
        (200, sha256(CLUSTER.as_bytes()).as_str())
    );
    let conf = dirs.read("out/fdbmonitor.conf");
    assert_eq!(
        conf,
        "[fdbserver.1]\ncommand = /usr/bin/fdbserver\npublic_address = 127.0.0.1:4501\nlocality_instance_id = storage-1\n"
    );
    let conf_hash = http(addr, "GET", "/check_hash/fdbmonitor.conf").await;
    assert_eq!(conf_hash.body, sha256(conf.as_bytes()));

    let missing = http(addr, "GET", "/check_hash/nope.txt").await;
    assert_eq!(missing.status, 404);
    assert!(missing.body.contains("nope.txt not found"), "{missing:?}");
    assert_eq!(
        http(addr, "GET", "/is_present/fdb.cluster").await.body,
        "OK\n"
    );
    let absent = http(addr, "GET", "/is_present/sub/none").await;
    assert_eq!(absent.status, 404);
    assert!(absent.body.contains("sub/none not found"));

    for path in [
        "/copy_files",
        "/copy_binaries",
        "/copy_libraries",
        "/copy_monitor_conf",
    ] {
        let answer = http(addr, "POST", path).await;
        assert_eq!(
            (answer.status, answer.body.as_str()),
            (200, "OK\n"),
            "{path}"
        );
    }
    let refresh = http(addr, "POST", "/refresh_certs").await;
    assert_eq!(
        (refresh.status, refresh.body.as_str()),
        (400, "Server is not using TLS")
    );
    let unknown = http(addr, "GET", "/no/such/endpoint").await;
    assert_eq!(unknown.status, 404);
    assert!(unknown.body.contains("Path /no/such/endpoint not found"));

    let metrics = http(addr, "GET", "/metrics").await;
    assert_eq!(metrics.status, 200);
    assert!(
        metrics
            .body
            .contains("fdb_sidecar_http_requests_total{endpoint=\"/check_hash\",status=\"404\"} 1"),
        "{}",
        metrics.body
    );
    assert!(
        metrics
            .body
            .contains("fdb_sidecar_actions_total{action=\"copy_files\",result=\"ok\"} 1")
    );
    assert!(
        metrics
            .body
            .contains("fdb_sidecar_hash_duration_seconds_count")
    );
}

#[tokio::test]
async fn copy_files_reports_empty_required_files_and_picks_up_changes() {
    let dirs = PodDirs::new();
    let mut args = dirs.pod_args();
    args.extend(["--require-not-empty".to_owned(), "fdb.cluster".to_owned()]);
    let sidecar = SidecarProcess::start(args, &pod_env());
    dirs.write("in/fdb.cluster", "new:cluster@127.0.0.2:4501");
    assert_eq!(http(sidecar.addr, "POST", "/copy_files").await.status, 200);
    assert_eq!(dirs.read("out/fdb.cluster"), "new:cluster@127.0.0.2:4501");

    dirs.write("in/fdb.cluster", "");
    let answer = http(sidecar.addr, "POST", "/copy_files").await;
    assert_eq!(answer.status, 400);
    assert_eq!(
        answer.body,
        format!(
            "No contents for file {}",
            dirs.path("in/fdb.cluster").display()
        )
    );
    assert_eq!(dirs.read("out/fdb.cluster"), "new:cluster@127.0.0.2:4501");

    let conf_before = dirs.read("out/fdbmonitor.conf");
    dirs.write("in/fdbmonitor.conf", "x = $FDB_DNS_NAME\n");
    let answer = http(sidecar.addr, "POST", "/copy_monitor_conf").await;
    assert_eq!(answer.status, 400);
    assert_eq!(dirs.read("out/fdbmonitor.conf"), conf_before);
    assert!(
        answer.body.contains("$FDB_DNS_NAME is not set"),
        "{answer:?}"
    );
}

#[tokio::test]
async fn traversal_and_odd_paths_are_client_errors() {
    let dirs = PodDirs::new();
    dirs.write("secret", "outside");
    std::fs::create_dir_all(dirs.path("out2")).unwrap();
    dirs.write("out2/secret", "sibling");
    symlink(dirs.path("secret"), dirs.path("out/escape")).unwrap();
    symlink(dirs.path("out2"), dirs.path("out/sibling")).unwrap();
    let sidecar = SidecarProcess::start(dirs.pod_args(), &pod_env());
    let addr = sidecar.addr;

    for endpoint in ["check_hash", "is_present"] {
        for rel in [
            "../secret",
            "%2e%2e/secret",
            "%2E%2E%2fsecret",
            "bin/../../secret",
            "/etc/passwd",
            "%2Fetc%2Fpasswd",
            "../out2/secret",
            "escape",
            "sibling/secret",
        ] {
            let answer = http(addr, "GET", &format!("/{endpoint}/{rel}")).await;
            assert_eq!(answer.status, 403, "{endpoint}/{rel}: {answer:?}");
        }
        for rel in ["a%00b", "%ff%fe", &"n".repeat(400)] {
            let answer = http(addr, "GET", &format!("/{endpoint}/{rel}")).await;
            assert_eq!(answer.status, 400, "{endpoint}/{rel}: {answer:?}");
        }
    }
    std::fs::create_dir_all(dirs.path("out/adir")).unwrap();
    let dir_hash = http(addr, "GET", "/check_hash/adir").await;
    assert_eq!(dir_hash.status, 400, "{dir_hash:?}");
    assert_eq!(
        http(addr, "GET", "/check_hash/fdb.cluster/below")
            .await
            .status,
        404
    );
    assert_eq!(
        http(addr, "GET", "/check_hash/./fdb.cluster").await.status,
        200
    );
    // The server is still healthy after all that.
    assert_eq!(http(addr, "GET", "/ready").await.status, 200);
}

#[tokio::test]
async fn concurrent_hash_requests_agree() {
    let dirs = PodDirs::new();
    let big: String = (0..200_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    dirs.write("out/big.bin", &big);
    let sidecar = SidecarProcess::start(dirs.pod_args(), &pod_env());
    let expected = sha256(big.as_bytes());
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let addr = sidecar.addr;
            tokio::spawn(async move {
                let path = if i % 2 == 0 {
                    "/check_hash/big.bin"
                } else {
                    "/check_hash/fdb.cluster"
                };
                (i, http(addr, "GET", path).await)
            })
        })
        .collect();
    for task in tasks {
        let (i, answer) = task.await.unwrap();
        assert_eq!(answer.status, 200);
        if i % 2 == 0 {
            assert_eq!(answer.body, expected);
        } else {
            assert_eq!(answer.body, sha256(CLUSTER.as_bytes()));
        }
    }
}

#[test]
fn init_mode_copies_and_exits() {
    let dirs = PodDirs::new();
    let mut args = dirs.pod_args();
    args.extend(
        [
            "--init-mode",
            "--copy-library",
            "7.1.57",
            "--copy-library",
            "6.3.25",
        ]
        .map(String::from),
    );
    let output = command(&args, &pod_env()).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(dirs.read("out/fdb.cluster"), CLUSTER);
    assert!(
        dirs.read("out/fdbmonitor.conf")
            .contains("locality_instance_id = storage-1")
    );
    assert_eq!(dirs.read("out/lib/libfdb_c.so"), "lib 7.1.57");
    assert_eq!(
        dirs.read("out/lib/multiversion/libfdb_c_6.3.25.so"),
        "lib 6.3.25"
    );
    // Without --main-container-version the main container's version is unknown: like
    // the Python sidecar, stage the binaries and point the conf at them.
    assert_eq!(
        dirs.read(&format!("out/bin/{PRIMARY}/fdbserver")),
        format!("fake fdbserver {PRIMARY}\n")
    );
    assert!(dirs.read("out/fdbmonitor.conf").contains(&format!(
        "command = /var/dynamic-conf/bin/{PRIMARY}/fdbserver"
    )));

    std::fs::remove_file(dirs.path("in/fdb.cluster")).unwrap();
    let output = command(&args, &pod_env()).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("fdb.cluster not found"), "{stderr}");
}

#[test]
fn configuration_errors_exit_non_zero_with_a_message() {
    let dirs = PodDirs::new();
    let mut env = pod_env();
    env.insert("COPY_ONCE".into(), "1".into());
    let output = command(&dirs.pod_args(), &env).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("COPY_ONCE"));

    // Set but empty is not set (the Python sidecar tested `if os.getenv(name)`).
    let mut env = pod_env();
    for name in ["SIDECAR_CONF_DIR", "INPUT_DIR", "OUTPUT_DIR", "COPY_ONCE"] {
        env.insert(name.into(), String::new());
    }
    let mut args = dirs.pod_args();
    args.push("--init-mode".into());
    let output = command(&args, &env).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let mut args = dirs.pod_args();
    args.push("--tls".into());
    let output = command(&args, &pod_env()).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--tls-certificate-file"));

    let output = command(&["--no-such-flag".to_owned()], &pod_env())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let help = command(&["--help".to_owned()], &pod_env())
        .output()
        .unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--substitute-variable"));
}

#[tokio::test]
async fn version_mismatch_stages_binaries_and_points_the_conf_at_them() {
    let dirs = PodDirs::new();
    let mut args = dirs.pod_args();
    args.extend(["--main-container-version".to_owned(), "7.1.50".to_owned()]);
    let sidecar = SidecarProcess::start(args, &pod_env());
    let staged = dirs.path(&format!("out/bin/{PRIMARY}/fdbserver"));
    assert_eq!(
        std::fs::read_to_string(&staged).unwrap(),
        format!("fake fdbserver {PRIMARY}\n")
    );
    assert_eq!(mode(&staged), 0o744);
    assert_eq!(
        mode(&dirs.path(&format!("out/bin/{PRIMARY}/fdbcli"))),
        0o744
    );
    let present = http(
        sidecar.addr,
        "GET",
        &format!("/is_present/bin/{PRIMARY}/fdbserver"),
    )
    .await;
    assert_eq!(present.status, 200);
    assert!(dirs.read("out/fdbmonitor.conf").contains(&format!(
        "command = /var/dynamic-conf/bin/{PRIMARY}/fdbserver"
    )));
    let subs: serde_json::Value =
        serde_json::from_str(&http(sidecar.addr, "GET", "/substitutions").await.body).unwrap();
    assert_eq!(
        subs["BINARY_DIR"],
        format!("/var/dynamic-conf/bin/{PRIMARY}")
    );
}

#[tokio::test]
async fn restart_answers_then_exits_non_zero() {
    let dirs = PodDirs::new();
    let mut sidecar = SidecarProcess::start(dirs.pod_args(), &pod_env());
    let answer = http(sidecar.addr, "POST", "/restart").await;
    assert_eq!((answer.status, answer.body.as_str()), (200, "OK\n"));
    assert_eq!(sidecar.wait_exit().code(), Some(3));
}

#[test]
fn sigterm_stops_gracefully() {
    let dirs = PodDirs::new();
    let mut sidecar = SidecarProcess::start(dirs.pod_args(), &pod_env());
    sidecar.terminate();
    assert_eq!(sidecar.wait_exit().code(), Some(0));
    assert!(sidecar.log_text().contains("server stopped"));
}

#[tokio::test]
async fn watch_input_follows_configmap_swaps() {
    let dirs = PodDirs::new();
    // Kubelet layout: files are symlinks into ..data, which is swapped atomically.
    std::fs::remove_file(dirs.path("in/fdb.cluster")).unwrap();
    std::fs::remove_file(dirs.path("in/fdbmonitor.conf")).unwrap();
    dirs.write("in/..v1/fdb.cluster", CLUSTER);
    dirs.write("in/..v1/fdbmonitor.conf", "id = $FDB_INSTANCE_ID v1\n");
    symlink("..v1", dirs.path("in/..data")).unwrap();
    symlink("..data/fdb.cluster", dirs.path("in/fdb.cluster")).unwrap();
    symlink("..data/fdbmonitor.conf", dirs.path("in/fdbmonitor.conf")).unwrap();
    let mut args = dirs.pod_args();
    args.push("--watch-input".into());
    let _sidecar = SidecarProcess::start(args, &pod_env());
    assert_eq!(dirs.read("out/fdbmonitor.conf"), "id = storage-1 v1\n");

    dirs.write("in/..v2/fdb.cluster", "moved:x@127.0.0.9:4501");
    dirs.write("in/..v2/fdbmonitor.conf", "id = $FDB_INSTANCE_ID v2\n");
    symlink("..v2", dirs.path("in/..data_tmp")).unwrap();
    std::fs::rename(dirs.path("in/..data_tmp"), dirs.path("in/..data")).unwrap();
    assert!(eventually(5, || std::fs::read_to_string(
        dirs.path("out/fdbmonitor.conf")
    )
    .is_ok_and(|c| c == "id = storage-1 v2\n")));
    assert_eq!(dirs.read("out/fdb.cluster"), "moved:x@127.0.0.9:4501");
}

#[tokio::test]
async fn a_fifo_in_the_output_dir_is_refused_and_blocks_nothing() {
    let dirs = PodDirs::new();
    let fifo = dirs.path("out/pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let mut sidecar = SidecarProcess::start(dirs.pod_args(), &pod_env());
    let addr = sidecar.addr;
    let limit = std::time::Duration::from_secs(10);
    // More requests than hashing slots: none may stay stuck on the FIFO.
    for _ in 0..6 {
        let answer = tokio::time::timeout(limit, http(addr, "GET", "/check_hash/pipe"))
            .await
            .expect("check_hash of a FIFO must answer");
        assert_eq!(answer.status, 400, "{answer:?}");
        assert!(answer.body.contains("pipe"), "{answer:?}");
    }
    let hash = tokio::time::timeout(limit, http(addr, "GET", "/check_hash/fdb.cluster"))
        .await
        .expect("other hashes still work");
    assert_eq!(hash.body, sha256(CLUSTER.as_bytes()));
    // Only a regular file is present (issue 14): a FIFO is a client error, like in
    // check_hash, and is not opened either.
    let present = tokio::time::timeout(limit, http(addr, "GET", "/is_present/pipe"))
        .await
        .expect("is_present of a FIFO must answer");
    assert_eq!(
        (present.status, present.body.as_str()),
        (400, "pipe is not a regular file")
    );
    let restart = http(addr, "POST", "/restart").await;
    assert_eq!(restart.status, 200);
    assert_eq!(sidecar.wait_exit().code(), Some(3));
}
