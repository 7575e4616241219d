//! The stand-in tools of `simulate --serve --external-operator --fdb-tools-dir DIR`:
//! for each minor version M of `world.operatorTools`, `DIR/M/fdbcli`, `fdbbackup` and
//! `fdbrestore`, laid out as the operator image holds the real ones (so `fdb-operator
//! run --fdb-binaries-dir DIR` runs them), and `DIR/served-world.json` naming the
//! operator's listener. Each stand-in is a two-line `sh` script that hands its
//! arguments, untouched (`"$@"`), to `fdb-operator served-tool`, which posts them to
//! the served world ([`super::tools`]); no argument ever passes through a shell.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::tools::TOOL_NAMES;

/// The file in DIR naming the served world's tool endpoint.
pub const WORLD_FILE: &str = "served-world.json";

/// What `served-world.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorldFile {
    /// The external operator's listener, where the tools post ([`super::tools::TOOLS_PATH`]).
    pub address: SocketAddr,
}

/// Why the tools could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ToolFilesError {
    /// A file or directory could not be written.
    #[error("--fdb-tools-dir: cannot write {}", path.display())]
    Write {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A path is not UTF-8 (the stand-ins name it in a script).
    #[error("--fdb-tools-dir: {} is not a UTF-8 path", path.display())]
    NotUtf8 {
        /// The path.
        path: PathBuf,
    },
    /// A path in DIR is a symbolic link (never followed) or not a directory.
    #[error("--fdb-tools-dir: {} is a symbolic link or not a directory; refusing to write through it", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// A `world.operatorTools` entry is not a minor version (checked with the scenario
    /// already; checked again here because it becomes a directory name).
    #[error("world.operatorTools: {0:?} is not a minor version like 7.3")]
    NotAMinor(String),
}

/// Writes the stand-ins of `minors` and the world file into `dir` (created if missing);
/// `program` is the `fdb-operator` binary they run. Returns the directory, absolute.
pub fn write_tools(
    dir: &Path,
    program: &Path,
    minors: &[String],
    address: SocketAddr,
) -> Result<PathBuf, ToolFilesError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ToolFilesError::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let dir = std::fs::canonicalize(dir).map_err(io(dir))?;
    let program_text = utf8(program)?;
    let world_file = dir.join(WORLD_FILE);
    let world_text = utf8(&world_file)?;
    for minor in minors {
        if !is_minor(minor) {
            return Err(ToolFilesError::NotAMinor(minor.clone()));
        }
        let version_dir = dir.join(minor);
        real_directory(&version_dir)?;
        for tool in TOOL_NAMES {
            let script = stand_in(program_text, world_text, minor, tool);
            replace_file(&version_dir.join(tool), script.as_bytes(), 0o755)?;
        }
    }
    let world = serde_json::to_string_pretty(&WorldFile { address }).unwrap_or_default();
    replace_file(&world_file, world.as_bytes(), 0o644)?;
    Ok(dir)
}

/// The script of one stand-in: every value quoted for `sh`, the arguments passed as
/// they came.
fn stand_in(program: &str, world_file: &str, minor: &str, tool: &str) -> String {
    format!(
        "#!/bin/sh\n# {tool} {minor} of a served simulated world (fdb-operator simulate --fdb-tools-dir)\n\
         exec {} served-tool --world {} --fdb-version {} --tool {} -- \"$@\"\n",
        quote(program),
        quote(world_file),
        quote(minor),
        quote(tool)
    )
}

/// `text` as one `sh` word: in single quotes, each `'` written as `'\''`.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn utf8(path: &Path) -> Result<&str, ToolFilesError> {
    path.to_str().ok_or_else(|| ToolFilesError::NotUtf8 {
        path: path.to_owned(),
    })
}

/// `7.1`, `7.3`: digits, one dot, digits.
fn is_minor(text: &str) -> bool {
    text.split_once('.').is_some_and(|(major, minor)| {
        [major, minor].iter().all(|part| {
            !part.is_empty() && part.len() <= 3 && part.bytes().all(|b| b.is_ascii_digit())
        })
    })
}

/// `path` as a directory of its own: created when missing, refused when it is a
/// symbolic link or a file.
fn real_directory(path: &Path) -> Result<(), ToolFilesError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(ToolFilesError::NotADirectory {
            path: path.to_owned(),
        }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(path)
            .map_err(|source| ToolFilesError::Write {
                path: path.to_owned(),
                source,
            }),
        Err(source) => Err(ToolFilesError::Write {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Writes `path` new (through `path.partial`, created afresh, then renamed over it), so
/// a link planted at either name is replaced, never written through.
fn replace_file(path: &Path, content: &[u8], mode: u32) -> Result<(), ToolFilesError> {
    let error = |source| ToolFilesError::Write {
        path: path.to_owned(),
        source,
    };
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    match std::fs::remove_file(&partial) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(error(e)),
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(&partial).map_err(error)?;
    file.write_all(content).map_err(error)?;
    drop(file);
    std::fs::rename(&partial, path).map_err(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stand_ins_are_written_per_minor_and_quote_every_value() {
        let dir = tempfile::tempdir().unwrap();
        let tools = dir.path().join("it's tools");
        let address: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let minors = vec!["7.1".to_owned(), "7.3".to_owned()];
        let written =
            write_tools(&tools, Path::new("/opt/fdb-operator"), &minors, address).unwrap();
        for minor in ["7.1", "7.3"] {
            for tool in TOOL_NAMES {
                let script = std::fs::read_to_string(written.join(minor).join(tool)).unwrap();
                assert!(script.starts_with("#!/bin/sh\n"));
                assert!(script.contains(&format!(
                    "--fdb-version '{minor}' --tool '{tool}' -- \"$@\""
                )));
                assert!(
                    script.contains("it'\\''s tools/served-world.json'"),
                    "{script}"
                );
            }
        }
        let world: WorldFile =
            serde_json::from_str(&std::fs::read_to_string(written.join(WORLD_FILE)).unwrap())
                .unwrap();
        assert_eq!(world.address, address);
        // Written again (a restarted world): replaced.
        write_tools(&tools, Path::new("/opt/fdb-operator"), &minors, address).unwrap();
    }

    #[test]
    fn a_minor_that_is_not_a_version_or_a_linked_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let address: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        for bad in ["../7.1", "7", "7.1/x", "", "7.1.57"] {
            let error = write_tools(dir.path(), Path::new("/p"), &[bad.to_owned()], address);
            assert!(matches!(error, Err(ToolFilesError::NotAMinor(_))), "{bad}");
        }
        #[cfg(unix)]
        {
            let elsewhere = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("7.1")).unwrap();
            let error = write_tools(dir.path(), Path::new("/p"), &["7.1".to_owned()], address);
            assert!(matches!(error, Err(ToolFilesError::NotADirectory { .. })));
            assert!(
                std::fs::read_dir(elsewhere.path())
                    .unwrap()
                    .next()
                    .is_none()
            );
        }
    }
}
