//! The main containers' filesystems, shared with the served world's `pods/exec`: a file a
//! user writes there through exec (`kubectl fdb fix-coordinator-ips` rewriting the cluster
//! file fdbserver keeps on its data volume) is the file the pod's fdbmonitor reads when it
//! starts fdbserver again, as in a real container.

use std::collections::BTreeMap;
use std::path::PathBuf;
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

    /// Writes a file of the pod's main container.
    pub fn write(&self, uid: &str, path: &str, content: &str) -> Result<(), ContainerFileError> {
        let (fs, host) = self.host_path(uid, path)?;
        confine::write(fs.root(), &host, content).map_err(|e| ContainerFileError::Io {
            path: path.to_owned(),
            message: fdb_shared::error_chain::chain_text(&e),
        })
    }
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
