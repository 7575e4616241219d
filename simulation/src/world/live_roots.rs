//! The directories of the worlds alive in this process. A world removes its directory
//! when it is dropped; a process stopped by a signal drops nothing, so its stop handler
//! (`cli/src/stop_signals.rs`) removes what is listed here before it exits.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The live worlds' root directories.
static LIVE: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// A world's root listed as live until this is dropped.
#[derive(Debug)]
pub(crate) struct LiveRoot(PathBuf);

impl LiveRoot {
    /// Lists `root` as live.
    pub(crate) fn register(root: &Path) -> Self {
        let mut live = LIVE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        live.insert(root.to_owned());
        Self(root.to_owned())
    }
}

impl Drop for LiveRoot {
    fn drop(&mut self) {
        let mut live = LIVE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        live.remove(&self.0);
    }
}

/// Removes the directory of every live world (for a process about to exit without
/// dropping them); returns the directories that could not be removed, with why. A world
/// still running may write meanwhile, so each removal is tried a few times.
pub fn remove_live_roots() -> Vec<(PathBuf, std::io::Error)> {
    let roots: Vec<PathBuf> = LIVE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .cloned()
        .collect();
    let mut failed = Vec::new();
    for root in roots {
        let mut outcome = Ok(());
        for _ in 0..5 {
            outcome = match std::fs::remove_dir_all(&root) {
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
                other => other,
            };
            if outcome.is_ok() {
                break;
            }
        }
        if let Err(error) = outcome {
            failed.push((root, error));
        }
    }
    failed
}

/// The live worlds' directories now.
pub fn live_roots() -> Vec<PathBuf> {
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_root_is_removed_and_unlisted_with_its_registration() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("world");
        std::fs::create_dir_all(root.join("pods/a")).unwrap();
        std::fs::write(root.join("pods/a/file"), "x").unwrap();
        let live = LiveRoot::register(&root);
        assert!(live_roots().contains(&root));
        assert!(remove_live_roots().is_empty());
        assert!(!root.exists());
        drop(live);
        assert!(!live_roots().contains(&root));
    }
}
