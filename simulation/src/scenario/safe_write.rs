//! Writing the files of a snapshot or rehearsal folder safely (issue 40): nothing is
//! written into a folder that already holds files unless asked (`--force`), no symlink
//! planted in the folder is followed (each file is written as a new file, `O_EXCL`, then
//! renamed over its name, which replaces a link rather than writing through it), and a
//! failure leaves no partial output (every file is written before any is renamed into
//! place; a folder this call created is removed again). Files are private (0600) and a
//! created folder too (0700): a capture may hold Secret values.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// Why the folder could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A file could not be written.
    #[error("cannot write {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// An object could not be rendered.
    #[error("cannot render {what}: {message}")]
    Render {
        /// Which file.
        what: &'static str,
        /// The error.
        message: String,
    },
    /// The rehearsed manifest is not a FoundationDBCluster of the captured name.
    #[error("--rehearse: {0}")]
    Rehearse(String),
    /// The output folder holds files already (and `--force` was not given).
    #[error(
        "the output folder {} is not empty ({entries}); name a new or empty folder with -o, \
         or pass --force to replace the snapshot's files in it",
        path.display()
    )]
    NotEmpty {
        /// The folder.
        path: PathBuf,
        /// A few of its entries.
        entries: String,
    },
    /// The output folder (or a file to replace) is a symlink, which a write would follow.
    #[error("{} is a symlink; name the folder itself, not a link to it", path.display())]
    Symlink {
        /// The link.
        path: PathBuf,
    },
}

/// At most this many entries of a non-empty folder are named in the error.
const ENTRIES_NAMED: usize = 3;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Makes sure `dir` is a real directory to write into: created (0700) when missing
/// (returns true), else not a symlink and, unless `force`, empty.
fn prepare_dir(dir: &Path, force: bool) -> Result<bool, WriteError> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => Err(WriteError::Symlink {
            path: dir.to_owned(),
        }),
        Ok(meta) if !meta.is_dir() => Err(WriteError::Io {
            path: dir.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        }),
        Ok(_) => {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .map_err(io(dir))?
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect();
            if !names.is_empty() && !force {
                names.sort();
                let more = names.len().saturating_sub(ENTRIES_NAMED);
                names.truncate(ENTRIES_NAMED);
                let mut entries = names.join(", ");
                if more > 0 {
                    entries.push_str(&format!(" and {more} more"));
                }
                return Err(WriteError::NotEmpty {
                    path: dir.to_owned(),
                    entries,
                });
            }
            Ok(false)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io(dir))?;
            Ok(true)
        }
        Err(source) => Err(WriteError::Io {
            path: dir.to_owned(),
            source,
        }),
    }
}

/// Checks, before a long capture, that [`write_files`] would accept `dir` (a missing
/// folder is fine: it is created then).
pub fn check_output_dir(dir: &Path, force: bool) -> Result<(), WriteError> {
    match std::fs::symlink_metadata(dir) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        _ => prepare_dir(dir, force).map(|_| ()),
    }
}

/// A new file (never an existing one, never through a link) holding `text`.
fn write_new(path: &Path, text: &str) -> Result<(), WriteError> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io(path))?;
    file.write_all(text.as_bytes()).map_err(io(path))
}

fn temporary(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!(".{name}.{}.partial", std::process::id()))
}

/// Writes `files` (name, text) into `dir`: all or nothing, as the module says.
pub fn write_files(dir: &Path, files: &[(&str, String)], force: bool) -> Result<(), WriteError> {
    let created = prepare_dir(dir, force)?;
    let mut written = Vec::new();
    let mut outcome = Ok(());
    for (name, text) in files {
        let partial = temporary(dir, name);
        if let Err(error) = write_new(&partial, text) {
            outcome = Err(error);
            break;
        }
        written.push((partial, dir.join(name)));
    }
    if outcome.is_ok() {
        for (partial, target) in &written {
            if let Err(source) = std::fs::rename(partial, target) {
                outcome = Err(WriteError::Io {
                    path: target.clone(),
                    source,
                });
                break;
            }
        }
    }
    if outcome.is_err() {
        for (partial, _) in &written {
            let _ = std::fs::remove_file(partial);
        }
        if created {
            // Empty unless a rename went through; then the folder stays with it.
            let _ = std::fs::remove_dir(dir);
        }
    }
    outcome
}

/// Replaces (or creates) one file of an existing folder the same way (`result.json` of
/// a rehearsal).
pub fn replace_file(dir: &Path, name: &str, text: &str) -> Result<(), WriteError> {
    let partial = temporary(dir, name);
    write_new(&partial, text)?;
    let target = dir.join(name);
    std::fs::rename(&partial, &target).map_err(|source| {
        let _ = std::fs::remove_file(&partial);
        WriteError::Io {
            path: target.clone(),
            source,
        }
    })
}

#[cfg(test)]
#[path = "safe_write_tests.rs"]
mod tests;
