//! The Go operator's reference material, read by the CRD parity tests.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// The shared reference material: `$FDB_REFERENCE_DIR`, else `../shared/reference` next
/// to the repository.
pub fn reference_dir() -> PathBuf {
    let dir = std::env::var_os("FDB_REFERENCE_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/reference"),
        PathBuf::from,
    );
    assert!(
        dir.is_dir(),
        "the Go operator's reference material is not at {} (set FDB_REFERENCE_DIR)",
        dir.display()
    );
    dir
}

/// Every YAML document of `path`, as JSON (documents that are not YAML maps are left out).
pub fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .filter_map(|document| Value::deserialize(document).ok())
        .filter(Value::is_object)
        .collect()
}

pub fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}
