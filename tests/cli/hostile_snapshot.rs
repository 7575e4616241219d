//! Snapshot folders are data people exchange: an identifier in them must never become a
//! path outside the simulated world's root (issue 40).

use std::path::Path;
use std::process::Command;

/// A minimal capture: one node, one cluster, one pod on the node with `uid`.
fn capture(pod_namespace: &str, uid: &str) -> String {
    format!(
        r#"---
apiVersion: v1
kind: Node
metadata: {{name: node-1, uid: 00000000-0000-4000-8000-0000000000a1}}
---
apiVersion: apps.foundationdb.org/v1beta2
kind: FoundationDBCluster
metadata: {{name: sample, namespace: default, uid: 00000000-0000-4000-8000-0000000000a2}}
spec: {{version: 7.1.57}}
---
apiVersion: v1
kind: Pod
metadata:
  name: sample-storage-1
  namespace: {pod_namespace:?}
  uid: {uid:?}
spec:
  nodeName: node-1
  containers:
    - {{name: foundationdb, image: "foundationdb/foundationdb:7.1.57"}}
"#
    )
}

/// Every entry below `dir`, relative to it.
fn entries(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap().flatten() {
            let path = entry.path();
            found.push(path.strip_prefix(dir).unwrap().display().to_string());
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Runs `simulate` on a capture whose pod climbs out of the world root to `victim`;
/// returns the exit code and stderr.
fn simulate_capture(namespace: &str, uid: &str, temp: &Path) -> (Option<i32>, String) {
    let folder = temp.join("snapshot");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("live.yaml"), capture(namespace, uid)).unwrap();
    std::fs::write(
        folder.join("scenario.yaml"),
        "name: from-snapshot\nsnapshot:\n  objects: live.yaml\nsteps:\n  - advance: 60\n",
    )
    .unwrap();
    // The world's root goes under `temp/worlds`, so that `..` climbs to a known place.
    let worlds = temp.join("worlds");
    std::fs::create_dir_all(&worlds).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_fdb-operator"))
        .args(["simulate", "--quiet"])
        .arg(folder.join("scenario.yaml"))
        .env("TMPDIR", &worlds)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `<world root>/pods/<ns>_<name>_<uid>` climbs from `temp/worlds/<root>/pods/x` to
/// `temp/victim`.
const CLIMB: &str = "x/../../../../victim";

#[test]
fn a_snapshot_pod_uid_with_dots_is_refused_and_nothing_outside_the_world_is_touched() {
    let temp = tempfile::tempdir().unwrap();
    let victim = temp.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("keep.txt"), "precious").unwrap();
    let (code, stderr) = simulate_capture("default", CLIMB, temp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("Pod default/sample-storage-1") && stderr.contains("metadata.uid"),
        "{stderr}"
    );
    assert_eq!(entries(&victim), vec!["keep.txt".to_owned()], "{stderr}");
    assert_eq!(
        std::fs::read_to_string(victim.join("keep.txt")).unwrap(),
        "precious"
    );
}

#[test]
fn a_snapshot_pod_namespace_with_dots_is_refused_naming_the_field() {
    let temp = tempfile::tempdir().unwrap();
    let victim = temp.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    let (code, stderr) = simulate_capture(
        "../../../victim",
        "00000000-0000-4000-8000-0000000000a3",
        temp.path(),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("sample-storage-1") && stderr.contains("metadata.namespace"),
        "{stderr}"
    );
    assert!(entries(&victim).is_empty(), "{:?}", entries(&victim));
}

#[test]
fn a_wrong_rehearsal_manifest_is_named_before_the_capture_and_nothing_is_written() {
    let temp = tempfile::tempdir().unwrap();
    // Nothing answers on port 1: had the capture run first, that is what would be said.
    let kubeconfig = temp.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"http://127.0.0.1:1\"}}]\ncontexts: [{name: c, context: {cluster: c}}]\ncurrent-context: c\nusers: []\n",
    )
    .unwrap();
    let output_dir = temp.path().join("out");
    let cluster = "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\n";
    for (manifest, needle) in [
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: sample}\nspec: {containers: []}\n"
                .to_owned(),
            "not a FoundationDBCluster",
        ),
        (
            format!(
                "{cluster}metadata: {{name: sample}}\nspec: {{version: 7.1.57, processCounts: {{storage: -5}}}}\n"
            ),
            "processCounts.storage",
        ),
        (
            format!("{cluster}metadata: {{name: other}}\nspec: {{version: 7.1.57}}\n"),
            "metadata.name",
        ),
        (
            format!(
                "{cluster}metadata: {{name: sample, namespace: decoy}}\nspec: {{version: 7.1.57}}\n"
            ),
            "metadata.namespace",
        ),
    ] {
        let file = temp.path().join("manifest.yaml");
        std::fs::write(&file, &manifest).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_fdb-operator"))
            .args(["snapshot", "sample", "--kubeconfig"])
            .arg(&kubeconfig)
            .arg("--rehearse")
            .arg(&file)
            .arg("-o")
            .arg(&output_dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{needle}: {stderr}");
        assert!(
            stderr.contains("--rehearse") && stderr.contains(needle),
            "{needle}: {stderr}"
        );
        assert!(!output_dir.exists(), "{needle}");
    }
}

#[test]
fn a_capture_whose_secrets_hold_placeholders_says_so_up_front_naming_them() {
    let temp = tempfile::tempdir().unwrap();
    let folder = temp.path().join("snapshot");
    std::fs::create_dir_all(&folder).unwrap();
    let secret = "---\napiVersion: v1\nkind: Secret\nmetadata: {name: fdb-tls, namespace: default, uid: 00000000-0000-4000-8000-0000000000a4}\ndata: {cert.pem: Y2FwdHVyZWQtd2l0aG91dC12YWx1ZQ==}\n";
    std::fs::write(
        folder.join("live.yaml"),
        format!(
            "{}{secret}",
            capture("default", "00000000-0000-4000-8000-0000000000a3")
        ),
    )
    .unwrap();
    std::fs::write(
        folder.join("scenario.yaml"),
        "name: from-snapshot\nsnapshot:\n  objects: live.yaml\nsteps:\n  - advance: 60\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_fdb-operator"))
        .args(["simulate", "--quiet", "-o"])
        .arg(temp.path().join("result.json"))
        .arg(folder.join("scenario.yaml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("warning: ")
            && first.contains("default/fdb-tls")
            && first.contains("--include-secret-values"),
        "{stderr}"
    );
}
