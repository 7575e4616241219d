//! Snapshot folders are untrusted input (issue 40): the files they name stay inside the
//! folder, are read within the scenario input limits, and an error names the field and
//! the file without echoing what the file holds.

use std::path::Path;

use serde_json::json;

use super::*;

const SECRET: &str = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7";

fn spec(objects: &str) -> SnapshotSpec {
    SnapshotSpec {
        objects: json!(objects),
        status: None,
        cluster: None,
    }
}

/// The problem of loading a snapshot whose objects are `objects` in `folder`.
fn refused(folder: &Path, objects: &str) -> String {
    let (field, message) = spec(objects).load(folder).unwrap_err();
    assert!(!message.contains(SECRET), "{message}");
    format!("{field}: {message}")
}

#[test]
fn file_references_stay_inside_the_snapshot_folder() {
    let temp = tempfile::tempdir().unwrap();
    let folder = temp.path().join("snapshot");
    std::fs::create_dir_all(&folder).unwrap();
    let private = temp.path().join("id_rsa");
    std::fs::write(
        &private,
        format!("-----BEGIN PRIVATE KEY-----\n{SECRET}\n-----END PRIVATE KEY-----\n"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&private, folder.join("live.yaml")).unwrap();
    let absolute = private.to_str().unwrap();
    for (objects, needle) in [
        (absolute, "relative path inside the snapshot folder"),
        ("../id_rsa", "relative path inside the snapshot folder"),
        ("sub/../../id_rsa", "no '..'"),
        ("live.yaml", "leads out of the snapshot folder"),
    ] {
        let message = refused(&folder, objects);
        assert!(
            message.starts_with("snapshot.objects: ") && message.contains(needle),
            "{objects}: {message}"
        );
    }
    // A file in the folder that is not objects: the type is named, not the content.
    std::fs::copy(&private, folder.join("key.yaml")).unwrap();
    let message = refused(&folder, "key.yaml");
    assert!(
        message.contains("key.yaml") && message.contains("found a string"),
        "{message}"
    );
    // The same for the status.
    let status = SnapshotSpec {
        objects: json!([]),
        status: Some(json!("key.yaml")),
        cluster: None,
    };
    let (field, message) = status.load(&folder).unwrap_err();
    assert_eq!(field, "snapshot.status");
    assert!(
        !message.contains(SECRET) && message.contains("not one JSON object"),
        "{message}"
    );
}

#[test]
fn snapshot_files_are_read_within_the_scenario_input_limits() {
    let folder = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(folder.path().join(name), text).unwrap();
    // A key given twice is refused with its line, not silently merged.
    write(
        "dup.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n  name: b\n",
    );
    let message = refused(folder.path(), "dup.yaml");
    assert!(
        message.contains("duplicate key") && message.contains("line 5"),
        "{message}"
    );
    // Deep nesting fails fast (the pre-scan), in the objects and in the status.
    write("deep.yaml", &"[".repeat(200_000));
    let started = std::time::Instant::now();
    let message = refused(folder.path(), "deep.yaml");
    assert!(message.contains("nest deeper than 64"), "{message}");
    let status = SnapshotSpec {
        objects: json!([]),
        status: Some(json!("deep.yaml")),
        cluster: None,
    };
    assert!(
        status
            .load(folder.path())
            .unwrap_err()
            .1
            .contains("nest deeper")
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // Not UTF-8: the offset, not the bytes.
    std::fs::write(folder.path().join("bin.yaml"), b"kind: \xff\xfe").unwrap();
    let message = refused(folder.path(), "bin.yaml");
    assert!(
        message.contains("not UTF-8") && message.contains("offset 6"),
        "{message}"
    );
}

#[test]
fn a_capture_above_the_world_limits_is_refused() {
    let nodes: Vec<Value> = (0..1001)
        .map(|i| json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": format!("n{i}")}}))
        .collect();
    let (field, message) = SnapshotSpec {
        objects: Value::Array(nodes),
        status: None,
        cluster: None,
    }
    .check()
    .unwrap_err();
    assert_eq!(field, "snapshot.objects (Nodes)");
    assert!(
        message.contains("1001 is above the limit of 1000"),
        "{message}"
    );
}

/// A FoundationDBCluster `namespace/name` for a capture.
fn cluster(namespace: &str, name: &str) -> Value {
    json!({"apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
           "metadata": {"name": name, "namespace": namespace}, "spec": {"version": "7.1.57"}})
}

fn check(objects: Vec<Value>, wanted: Option<&str>) -> Result<Captured, Problem> {
    SnapshotSpec {
        objects: Value::Array(objects),
        status: None,
        cluster: wanted.map(str::to_owned),
    }
    .check()
}

#[test]
fn a_decoy_cluster_in_another_namespace_is_never_taken_over() {
    // A namesake in another namespace, listed first: refused (names are unique).
    let (field, message) = check(
        vec![cluster("decoy", "sample"), cluster("default", "sample")],
        None,
    )
    .unwrap_err();
    assert_eq!(
        field,
        "snapshot.objects[1] FoundationDBCluster default/sample: metadata.name"
    );
    assert!(message.contains("also in namespace decoy"), "{message}");
    // Another cluster listed first: the capture must say which one it is of.
    let both = vec![cluster("decoy", "evil"), cluster("default", "sample")];
    let (field, message) = check(both.clone(), None).unwrap_err();
    assert_eq!(field, "snapshot.cluster");
    assert!(message.contains("decoy/evil, default/sample"), "{message}");
    let chosen = check(both.clone(), Some("default/sample")).unwrap();
    assert_eq!(chosen.cluster["metadata"]["namespace"], "default");
    assert_eq!(chosen.cluster["metadata"]["name"], "sample");
    let (field, message) = check(both, Some("decoy/sample")).unwrap_err();
    assert_eq!(field, "snapshot.cluster");
    assert!(
        message.contains("no FoundationDBCluster decoy/sample"),
        "{message}"
    );
}
