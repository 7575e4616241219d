//! Safe writes of snapshot folders (issue 40): no overwrite of a non-empty folder
//! without `force`, no planted symlink followed, nothing left of a refused write.

use std::os::unix::fs::PermissionsExt as _;

use serde_json::json;

use super::*;
use crate::scenario::snapshot_write::write_dir;

fn objects() -> Vec<serde_json::Value> {
    vec![json!({
        "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
        "metadata": {"name": "sample", "namespace": "default"}, "spec": {"version": "7.1.57"}
    })]
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_non_empty_folder_is_refused_without_force_and_nothing_is_written() {
    let temp = tempfile::tempdir().unwrap();
    std::fs::write(temp.path().join("notes.txt"), "mine").unwrap();
    let error = write_dir(temp.path(), &objects(), None, None, false).unwrap_err();
    assert!(
        error.to_string().contains("not empty (notes.txt)"),
        "{error}"
    );
    assert_eq!(names(temp.path()), ["notes.txt"]);
    // With force, the snapshot's files are written next to what was there.
    write_dir(temp.path(), &objects(), None, None, true).unwrap();
    assert_eq!(
        names(temp.path()),
        ["live.yaml", "notes.txt", "scenario.yaml"]
    );
    assert_eq!(
        std::fs::read_to_string(temp.path().join("notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn a_planted_symlink_is_replaced_not_followed() {
    let temp = tempfile::tempdir().unwrap();
    let folder = temp.path().join("snap");
    std::fs::create_dir(&folder).unwrap();
    let victim = temp.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, folder.join("live.yaml")).unwrap();
    write_dir(&folder, &objects(), None, None, true).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(
        !std::fs::symlink_metadata(folder.join("live.yaml"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // A folder that is itself a link is refused.
    let link = temp.path().join("link");
    std::os::unix::fs::symlink(&folder, &link).unwrap();
    let error = write_dir(&link, &objects(), None, None, true).unwrap_err();
    assert!(error.to_string().contains("is a symlink"), "{error}");
}

#[test]
fn a_refused_rehearsal_leaves_no_folder_and_created_files_are_private() {
    let temp = tempfile::tempdir().unwrap();
    let folder = temp.path().join("rehearsal");
    let other = json!({"apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
        "metadata": {"name": "other"}, "spec": {}});
    let error = write_dir(&folder, &objects(), None, Some(&other), false).unwrap_err();
    assert!(error.to_string().contains("--rehearse"), "{error}");
    assert!(!folder.exists());
    write_dir(&folder, &objects(), None, None, false).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&folder), 0o700);
    assert_eq!(mode(&folder.join("live.yaml")), 0o600);
    assert_eq!(names(&folder), ["live.yaml", "scenario.yaml"]);
}

#[test]
fn the_folder_names_its_cluster_and_a_namesakes_manifest_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let folder = temp.path().join("snapshot");
    write_dir(&folder, &objects(), None, None, false).unwrap();
    let scenario = std::fs::read_to_string(folder.join("scenario.yaml")).unwrap();
    assert!(scenario.contains("cluster: default/sample"), "{scenario}");
    let namesake = json!({"apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
        "metadata": {"name": "sample", "namespace": "decoy"}, "spec": {"version": "7.3.43"}});
    let rehearsal = temp.path().join("rehearsal");
    let error = write_dir(&rehearsal, &objects(), None, Some(&namesake), false).unwrap_err();
    assert!(error.to_string().contains("metadata.namespace"), "{error}");
    assert!(!rehearsal.exists());
}
