//! The world's host paths stay inside its root (issue 40): every directory the world
//! creates, every file it writes and every tree it removes goes through these functions,
//! which refuse a path that is not below the root, has a `.` or `..` element, or passes
//! through a symlink leading out of the root. Directory names built from object
//! identifiers come from [`dir_name`], which hashes anything that is not one plain path
//! element (the API server already refuses such identifiers: `kube/identity.rs`; this is
//! the second wall).

use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use super::error::WorldError;

/// Checks that `path` is strictly below `root`, with only plain elements after it, and
/// that the deepest existing directory on the way (`path` itself unless `own_link`,
/// where a symlink at `path` is the thing acted on, not followed) resolves inside the
/// root.
fn check(root: &Path, path: &Path, action: &'static str, own_link: bool) -> Result<(), WorldError> {
    let outside = || WorldError::OutsideRoot {
        action,
        path: path.to_path_buf(),
        root: root.to_path_buf(),
    };
    let rest = path.strip_prefix(root).map_err(|_| outside())?;
    if rest.as_os_str().is_empty() || !rest.components().all(|c| matches!(c, Component::Normal(_)))
    {
        return Err(outside());
    }
    let start = if own_link { path.parent() } else { Some(path) };
    let existing = start
        .into_iter()
        .flat_map(Path::ancestors)
        .find(|p| std::fs::symlink_metadata(p).is_ok());
    let Some(existing) = existing else {
        return Err(outside());
    };
    let resolved = existing.canonicalize().map_err(|_| outside())?;
    let canonical_root = root.canonicalize().map_err(|_| outside())?;
    if resolved.starts_with(&canonical_root) {
        Ok(())
    } else {
        Err(outside())
    }
}

/// Whether `path` may be created, written or removed by the world rooted at `root`.
pub fn check_inside(root: &Path, path: &Path) -> Result<(), WorldError> {
    check(root, path, "use", false)
}

/// `create_dir_all`, inside the root only.
pub fn create_dir_all(root: &Path, dir: &Path) -> Result<(), WorldError> {
    check(root, dir, "create directory", false)?;
    std::fs::create_dir_all(dir).map_err(WorldError::io("create directory", dir))
}

/// Writes `content` to `file` (creating its parent directories), inside the root only.
pub fn write(root: &Path, file: &Path, content: impl AsRef<[u8]>) -> Result<(), WorldError> {
    check(root, file, "write", false)?;
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).map_err(WorldError::io("create directory", parent))?;
    }
    std::fs::write(file, content).map_err(WorldError::io("write", file))
}

/// Makes `link` a symlink to `target`; the link is inside the root, and so is an absolute
/// target (a relative one must stay below the link's directory).
pub fn symlink(root: &Path, target: &Path, link: &Path) -> Result<(), WorldError> {
    check(root, link, "link", true)?;
    if target.is_absolute() {
        check(root, target, "link to", false)?;
    } else if !target
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
    {
        return Err(WorldError::OutsideRoot {
            action: "link to",
            path: target.to_path_buf(),
            root: root.to_path_buf(),
        });
    }
    std::os::unix::fs::symlink(target, link).map_err(WorldError::io("link", link))
}

/// `remove_dir_all`, inside the root only (never the root itself; a symlink at `dir` is
/// removed, not followed).
pub fn remove_dir_all(root: &Path, dir: &Path) -> Result<(), WorldError> {
    check(root, dir, "remove", true)?;
    std::fs::remove_dir_all(dir).map_err(WorldError::io("remove", dir))
}

/// One path element from identifiers (`<namespace>_<name>_<uid>`): the parts joined by
/// `_` when each is a plain element, else `sha256-<hex>` of them all (never `/`, `.`,
/// `..` nor a NUL).
pub fn dir_name(parts: &[&str]) -> String {
    let plain = |part: &&str| {
        !part.is_empty() && *part != "." && *part != ".." && !part.contains(['/', '\0'])
    };
    let joined = parts.join("_");
    if parts.iter().all(plain) && joined.len() <= 255 {
        return joined;
    }
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0u8]);
    }
    format!("sha256-{}", hex::encode(hasher.finalize()))
}

/// `root/<kind>/<dir_name(parts)>`: the host directory of an object (`pods`, `pvcs`).
pub fn object_dir(root: &Path, kind: &str, parts: &[&str]) -> PathBuf {
    root.join(kind).join(dir_name(parts))
}

#[cfg(test)]
#[path = "confine_tests.rs"]
mod tests;
