//! The world's files on the host: its temporary root (listed for a stop by signal), the
//! fake images' files, and the running pods' main container filesystems as the served
//! `pods/exec` reaches them.

use std::path::Path;

use super::WorldError;
use super::container_files::ContainerFiles;
use super::images::ImageStore;
use super::live_roots::LiveRoot;

/// Where the world keeps its files.
pub(super) struct WorldFiles {
    root: tempfile::TempDir,
    /// `root` listed for a stop by signal (`live_roots`).
    _live_root: LiveRoot,
    /// The fake images' files, one copy per image (under `root`).
    images: ImageStore,
    /// The running pods' main container filesystems, for the served `pods/exec`.
    container_files: ContainerFiles,
}

impl WorldFiles {
    /// A fresh temporary root.
    pub(super) fn new() -> Result<Self, WorldError> {
        let root = tempfile::Builder::new()
            .prefix("fdb-sim-world-")
            .tempdir()
            .map_err(WorldError::io("create directory", std::env::temp_dir()))?;
        let images = ImageStore::new(root.path());
        let live_root = LiveRoot::register(root.path());
        Ok(Self {
            root,
            _live_root: live_root,
            images,
            container_files: ContainerFiles::default(),
        })
    }

    /// The world's temporary root directory.
    pub(super) fn root(&self) -> &Path {
        self.root.path()
    }

    /// The fake images' files.
    pub(super) fn images(&self) -> &ImageStore {
        &self.images
    }

    /// The running pods' main container filesystems.
    pub(super) fn container_files(&self) -> &ContainerFiles {
        &self.container_files
    }
}
