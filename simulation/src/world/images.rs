//! The fake images' files, one copy per image shared by every container that runs it.
//!
//! A container sees its image's files under its image root (`containers::image_root`).
//! Writing every file per container made a 1000-pod snapshot boot write thousands of
//! files (issue 21). The store writes each image's files once, under
//! `<world root>/images/<image>/`, and a container's image root is a directory of its
//! own (its writable layer: what a process writes there stays the container's) whose
//! image files are hard links to the store's copy. The world never writes through an
//! image file: a restart or a `binaryMissing` fault replaces the root's links, and a
//! copy out of an image (the init container's, a unified pod's shared binaries) is a
//! copy.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::confine;
use super::containers::{IMAGE_BINARIES, ImageContents, binary_content};
use super::error::WorldError;

/// The directories every image root has, with or without files.
const IMAGE_DIRS: [&str; 2] = ["usr/bin", "var/fdb/lib"];

/// The files of an image: path in the image, content.
fn image_files(contents: ImageContents<'_>) -> Vec<(String, String)> {
    let Some(version) = contents.version else {
        return Vec::new();
    };
    let mut files = Vec::new();
    if contents.binaries {
        files.extend(
            IMAGE_BINARIES
                .iter()
                .map(|name| (format!("usr/bin/{name}"), binary_content(name, version))),
        );
    }
    files.push(("var/fdb/version".to_owned(), format!("{version}\n")));
    files.push((
        format!("var/fdb/lib/libfdb_c_{version}.so"),
        format!("libfdb_c {version}\n"),
    ));
    files
}

/// The store's directory name of an image.
fn image_key(contents: ImageContents<'_>) -> String {
    match contents.version {
        None => "no-version".to_owned(),
        Some(version) if contents.binaries => version.to_string(),
        Some(version) => format!("{version}-without-binaries"),
    }
}

/// See the module documentation.
#[derive(Debug)]
pub struct ImageStore {
    /// The world's root: everything the store writes is inside it.
    world_root: PathBuf,
    dir: PathBuf,
    /// The images whose files are in the store.
    written: Mutex<BTreeSet<String>>,
}

impl ImageStore {
    /// A store under `<world root>/images` (created as images are written); every image
    /// root it installs is inside the world's root (`world/confine.rs`).
    pub fn new(world_root: &Path) -> Self {
        Self {
            world_root: world_root.to_path_buf(),
            dir: world_root.join("images"),
            written: Mutex::default(),
        }
    }

    /// The store's copy of the image, written on first use.
    fn image_dir(&self, contents: ImageContents<'_>) -> Result<PathBuf, WorldError> {
        let key = image_key(contents);
        let dir = self.dir.join(&key);
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        if !written.contains(&key) {
            for (path, content) in image_files(contents) {
                confine::write(&self.world_root, &dir.join(path), content)?;
            }
            written.insert(key);
        }
        Ok(dir)
    }

    /// Makes `root` a container's image root holding `contents`, replacing what was
    /// there: `usr/bin/fdbserver` and `usr/bin/fdbcli` naming the version (unless left
    /// out), `var/fdb/version`, and the client library `var/fdb/lib/libfdb_c_<version>.so`,
    /// each a link to the store's copy. An image without a version gets an empty root.
    pub fn install(&self, root: &Path, contents: ImageContents<'_>) -> Result<(), WorldError> {
        if std::fs::symlink_metadata(root).is_ok() {
            confine::remove_dir_all(&self.world_root, root)?;
        }
        for dir in IMAGE_DIRS {
            confine::create_dir_all(&self.world_root, &root.join(dir))?;
        }
        let store = self.image_dir(contents)?;
        for (path, _) in image_files(contents) {
            let link = root.join(&path);
            confine::check_inside(&self.world_root, &link)?;
            std::fs::hard_link(store.join(&path), &link).map_err(WorldError::io("link", &link))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use fdb_shared::FdbVersion;

    use super::*;

    #[test]
    fn containers_of_one_image_share_its_files_and_keep_their_own_root() {
        let temp = tempfile::tempdir().unwrap();
        let store = ImageStore::new(temp.path());
        let version: FdbVersion = "7.1.57".parse().unwrap();
        let full = ImageContents {
            version: Some(&version),
            binaries: true,
        };
        let (a, b) = (temp.path().join("a"), temp.path().join("b"));
        store.install(&a, full).unwrap();
        store.install(&b, full).unwrap();
        let read = |root: &Path, path: &str| std::fs::read_to_string(root.join(path)).unwrap();
        assert_eq!(read(&a, "usr/bin/fdbserver"), "fdbserver 7.1.57\n");
        assert_eq!(read(&b, "var/fdb/version"), "7.1.57\n");
        assert_eq!(
            read(&b, "var/fdb/lib/libfdb_c_7.1.57.so"),
            "libfdb_c 7.1.57\n"
        );
        let inode = |root: &Path| {
            std::fs::metadata(root.join("usr/bin/fdbcli"))
                .unwrap()
                .ino()
        };
        assert_eq!(inode(&a), inode(&b), "one copy of the image's files");
        // What a process writes in its root is its own.
        std::fs::write(a.join("var/fdb/written"), "x").unwrap();
        assert!(!b.join("var/fdb/written").exists());
        // Reinstalled without binaries (the `binaryMissing` fault): the root is replaced,
        // the other container's files stay.
        let missing = ImageContents {
            version: Some(&version),
            binaries: false,
        };
        store.install(&a, missing).unwrap();
        assert!(!a.join("usr/bin/fdbserver").exists());
        assert!(!a.join("var/fdb/written").exists());
        assert_eq!(read(&a, "var/fdb/version"), "7.1.57\n");
        assert_eq!(read(&b, "usr/bin/fdbserver"), "fdbserver 7.1.57\n");
        // An image without a version: empty directories.
        let none = ImageContents {
            version: None,
            binaries: true,
        };
        store.install(&b, none).unwrap();
        assert!(b.join("usr/bin").is_dir() && b.join("var/fdb/lib").is_dir());
        assert!(!b.join("var/fdb/version").exists());
    }
}
