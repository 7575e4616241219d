//! ConfigMap projection the way the kubelet does it: each ConfigMap version is seen at a
//! time, reaches a pod's volume `delay` later (at pod start the current version is
//! mounted at once), and is written atomically: files go into a fresh timestamped
//! directory, `..data` is swapped to it with a rename, and every key is a symlink
//! `key -> ..data/key`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{ConfigMap, KeyToPath};

use super::confine;
use super::error::WorldError;

/// One version of a ConfigMap as the kubelet saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigMapVersion {
    /// Position in the ConfigMap's history (0 = first seen).
    pub sequence: u64,
    /// The resourceVersion it had.
    pub resource_version: String,
    /// When the world first saw it.
    pub seen_at: Timestamp,
    /// Its data.
    pub data: BTreeMap<String, String>,
}

/// The versions of every ConfigMap seen so far, by `(namespace, name)`.
#[derive(Debug, Clone, Default)]
pub struct ConfigMapHistory {
    versions: BTreeMap<(String, String), Vec<ConfigMapVersion>>,
}

impl ConfigMapHistory {
    /// Records the ConfigMaps' current versions; returns whether a new one was seen.
    pub fn observe(&mut self, config_maps: &[ConfigMap], now: Timestamp) -> bool {
        let mut changed = false;
        for cm in config_maps {
            let key = (
                cm.metadata.namespace.clone().unwrap_or_default(),
                cm.metadata.name.clone().unwrap_or_default(),
            );
            let rv = cm.metadata.resource_version.clone().unwrap_or_default();
            let history = self.versions.entry(key).or_default();
            if history.last().is_some_and(|v| v.resource_version == rv) {
                continue;
            }
            let data = cm.data.clone().unwrap_or_default();
            if history.last().is_some_and(|v| v.data == data) {
                // Metadata-only change: nothing new to project.
                if let Some(last) = history.last_mut() {
                    last.resource_version = rv;
                }
                continue;
            }
            history.push(ConfigMapVersion {
                sequence: history.len() as u64,
                resource_version: rv,
                seen_at: now,
                data,
            });
            changed = true;
        }
        changed
    }

    /// The newest version seen.
    pub fn latest(&self, namespace: &str, name: &str) -> Option<&ConfigMapVersion> {
        self.history(namespace, name).last()
    }

    /// The newest version whose propagation delay has passed at `now`.
    pub fn due(
        &self,
        namespace: &str,
        name: &str,
        now: Timestamp,
        delay: SignedDuration,
    ) -> Option<&ConfigMapVersion> {
        self.history(namespace, name)
            .iter()
            .rev()
            .find(|v| v.seen_at.checked_add(delay).is_ok_and(|at| at <= now))
    }

    /// When the next version newer than `projected` becomes due.
    pub fn next_due(
        &self,
        namespace: &str,
        name: &str,
        projected: u64,
        delay: SignedDuration,
    ) -> Option<Timestamp> {
        self.history(namespace, name)
            .iter()
            .filter(|v| v.sequence > projected)
            .filter_map(|v| v.seen_at.checked_add(delay).ok())
            .min()
    }

    fn history(&self, namespace: &str, name: &str) -> &[ConfigMapVersion] {
        self.versions
            .get(&(namespace.to_owned(), name.to_owned()))
            .map(Vec::as_slice)
            .unwrap_or_default()
    }
}

/// The files a ConfigMap volume shows: `items` (key -> path) when given, else every key
/// under its own name. Keys missing from the data are left out.
pub fn volume_files(
    data: &BTreeMap<String, String>,
    items: Option<&[KeyToPath]>,
) -> BTreeMap<String, String> {
    match items {
        Some(items) => items
            .iter()
            .filter_map(|item| Some((item.path.clone(), data.get(&item.key)?.clone())))
            .collect(),
        None => data.clone(),
    }
}

/// The keys `items` name that `data` lacks. The kubelet refuses such a payload for a
/// ConfigMap volume that is not optional ("configmap references non-existent config
/// key"): a pod does not start with it, and a running pod's volume keeps what it had.
pub fn missing_keys(data: &BTreeMap<String, String>, items: Option<&[KeyToPath]>) -> Vec<String> {
    items
        .unwrap_or_default()
        .iter()
        .filter(|item| !data.contains_key(&item.key))
        .map(|item| item.key.clone())
        .collect()
}

/// Writes `files` into the volume directory `dir` atomically (kubelet layout), as
/// version `stamp`.
pub fn write_volume(
    root: &Path,
    dir: &Path,
    files: &BTreeMap<String, String>,
    stamp: &str,
) -> Result<(), WorldError> {
    let version_name = format!("..{stamp}");
    let version_dir = dir.join(&version_name);
    confine::create_dir_all(root, &version_dir)?;
    let mut top_level = BTreeSet::new();
    for (path, content) in files {
        let relative = Path::new(path);
        if relative.is_absolute()
            || relative
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            continue;
        }
        confine::write(root, &version_dir.join(relative), content)?;
        if let Some(first) = relative.components().next() {
            top_level.insert(first.as_os_str().to_string_lossy().into_owned());
        }
    }
    let tmp_link = dir.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp_link);
    confine::symlink(root, Path::new(&version_name), &tmp_link)?;
    let data_link = dir.join("..data");
    std::fs::rename(&tmp_link, &data_link).map_err(WorldError::io("rename", &data_link))?;

    let entries = std::fs::read_dir(dir).map_err(WorldError::io("read directory", dir))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.starts_with("..") {
            if name != "..data" && name != version_name {
                let _ = confine::remove_dir_all(root, &path);
            }
        } else if !top_level.contains(&name) {
            let _ = std::fs::remove_file(&path);
        }
    }
    for name in &top_level {
        let link = dir.join(name);
        if std::fs::symlink_metadata(&link).is_err() {
            confine::symlink(root, &Path::new("..data").join(name), &link)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A volume directory below a test root (the root is what the writes are confined to).
    struct Dir<'a>(&'a Path);

    impl Dir<'_> {
        fn path(&self) -> &Path {
            self.0
        }
    }

    #[test]
    fn volume_swaps_atomically_and_drops_removed_keys() {
        let root = tempfile::tempdir().unwrap();
        let volume = root.path().join("volume");
        let dir = Dir(&volume);
        let first = BTreeMap::from([
            ("fdb.cluster".to_owned(), "a:b@1.1.1.1:4501".to_owned()),
            ("old".to_owned(), "x".to_owned()),
        ]);
        write_volume(root.path(), dir.path(), &first, "1").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("fdb.cluster")).unwrap(),
            "a:b@1.1.1.1:4501"
        );
        assert!(
            std::fs::symlink_metadata(dir.path().join("fdb.cluster"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        let second = BTreeMap::from([("fdb.cluster".to_owned(), "a:c@2.2.2.2:4501".to_owned())]);
        write_volume(root.path(), dir.path(), &second, "2").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("fdb.cluster")).unwrap(),
            "a:c@2.2.2.2:4501"
        );
        assert!(!dir.path().join("old").exists());
        assert!(!dir.path().join("..1").exists());
        assert_eq!(
            std::fs::read_link(dir.path().join("..data")).unwrap(),
            Path::new("..2")
        );
    }

    #[test]
    fn items_select_and_rename_keys() {
        let data = BTreeMap::from([
            ("fdbmonitor-conf-storage".to_owned(), "conf".to_owned()),
            ("cluster-file".to_owned(), "cf".to_owned()),
            ("running-version".to_owned(), "7.1.57".to_owned()),
        ]);
        let items = [
            KeyToPath {
                key: "fdbmonitor-conf-storage".into(),
                path: "fdbmonitor.conf".into(),
                mode: None,
            },
            KeyToPath {
                key: "cluster-file".into(),
                path: "fdb.cluster".into(),
                mode: None,
            },
            KeyToPath {
                key: "ca-file".into(),
                path: "ca.pem".into(),
                mode: None,
            },
        ];
        let files = volume_files(&data, Some(&items));
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            ["fdb.cluster", "fdbmonitor.conf"]
        );
    }
}
