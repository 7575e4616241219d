//! Resolving a request path (`/check_hash/<rel>`) to a file inside the output dir.
//!
//! Unlike the Python sidecar's string-prefix test, the check works on path components and
//! on the resolved location: `..` and absolute paths (also percent-encoded), NUL bytes and
//! symlinks leading outside the output dir are refused before any file is opened. The
//! file is then reached component by component without following symlinks
//! ([`crate::confined`]), so a directory swapped for a symlink after the check is not
//! followed either.

use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};

use percent_encoding::percent_decode_str;

use crate::confined::{self, LookupError};

/// Why a relative path cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// The path leaves the output dir (`..`, absolute, or a symlink pointing outside).
    #[error("{rel} is outside the output directory")]
    Forbidden {
        /// The decoded relative path.
        rel: String,
    },
    /// Nothing exists at the path.
    #[error("{rel} not found")]
    NotFound {
        /// The decoded relative path.
        rel: String,
    },
    /// The path is a directory, FIFO, device or another non-regular file.
    #[error("{rel} is not a regular file")]
    NotAFile {
        /// The decoded relative path.
        rel: String,
    },
    /// The path is malformed (bad encoding, NUL byte, name too long, symlink loop).
    #[error("invalid path {rel}: {reason}")]
    Invalid {
        /// The relative path, decoded as far as possible.
        rel: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// An unexpected file system error.
    #[error("cannot resolve {rel}")]
    Io {
        /// The decoded relative path.
        rel: String,
        /// The error.
        #[source]
        source: io::Error,
    },
}

/// Linux errno for a symlink loop (`io::ErrorKind::FilesystemLoop` is not stable).
const ELOOP: i32 = 40;

/// Percent-decodes `raw_rel` (as found in the request URI) and resolves it inside
/// `output_dir`; returns the canonical path and the decoded relative path.
pub fn resolve(output_dir: &Path, raw_rel: &str) -> Result<(PathBuf, String), PathError> {
    let located = locate(output_dir, raw_rel)?;
    Ok((located.resolved, located.rel))
}

/// A regular file opened inside the output dir.
#[derive(Debug)]
pub struct OpenedFile {
    /// The open file, read from the handle that was checked.
    pub file: File,
    /// Its canonical path (the key of the hash cache).
    pub path: PathBuf,
    /// The decoded relative path, for messages.
    pub rel: String,
}

/// Resolves `raw_rel` like [`resolve`], then opens the regular file it names without
/// following any symlink below the output dir.
pub fn open_regular(output_dir: &Path, raw_rel: &str) -> Result<OpenedFile, PathError> {
    let located = locate(output_dir, raw_rel)?;
    let names = located.names()?;
    match confined::open_regular(&located.base, &names) {
        Ok(file) => Ok(OpenedFile {
            file,
            path: located.resolved,
            rel: located.rel,
        }),
        Err(e) => Err(lookup_error(e, located.rel)),
    }
}

/// Resolves `raw_rel` like [`resolve`] and checks, without opening it or following any
/// symlink below the output dir, that it is a regular file; returns the relative path.
pub fn check_regular(output_dir: &Path, raw_rel: &str) -> Result<String, PathError> {
    let located = locate(output_dir, raw_rel)?;
    let names = located.names()?;
    match confined::check_regular(&located.base, &names) {
        Ok(()) => Ok(located.rel),
        Err(e) => Err(lookup_error(e, located.rel)),
    }
}

/// A request path resolved inside the output dir.
struct Located {
    /// The canonical output dir.
    base: PathBuf,
    /// The canonical location, below `base`.
    resolved: PathBuf,
    /// The decoded relative path.
    rel: String,
}

impl Located {
    /// The components of the canonical location below the output dir.
    fn names(&self) -> Result<Vec<&std::ffi::OsStr>, PathError> {
        self.resolved
            .strip_prefix(&self.base)
            .ok()
            .and_then(confined::components)
            .ok_or_else(|| PathError::Forbidden {
                rel: self.rel.clone(),
            })
    }
}

fn lookup_error(error: LookupError, rel: String) -> PathError {
    match error {
        LookupError::NotFound => PathError::NotFound { rel },
        LookupError::NotRegular => PathError::NotAFile { rel },
        LookupError::Io(e) => classify(e, rel),
    }
}

fn locate(output_dir: &Path, raw_rel: &str) -> Result<Located, PathError> {
    let decoded = percent_decode_str(raw_rel).collect::<Vec<u8>>();
    let rel = match String::from_utf8(decoded) {
        Ok(rel) => rel,
        Err(_) => {
            return Err(PathError::Invalid {
                rel: raw_rel.to_owned(),
                reason: "not valid UTF-8",
            });
        }
    };
    if rel.contains('\0') {
        return Err(PathError::Invalid {
            rel: rel.replace('\0', "\\0"),
            reason: "contains a NUL byte",
        });
    }
    let relative = Path::new(&rel);
    for component in relative.components() {
        match component {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(PathError::Forbidden { rel });
            }
        }
    }
    // A missing output dir (volume not mounted yet, removed) means the file is missing
    // too: the same 404 as for a missing file, not a server fault.
    let base = match output_dir.canonicalize() {
        Ok(base) => base,
        Err(e) => return Err(classify(e, rel)),
    };
    let resolved = match base.join(relative).canonicalize() {
        Ok(resolved) => resolved,
        Err(e) => return Err(classify(e, rel)),
    };
    if !resolved.starts_with(&base) {
        return Err(PathError::Forbidden { rel });
    }
    Ok(Located {
        base,
        resolved,
        rel,
    })
}

fn classify(error: io::Error, rel: String) -> PathError {
    match error.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => PathError::NotFound { rel },
        io::ErrorKind::InvalidFilename => PathError::Invalid {
            rel,
            reason: "name too long",
        },
        _ if error.raw_os_error() == Some(ELOOP) => PathError::Invalid {
            rel,
            reason: "too many levels of symbolic links",
        },
        _ => PathError::Io { rel, source: error },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("out");
        std::fs::create_dir_all(out.join("bin/7.1.57")).unwrap();
        std::fs::write(out.join("fdb.cluster"), "a:b@1.2.3.4:4501").unwrap();
        std::fs::write(out.join("bin/7.1.57/fdbserver"), "bin").unwrap();
        std::fs::create_dir_all(root.path().join("out2")).unwrap();
        std::fs::write(root.path().join("out2/secret"), "s").unwrap();
        std::fs::write(root.path().join("secret"), "s").unwrap();
        (root, out)
    }

    #[test]
    fn a_missing_output_dir_means_not_found() {
        let (root, _out) = setup();
        let missing = root.path().join("no-such-dir");
        let err = resolve(&missing, "fdb.cluster").unwrap_err();
        assert!(
            matches!(&err, PathError::NotFound { rel } if rel == "fdb.cluster"),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "fdb.cluster not found");
    }

    #[test]
    fn plain_paths_resolve() {
        let (_root, out) = setup();
        let (path, rel) = resolve(&out, "bin/7.1.57/fdbserver").unwrap();
        assert!(path.ends_with("bin/7.1.57/fdbserver"));
        assert_eq!(rel, "bin/7.1.57/fdbserver");
        assert!(resolve(&out, "./fdb.cluster").is_ok());
        assert!(resolve(&out, "fdb%2ecluster").is_ok());
    }

    #[test]
    fn traversal_is_forbidden_in_every_spelling() {
        let (_root, out) = setup();
        for raw in [
            "../secret",
            "%2e%2e/secret",
            "%2E%2E%2Fsecret",
            "bin/../../secret",
            "/etc/passwd",
            "%2fetc%2fpasswd",
            "../out2/secret",
        ] {
            assert!(
                matches!(resolve(&out, raw), Err(PathError::Forbidden { .. })),
                "{raw}"
            );
        }
    }

    #[test]
    fn symlinks_out_of_the_dir_are_forbidden_and_inside_allowed() {
        let (root, out) = setup();
        symlink(root.path().join("secret"), out.join("escape")).unwrap();
        symlink(root.path().join("out2"), out.join("sibling")).unwrap();
        symlink(out.join("fdb.cluster"), out.join("inside")).unwrap();
        assert!(matches!(
            resolve(&out, "escape"),
            Err(PathError::Forbidden { .. })
        ));
        assert!(matches!(
            resolve(&out, "sibling/secret"),
            Err(PathError::Forbidden { .. })
        ));
        assert!(resolve(&out, "inside").is_ok());
    }

    #[test]
    fn odd_input_is_a_client_error() {
        let (_root, out) = setup();
        assert!(matches!(
            resolve(&out, "a%00b"),
            Err(PathError::Invalid { .. })
        ));
        assert!(matches!(
            resolve(&out, "%ff%fe"),
            Err(PathError::Invalid { .. })
        ));
        let long = "x".repeat(300);
        assert!(matches!(
            resolve(&out, &long),
            Err(PathError::Invalid { .. })
        ));
        assert!(matches!(
            resolve(&out, "missing"),
            Err(PathError::NotFound { .. })
        ));
        assert!(matches!(
            resolve(&out, "fdb.cluster/below"),
            Err(PathError::NotFound { .. })
        ));
        symlink(out.join("loop"), out.join("loop")).unwrap();
        assert!(matches!(
            resolve(&out, "loop"),
            Err(PathError::Invalid { .. })
        ));
    }
}
