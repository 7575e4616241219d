//! Where the operator finds the FoundationDB tools of each version.
//!
//! fdbcli, fdbbackup and fdbrestore speak the protocol of one FoundationDB minor version:
//! a 7.1 fdbcli cannot read a 7.3 cluster. The operator image therefore holds the tools
//! of every supported minor under `--fdb-binaries-dir` (env `FDB_BINARY_DIR`, default
//! `/usr/bin/fdb`) as `DIR/<major.minor>/{fdbcli,fdbbackup,fdbrestore}`, the layout of
//! the Go operator's image (its `fdbclient/admin_client.go` joins `FDB_BINARY_DIR`, the
//! version's binary version and the tool name). The directory of a version is built
//! from a parsed [`FdbVersion`], never from text a user wrote.

use std::fmt;
use std::path::{Path, PathBuf};

use fdb_shared::FdbVersion;

/// The default of `--fdb-binaries-dir` (the operator image's layout).
pub const DEFAULT_FDB_BINARIES_DIR: &str = "/usr/bin/fdb";

/// The environment variable that names the trace log group of a FoundationDB client.
/// The operator image sets it to [`OPERATOR_LOG_GROUP`]; the operator passes it to every
/// tool it runs, so that its own connections are listed under that log group in
/// `status json` (and ignored by the upgrade's client check by default).
pub const TRACE_LOG_GROUP_ENV: &str = "FDB_NETWORK_OPTION_TRACE_LOG_GROUP";

/// The log group of the operator's own connections in the operator image, which
/// `automationOptions.ignoreLogGroupsForUpgrade` ignores by default.
pub const OPERATOR_LOG_GROUP: &str =
    fdb_shared::api::cluster::automation::DEFAULT_IGNORED_LOG_GROUP;

/// One tool of the fdbcli family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FdbTool {
    /// `fdbcli`.
    Fdbcli,
    /// `fdbbackup`.
    Fdbbackup,
    /// `fdbrestore`.
    Fdbrestore,
}

impl FdbTool {
    /// The binary's file name.
    pub fn file_name(self) -> &'static str {
        match self {
            Self::Fdbcli => "fdbcli",
            Self::Fdbbackup => "fdbbackup",
            Self::Fdbrestore => "fdbrestore",
        }
    }
}

impl fmt::Display for FdbTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.file_name())
    }
}

/// The directory name of a version's tools: `major.minor`, or the whole version for a
/// release candidate (whose protocol differs from the final release's), as the Go
/// operator's `GetBinaryVersion` names it.
pub fn binary_version(version: &FdbVersion) -> String {
    match version.release_candidate {
        Some(_) => version.to_string(),
        None => format!("{}.{}", version.major, version.minor),
    }
}

/// Where the tools are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolLayout {
    /// `DIR/<major.minor>/<tool>`: the tool of each cluster's version.
    PerVersion {
        /// The binaries directory (`--fdb-binaries-dir`).
        binaries_dir: PathBuf,
    },
    /// One fdbcli for every cluster (`--fdbcli PATH`), with fdbbackup and fdbrestore in
    /// its directory: only right when every cluster runs that fdbcli's minor version.
    Single {
        /// The fdbcli binary.
        fdbcli: PathBuf,
    },
}

/// A version's tool the operator does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no {tool} for FoundationDB {version}: {} does not exist (the operator runs the tools of each cluster's minor version from --fdb-binaries-dir, laid out as DIR/<major.minor>/{{fdbcli,fdbbackup,fdbrestore}})",
    path.display()
)]
pub struct MissingTool {
    /// The tool.
    pub tool: FdbTool,
    /// The version it is needed for.
    pub version: FdbVersion,
    /// Where it was looked for.
    pub path: PathBuf,
}

impl ToolLayout {
    /// The path of `tool` for clusters on `version`.
    pub fn path(&self, tool: FdbTool, version: &FdbVersion) -> PathBuf {
        match self {
            Self::PerVersion { binaries_dir } => binaries_dir
                .join(binary_version(version))
                .join(tool.file_name()),
            Self::Single { fdbcli } => match (tool, fdbcli.parent()) {
                (FdbTool::Fdbcli, _) => fdbcli.clone(),
                (_, Some(dir)) if !dir.as_os_str().is_empty() => dir.join(tool.file_name()),
                _ => PathBuf::from(tool.file_name()),
            },
        }
    }

    /// `tool` of `version`, or why the operator does not have it (no file there).
    pub fn find(&self, tool: FdbTool, version: &FdbVersion) -> Result<PathBuf, MissingTool> {
        self.find_with(tool, version, &is_present)
    }

    /// `tool` of `version` where `installed` says whether a program is there (the
    /// runner's view: a file in production, the simulated image's tools in the
    /// simulation).
    pub fn find_with(
        &self,
        tool: FdbTool,
        version: &FdbVersion,
        installed: &dyn Fn(&Path) -> bool,
    ) -> Result<PathBuf, MissingTool> {
        let path = self.path(tool, version);
        if installed(&path) {
            Ok(path)
        } else {
            Err(MissingTool {
                tool,
                version: *version,
                path,
            })
        }
    }
}

/// Whether a tool is at `path`. A bare name (`--fdbcli fdbcli`) is looked up on `PATH`
/// by the process spawn, so it counts as present.
pub fn is_present(path: &Path) -> bool {
    if path.components().count() == 1 && path.is_relative() {
        return true;
    }
    path.is_file()
}

/// How the operator runs the tools: where they are, and the trace log group its
/// connections carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdbTools {
    /// Where the tools are.
    pub layout: ToolLayout,
    /// `FDB_NETWORK_OPTION_TRACE_LOG_GROUP` for the tools, when set.
    pub trace_log_group: Option<String>,
}

impl FdbTools {
    /// The per-version layout under `binaries_dir`, or the single fdbcli when given.
    pub fn new(binaries_dir: PathBuf, fdbcli: Option<PathBuf>) -> Self {
        let layout = match fdbcli {
            Some(fdbcli) => ToolLayout::Single { fdbcli },
            None => ToolLayout::PerVersion { binaries_dir },
        };
        Self {
            layout,
            trace_log_group: None,
        }
    }

    /// The same tools, their connections in `log_group` (none: the tools' default).
    pub fn with_trace_log_group(mut self, log_group: Option<String>) -> Self {
        self.trace_log_group = log_group.filter(|group| !group.is_empty());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> FdbVersion {
        text.parse().unwrap()
    }

    #[test]
    fn each_minor_has_its_directory() {
        let layout = ToolLayout::PerVersion {
            binaries_dir: "/usr/bin/fdb".into(),
        };
        assert_eq!(
            layout.path(FdbTool::Fdbcli, &v("7.1.57")),
            PathBuf::from("/usr/bin/fdb/7.1/fdbcli")
        );
        assert_eq!(
            layout.path(FdbTool::Fdbbackup, &v("7.3.43")),
            PathBuf::from("/usr/bin/fdb/7.3/fdbbackup")
        );
        assert_eq!(
            layout.path(FdbTool::Fdbrestore, &v("7.4.1")),
            PathBuf::from("/usr/bin/fdb/7.4/fdbrestore")
        );
        // A release candidate speaks its own protocol: its own directory.
        assert_eq!(
            layout.path(FdbTool::Fdbcli, &v("7.3.0-rc2")),
            PathBuf::from("/usr/bin/fdb/7.3.0-rc2/fdbcli")
        );
    }

    #[test]
    fn a_single_fdbcli_serves_every_version_with_its_neighbours() {
        let layout = ToolLayout::Single {
            fdbcli: "/opt/fdb/fdbcli".into(),
        };
        for version in ["7.1.57", "7.3.43"] {
            assert_eq!(
                layout.path(FdbTool::Fdbcli, &v(version)),
                PathBuf::from("/opt/fdb/fdbcli")
            );
            assert_eq!(
                layout.path(FdbTool::Fdbrestore, &v(version)),
                PathBuf::from("/opt/fdb/fdbrestore")
            );
        }
        let bare = ToolLayout::Single {
            fdbcli: "fdbcli".into(),
        };
        assert_eq!(
            bare.path(FdbTool::Fdbbackup, &v("7.1.57")),
            PathBuf::from("fdbbackup")
        );
        assert!(bare.find(FdbTool::Fdbcli, &v("7.1.57")).is_ok(), "on PATH");
    }

    #[test]
    fn a_missing_tool_names_its_version_and_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("7.1")).unwrap();
        std::fs::write(dir.path().join("7.1/fdbcli"), "").unwrap();
        let layout = ToolLayout::PerVersion {
            binaries_dir: dir.path().to_owned(),
        };
        assert_eq!(
            layout.find(FdbTool::Fdbcli, &v("7.1.57")),
            Ok(dir.path().join("7.1/fdbcli"))
        );
        let missing = layout.find(FdbTool::Fdbcli, &v("7.3.43")).unwrap_err();
        assert_eq!(missing.path, dir.path().join("7.3/fdbcli"));
        let message = missing.to_string();
        assert!(
            message.starts_with("no fdbcli for FoundationDB 7.3.43: ")
                && message.contains("7.3/fdbcli does not exist"),
            "{message}"
        );
    }

    #[test]
    fn an_empty_log_group_is_no_log_group() {
        let tools = FdbTools::new("/usr/bin/fdb".into(), None);
        assert_eq!(
            tools
                .clone()
                .with_trace_log_group(Some(String::new()))
                .trace_log_group,
            None
        );
        assert_eq!(
            tools
                .with_trace_log_group(Some(OPERATOR_LOG_GROUP.into()))
                .trace_log_group
                .as_deref(),
            Some("fdb-kubernetes-operator")
        );
    }
}
