//! The served world's API as a real API server answers the shipped binary and kubectl:
//! watch timeouts and bookmarks, garbage collection of owned objects.

use std::io::{Read as _, Write as _};
use std::time::{Duration, Instant};

use super::repo_file;
use super::serve::{Served, eventually, kubectl, ok};
use super::serve_external::scenario_without_steps;

/// The address in a kubeconfig (`server: http://ADDR`).
fn served_address(kubeconfig: &std::path::Path) -> String {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let at = text.find("http://").unwrap() + "http://".len();
    text[at..]
        .split(|c: char| c.is_whitespace() || c == '"' || c == '\'')
        .next()
        .unwrap()
        .to_owned()
}

/// One GET over a fresh connection, read until the server closes it (at most 30 s).
fn get_until_closed(address: &str, path: &str) -> (Duration, String) {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let started = Instant::now();
    let mut reply = Vec::new();
    let read = stream.read_to_end(&mut reply);
    assert!(
        read.is_ok(),
        "the watch was not closed within 30 s: {read:?}\n{}",
        String::from_utf8_lossy(&reply)
    );
    (
        started.elapsed(),
        String::from_utf8_lossy(&reply).into_owned(),
    )
}

#[test]
fn served_watches_end_at_their_timeout_with_a_bookmark_before() {
    let scenarios = tempfile::tempdir().unwrap();
    let scenario = scenario_without_steps(scenarios.path());
    let served = Served::start_with(&scenario, &["--speed", "1"]);
    let address = served_address(&served.kubeconfig);

    let (took, reply) = get_until_closed(
        &address,
        "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=4&allowWatchBookmarks=true&resourceVersion=0",
    );
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(20),
        "closed after {took:?}"
    );
    let bookmark = reply
        .lines()
        .find(|line| line.contains("\"BOOKMARK\""))
        .unwrap_or_else(|| panic!("no bookmark 2 s before the deadline:\n{reply}"));
    let event: serde_json::Value = serde_json::from_str(bookmark.trim()).unwrap();
    assert_eq!(event["object"]["kind"], "Pod");
    assert_eq!(event["object"]["apiVersion"], "v1");
    assert!(
        event["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );

    // Without allowWatchBookmarks: no bookmark, the same timeout.
    let (_, reply) = get_until_closed(
        &address,
        "/apis/apps.foundationdb.org/v1beta2/namespaces/default/foundationdbclusters?watch=true&timeoutSeconds=3",
    );
    assert!(!reply.contains("BOOKMARK"), "{reply}");
    let (code, _) = served.stop();
    assert_eq!(code, Some(0));
}

#[test]
fn deleting_a_cluster_collects_everything_it_owns() {
    let Some(kubectl) = kubectl() else { return };
    let served = Served::start_with(
        &repo_file("docs/examples/quickstart.yaml"),
        &["--speed", "30"],
    );
    let config = served.kubeconfig.clone();
    let owned = [
        "get",
        "pods,pvc,services,configmaps",
        "-l",
        "foundationdb.org/fdb-cluster-name=sample",
        "-o",
        "name",
    ];
    let before = ok(&kubectl, &config, &owned);
    assert!(before.contains("pod/sample-storage-1"), "{before}");
    assert!(before.contains("configmap/sample-config"), "{before}");
    let deleted = ok(
        &kubectl,
        &config,
        &["delete", "fdb", "sample", "--wait=false"],
    );
    assert!(deleted.contains("deleted"), "{deleted}");
    // The garbage collector deletes what the cluster owned; the kubelet ends the pods.
    eventually(&kubectl, &config, &owned, |out| out.trim().is_empty());
    let (code, result) = served.stop();
    assert_eq!(code, Some(0), "{}", result["violations"]);
}
