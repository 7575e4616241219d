//! Resolving a request path (`/check_hash/<rel>`) to a file inside the output dir.
//!
//! Unlike the Python sidecar's string-prefix test, the check works on path components and
//! on the resolved location: `..` and absolute paths (also percent-encoded), NUL bytes and
//! symlinks leading outside the output dir are refused before any file is opened.

use std::io;
use std::path::{Component, Path, PathBuf};

use percent_encoding::percent_decode_str;

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
    /// The path is malformed (bad encoding, NUL byte, name too long, symlink loop).
    #[error("invalid path {rel}: {reason}")]
    Invalid {
        /// The relative path, decoded as far as possible.
        rel: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// An unexpected file system error.
    #[error("cannot resolve {rel}: {source}")]
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
    Ok((resolved, rel))
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
