//! What a restart covers: the processes of one group and why they are restarted. A leaf
//! shared by BounceProcesses, the upgrade's kill and the restart lists instances share.

use fdb_shared::address::ProcessAddress;

/// Why a process is restarted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum KillReason {
    /// It runs another command line than its conf asks for (a knob change).
    IncorrectCommandLine,
    /// The cluster-wide restart of an incompatible upgrade (docs/upgrades.md).
    #[cfg_attr(not(test), expect(dead_code, reason = "built by the tests only"))]
    Upgrade,
    /// Restarted with the others, so the restart covers every process at once.
    Alongside,
}

impl std::fmt::Display for KillReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::IncorrectCommandLine => "outdated command line",
            Self::Upgrade => "upgrade",
            Self::Alongside => "restarted with the others",
        })
    }
}

/// The processes of one group to restart, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KillTarget {
    /// The process group ID.
    pub group: String,
    /// The addresses of its reporting processes.
    pub addresses: Vec<ProcessAddress>,
    /// Why.
    pub reason: KillReason,
}
