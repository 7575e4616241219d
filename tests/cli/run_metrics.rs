//! `fdb-operator run` where its metrics address is taken (the served world's sidecars
//! hold port 8080): it stops at once with a message naming `--metrics-address`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binary's exit status and stderr, killed (and the test failed) past 60 s.
fn run_until_exit(command: &mut Command) -> (Option<i32>, String) {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut text).unwrap();
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fdb-operator run still running after 60 s with its metrics port taken");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (status.code(), reader.join().unwrap())
}

#[test]
fn a_taken_metrics_address_stops_run_with_a_message_naming_the_flag() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = held.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    // An API server nobody serves: the port conflict must be reported before any watch.
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n",
    )
    .unwrap();
    let (code, stderr) = run_until_exit(
        Command::new(env!("CARGO_BIN_EXE_fdb-operator"))
            .args(["run", "--metrics-address", &address])
            .args(["--work-dir", dir.path().join("work").to_str().unwrap()])
            .env("KUBECONFIG", &kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST"),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("the metrics address {address} is already in use"))
            && stderr.contains("--metrics-address ADDR"),
        "{stderr}"
    );
    drop(held);
}
