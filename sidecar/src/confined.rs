//! File system access confined to a directory tree.
//!
//! Every component below the base directory is opened relative to its parent's handle
//! (`openat`) with `O_NOFOLLOW`, so a symlink planted in the output dir, or swapped in
//! while a request runs, can redirect neither a read nor a write: there is no window
//! between checking a path and using it. The base directory itself comes from the
//! command line and is trusted (it may be a symlink, e.g. to a volume mount).
//!
//! `rustix` provides the `*at` system calls as safe functions (the workspace forbids
//! `unsafe`, and std has no `openat`).

use std::ffi::OsStr;
use std::fs::File;
use std::hash::{BuildHasher, RandomState};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// How a directory component is opened for writing into it: never through a symlink
/// (readable, so that it can be fsynced after a rename).
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// How a directory is opened for a lookup: `O_PATH` needs only search permission, like
/// a path walk, and never through a symlink below the base.
const LOOKUP_DIR_FLAGS: OFlags = OFlags::PATH
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Mode of directories created below the base (as `create_dir_all` with umask 022).
const DIR_MODE: u32 = 0o755;

/// Attempts for a step that can lose a race (a component replaced meanwhile, a temporary
/// name taken): bounded, so that a hostile writer cannot keep a request busy forever.
const ATTEMPTS: usize = 8;

/// Why a confined lookup failed.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// A component is missing or is not a directory (a symlink counts as "not a
    /// directory": it is never followed).
    #[error("not found")]
    NotFound,
    /// The final component exists but is not a regular file.
    #[error("not a regular file")]
    NotRegular,
    /// Another file system error.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// A failed step of an atomic write.
#[derive(Debug, thiserror::Error)]
#[error("{operation}")]
pub struct WriteError {
    /// What was being done.
    pub operation: &'static str,
    /// The error.
    #[source]
    pub source: io::Error,
}

fn write_err(operation: &'static str) -> impl FnOnce(io::Error) -> WriteError {
    move |source| WriteError { operation, source }
}

/// The names of a relative path's components (`.` skipped), or `None` when it has a
/// `..`, root or prefix component.
pub fn components(rel: &Path) -> Option<Vec<&OsStr>> {
    rel.components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect()
}

/// Opens the (trusted) base directory, following symlinks.
pub fn open_base(base: &Path) -> io::Result<File> {
    let fd = rustix::fs::open(
        base,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    Ok(File::from(fd))
}

/// The type of `name` in `dir`, not following a symlink; `None` when it does not exist.
pub fn kind_at(dir: &File, name: &OsStr) -> io::Result<Option<FileType>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(Some(FileType::from_raw_mode(stat.st_mode))),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Opens the existing directory `base/names...` for lookups (`O_PATH`), without
/// following any symlink below `base`.
fn open_dirs(base: &Path, names: &[&OsStr]) -> Result<File, LookupError> {
    let flags = LOOKUP_DIR_FLAGS.difference(OFlags::NOFOLLOW);
    let mut current = match rustix::fs::open(base, flags, Mode::empty()) {
        Ok(fd) => File::from(fd),
        Err(Errno::NOENT | Errno::NOTDIR) => return Err(LookupError::NotFound),
        Err(e) => return Err(LookupError::Io(e.into())),
    };
    for name in names {
        current = match rustix::fs::openat(&current, *name, LOOKUP_DIR_FLAGS, Mode::empty()) {
            Ok(fd) => File::from(fd),
            // Missing, a file, or a symlink (not followed): nothing to find down there.
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => return Err(LookupError::NotFound),
            Err(e) => return Err(LookupError::Io(e.into())),
        };
    }
    Ok(current)
}

/// Splits `names` into the parent directories and the final name (`None` for the base
/// itself).
fn split_last<'a, 'b>(names: &'a [&'b OsStr]) -> (&'a [&'b OsStr], Option<&'b OsStr>) {
    match names.split_last() {
        Some((last, parents)) => (parents, Some(*last)),
        None => (names, None),
    }
}

/// Checks that `base/names...` is a regular file, without opening it or following any
/// symlink below `base`.
pub fn check_regular(base: &Path, names: &[&OsStr]) -> Result<(), LookupError> {
    let (parents, last) = split_last(names);
    let Some(last) = last else {
        return Err(LookupError::NotRegular);
    };
    let dir = open_dirs(base, parents)?;
    match kind_at(&dir, last)? {
        None => Err(LookupError::NotFound),
        Some(FileType::RegularFile) => Ok(()),
        Some(_) => Err(LookupError::NotRegular),
    }
}

/// Opens the regular file `base/names...` for reading without following any symlink
/// below `base`.
///
/// A FIFO, device or other special file is refused without being opened (a FIFO would
/// block until a writer appears); should one be swapped in between the check and the
/// open, `O_NONBLOCK` keeps the open from blocking and the type of the opened file is
/// checked again.
pub fn open_regular(base: &Path, names: &[&OsStr]) -> Result<File, LookupError> {
    let (parents, last) = split_last(names);
    let Some(last) = last else {
        return Err(LookupError::NotRegular);
    };
    let dir = open_dirs(base, parents)?;
    match kind_at(&dir, last)? {
        None => return Err(LookupError::NotFound),
        Some(FileType::RegularFile) => {}
        Some(_) => return Err(LookupError::NotRegular),
    }
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let file = match rustix::fs::openat(&dir, last, flags, Mode::empty()) {
        Ok(fd) => File::from(fd),
        // Replaced by a symlink or removed since the check.
        Err(Errno::NOENT | Errno::LOOP) => return Err(LookupError::NotFound),
        Err(e) => return Err(LookupError::Io(e.into())),
    };
    if !file.metadata()?.is_file() {
        return Err(LookupError::NotRegular);
    }
    Ok(file)
}

/// Opens the directory `base/names...`, creating missing components (mode 0755).
///
/// A component that is a symlink is replaced by a new, empty directory: following it
/// could write anywhere, and the output dir only holds what the sidecar writes there
/// (as for files, whose symlinks are replaced by the atomic rename). A component that
/// is another kind of file is an error (`NotADirectory`), never removed.
pub fn create_dirs(base: &Path, names: &[&OsStr]) -> io::Result<File> {
    std::fs::create_dir_all(base)?;
    let mut current = open_base(base)?;
    for name in names {
        current = open_or_create_dir(&current, name)?;
    }
    Ok(current)
}

fn open_or_create_dir(parent: &File, name: &OsStr) -> io::Result<File> {
    for _ in 0..ATTEMPTS {
        match rustix::fs::openat(parent, name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => return Ok(File::from(fd)),
            Err(Errno::NOENT) => {
                match rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(DIR_MODE)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Err(Errno::NOTDIR | Errno::LOOP) => match kind_at(parent, name)? {
                Some(FileType::Symlink) => {
                    tracing::warn!(
                        component = %name.to_string_lossy(),
                        "replacing a symlink in the output directory by a directory instead of writing through it"
                    );
                    match rustix::fs::unlinkat(parent, name, AtFlags::empty()) {
                        Ok(()) | Err(Errno::NOENT) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                // Became a directory meanwhile, or vanished: try again.
                Some(FileType::Directory) | None => {}
                Some(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::NotADirectory,
                        format!("{} is not a directory", name.to_string_lossy()),
                    ));
                }
            },
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::other(format!(
        "{} keeps changing while it is being opened",
        name.to_string_lossy()
    )))
}

/// A random suffix for temporary names: in a container the pid is always the same, so
/// a pid-based name could meet a leftover of an earlier run. `RandomState` is seeded
/// randomly per process; the counter and the time make every call different.
fn random_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let value = RandomState::new().hash_one((
        COUNTER.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now(),
        std::thread::current().id(),
    ));
    format!("{:012x}", value & 0xffff_ffff_ffff)
}

/// Removes the temporary file on drop unless it was renamed into place.
struct TempName<'a> {
    dir: &'a File,
    name: Option<String>,
}

impl Drop for TempName<'_> {
    fn drop(&mut self) {
        if let Some(name) = self.name.take() {
            let _ = rustix::fs::unlinkat(self.dir, name.as_str(), AtFlags::empty());
        }
    }
}

/// Writes `name` in `dir` atomically: `fill` writes a new temporary file
/// (`.<name>.tmp.<random>`, created exclusively, so never through a symlink), which is
/// flushed, given `mode`, fsynced and renamed over `name` (a symlink there is replaced,
/// not followed); then the directory is fsynced. On failure only the temporary file
/// created here is removed.
pub fn write_atomic(
    dir: &File,
    name: &OsStr,
    mode: u32,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), WriteError> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut created = None;
    for _ in 0..ATTEMPTS {
        let temp = format!(".{}.tmp.{}", name.to_string_lossy(), random_suffix());
        match rustix::fs::openat(dir, temp.as_str(), flags, Mode::from_raw_mode(0o600)) {
            Ok(fd) => {
                created = Some((temp, File::from(fd)));
                break;
            }
            Err(Errno::EXIST) => {}
            Err(e) => return Err(write_err("cannot create temporary file")(e.into())),
        }
    }
    let Some((temp, mut file)) = created else {
        return Err(write_err("cannot create temporary file")(io::Error::other(
            "no free temporary name",
        )));
    };
    let mut guard = TempName {
        dir,
        name: Some(temp.clone()),
    };
    fill(&mut file).map_err(write_err("cannot write"))?;
    file.flush().map_err(write_err("cannot write"))?;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(write_err("cannot set permissions"))?;
    file.sync_all().map_err(write_err("cannot fsync"))?;
    rustix::fs::renameat(dir, temp.as_str(), dir, name)
        .map_err(|e| write_err("cannot rename into place")(e.into()))?;
    guard.name = None;
    // Make the rename durable; failure here does not undo the (visible) write.
    let _ = dir.sync_all();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn names(rel: &str) -> Vec<&OsStr> {
        components(Path::new(rel)).unwrap()
    }

    #[test]
    fn components_refuse_escapes() {
        assert_eq!(names("./a/b"), vec![OsStr::new("a"), OsStr::new("b")]);
        assert!(components(Path::new("a/../b")).is_none());
        assert!(components(Path::new("/a")).is_none());
        assert!(names(".").is_empty());
    }

    #[test]
    fn lookups_never_follow_symlinks_below_the_base() {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().join("out");
        std::fs::create_dir_all(base.join("d")).unwrap();
        std::fs::write(base.join("d/f"), "inside").unwrap();
        std::fs::create_dir_all(root.path().join("outside")).unwrap();
        std::fs::write(root.path().join("outside/f"), "outside").unwrap();
        symlink(root.path().join("outside"), base.join("link")).unwrap();
        symlink(base.join("d/f"), base.join("filelink")).unwrap();

        let mut file = open_regular(&base, &names("d/f")).unwrap();
        let mut text = String::new();
        io::Read::read_to_string(&mut file, &mut text).unwrap();
        assert_eq!(text, "inside");
        for rel in ["link/f", "d/missing", "d/f/below"] {
            assert!(
                matches!(open_regular(&base, &names(rel)), Err(LookupError::NotFound)),
                "{rel}"
            );
        }
        // A symlink itself is not a regular file (callers resolve symlinks that stay
        // inside before, see `paths`).
        for rel in ["link", "filelink"] {
            assert!(
                matches!(
                    check_regular(&base, &names(rel)),
                    Err(LookupError::NotRegular)
                ),
                "{rel}"
            );
            assert!(
                matches!(
                    open_regular(&base, &names(rel)),
                    Err(LookupError::NotRegular)
                ),
                "{rel}"
            );
        }
        assert!(matches!(
            open_regular(&base, &names("d")),
            Err(LookupError::NotRegular)
        ));
        assert!(matches!(
            open_regular(&base, &[]),
            Err(LookupError::NotRegular)
        ));
        assert!(check_regular(&base, &names("d/f")).is_ok());
    }

    #[test]
    fn created_dirs_replace_symlinks_and_keep_files() {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().join("out");
        let outside = root.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(&base).unwrap();
        symlink(&outside, base.join("bin")).unwrap();
        std::fs::write(base.join("file"), "keep").unwrap();

        let dir = create_dirs(&base, &names("bin/7.1.57")).unwrap();
        write_atomic(&dir, OsStr::new("fdbserver"), 0o744, |f| f.write_all(b"x")).unwrap();
        assert!(
            std::fs::symlink_metadata(base.join("bin"))
                .unwrap()
                .file_type()
                .is_dir()
        );
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        assert_eq!(
            std::fs::read_to_string(base.join("bin/7.1.57/fdbserver")).unwrap(),
            "x"
        );
        let err = create_dirs(&base, &names("file/sub")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotADirectory);
        assert_eq!(std::fs::read_to_string(base.join("file")).unwrap(), "keep");
    }

    #[test]
    fn atomic_writes_replace_a_symlinked_target_and_clean_up_on_failure() {
        let root = tempfile::tempdir().unwrap();
        let victim = root.path().join("victim");
        std::fs::write(&victim, "outside").unwrap();
        let base = root.path().join("out");
        std::fs::create_dir_all(&base).unwrap();
        symlink(&victim, base.join("fdb.cluster")).unwrap();
        let dir = open_base(&base).unwrap();
        write_atomic(&dir, OsStr::new("fdb.cluster"), 0o644, |f| {
            f.write_all(b"new")
        })
        .unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "outside");
        assert_eq!(
            std::fs::read_to_string(base.join("fdb.cluster")).unwrap(),
            "new"
        );
        let err = write_atomic(&dir, OsStr::new("fdb.cluster"), 0o644, |_| {
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(err.operation, "cannot write");
        assert_eq!(std::fs::read_dir(&base).unwrap().count(), 1);
    }
}
