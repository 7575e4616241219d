//! The main containers' filesystems, shared with the served world's `pods/exec`: a file a
//! user writes there through exec (`kubectl fdb fix-coordinator-ips` rewriting the cluster
//! file fdbserver keeps on its data volume) is the file the pod's fdbmonitor reads when it
//! starts fdbserver again, as in a real container.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::Pod;

use super::containers::ContainerFs;
use super::pod_runtime::{MAIN_CONTAINER, PodPhase};
use super::{World, confine};

/// The running pods' main container filesystems, by pod uid.
#[derive(Debug, Clone, Default)]
pub struct ContainerFiles(Arc<Mutex<BTreeMap<String, ContainerFs>>>);

/// Why a file could not be written in a container.
#[derive(Debug, thiserror::Error)]
pub enum ContainerFileError {
    /// The pod does not run (or has no main container).
    #[error("the pod's main container is not running")]
    NotRunning,
    /// The path is not an absolute path without `..`.
    #[error("{0}: not an absolute path")]
    BadPath(String),
    /// The host write failed.
    #[error("{path}: {message}")]
    Io {
        /// The container path.
        path: String,
        /// What failed.
        message: String,
    },
}

impl ContainerFiles {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, ContainerFs>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn host_path(
        &self,
        uid: &str,
        path: &str,
    ) -> Result<(ContainerFs, PathBuf), ContainerFileError> {
        let fs = self
            .lock()
            .get(uid)
            .cloned()
            .ok_or(ContainerFileError::NotRunning)?;
        let host = fs
            .host_path(path)
            .ok_or_else(|| ContainerFileError::BadPath(path.to_owned()))?;
        Ok((fs, host))
    }

    /// Reads a file of the pod's main container (`None` when it does not exist).
    pub fn read(&self, uid: &str, path: &str) -> Result<Option<String>, ContainerFileError> {
        let (fs, host) = self.host_path(uid, path)?;
        // Every read stays inside the world's root, as every write does.
        confine::check_inside(fs.root(), &host).map_err(|e| ContainerFileError::Io {
            path: path.to_owned(),
            message: fdb_shared::error_chain::chain_text(&e),
        })?;
        match std::fs::read_to_string(&host) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ContainerFileError::Io {
                path: path.to_owned(),
                message: e.to_string(),
            }),
        }
    }

    /// The container path of the first regular file named `name` below the directory
    /// `dir` (symlinks not followed, entries in name order), as `find DIR -type f -name
    /// NAME -print -quit` prints it.
    pub fn find_first(
        &self,
        uid: &str,
        dir: &str,
        name: &str,
    ) -> Result<Option<String>, ContainerFileError> {
        let (fs, host) = self.host_path(uid, dir)?;
        let io = |message: String| ContainerFileError::Io {
            path: dir.to_owned(),
            message,
        };
        confine::check_inside(fs.root(), &host)
            .map_err(|e| io(fdb_shared::error_chain::chain_text(&e)))?;
        // The directory itself may be a mount (a link to the volume); below it nothing
        // is followed.
        let start = host
            .canonicalize()
            .map_err(|_| io("No such file or directory".to_owned()))?;
        let root = fs.root().canonicalize().map_err(|e| io(e.to_string()))?;
        if !start.starts_with(&root) {
            return Err(io("outside the container".to_owned()));
        }
        let found = find_below(&start, name).map_err(|e| io(e.to_string()))?;
        Ok(found.map(|relative| {
            let base = dir.trim_end_matches('/');
            format!("{base}/{}", relative.display())
        }))
    }

    /// Writes a file of the pod's main container.
    pub fn write(
        &self,
        uid: &str,
        path: &str,
        content: impl AsRef<[u8]>,
    ) -> Result<(), ContainerFileError> {
        let (fs, host) = self.host_path(uid, path)?;
        confine::write(fs.root(), &host, content).map_err(|e| ContainerFileError::Io {
            path: path.to_owned(),
            message: fdb_shared::error_chain::chain_text(&e),
        })
    }
}

/// The path (relative to `dir`) of the first regular file named `name` below `dir`,
/// depth first in name order, without following symlinks.
fn find_below(dir: &Path, name: &str) -> std::io::Result<Option<PathBuf>> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let kind = entry.file_type()?;
        if kind.is_file() && entry.file_name() == name {
            return Ok(Some(PathBuf::from(entry.file_name())));
        }
        if kind.is_dir()
            && let Some(found) = find_below(&entry.path(), name)?
        {
            return Ok(Some(PathBuf::from(entry.file_name()).join(found)));
        }
    }
    Ok(None)
}

#[cfg(test)]
impl ContainerFiles {
    /// Registers a pod's main container filesystem (tests without a world).
    pub(crate) fn insert(&self, uid: &str, fs: ContainerFs) {
        self.lock().insert(uid.to_owned(), fs);
    }
}

impl World {
    /// The registry `pods/exec` reads and writes container files through.
    pub fn container_files(&self) -> ContainerFiles {
        self.files.container_files().clone()
    }

    /// Publishes the running pods' main container filesystems (after each settle).
    pub(super) fn publish_container_files(&self, pods: &[Arc<Pod>]) {
        let mut published = BTreeMap::new();
        for pod in pods {
            let Some(uid) = pod.metadata.uid.as_deref() else {
                continue;
            };
            let Some(runtime) = self.pods.get(uid) else {
                continue;
            };
            if runtime.phase != PodPhase::Running {
                continue;
            }
            let main = pod
                .spec
                .as_ref()
                .and_then(|s| s.containers.iter().find(|c| c.name == MAIN_CONTAINER));
            if let Some(main) = main {
                published.insert(uid.to_owned(), runtime.container_fs(main));
            }
        }
        *self.files.container_files().lock() = published;
    }
}
