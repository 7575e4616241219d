//! Which kind of version change `spec.version` asks of a cluster (docs/upgrades.md):
//! pure over the cluster's spec and `status.runningVersion`, so the desired objects
//! (`model/desired.rs`) and the upgrade's decisions both read it without importing each
//! other.

use fdb_shared::FdbVersion;
use fdb_shared::api::FoundationDBCluster;

use super::super::model::pod::running_version;

/// What `spec.version` asks of a cluster running `status.runningVersion`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum VersionChange {
    /// The processes run the spec's version.
    None,
    /// A protocol-compatible change (patch up- or downgrade): pods roll to the new image
    /// by the normal update rules, with no staging and no cluster-wide kill.
    Compatible {
        /// The running version.
        from: FdbVersion,
        /// `spec.version`.
        to: FdbVersion,
    },
    /// An upgrade across a protocol boundary: stage, then one cluster-wide kill.
    Incompatible {
        /// The running version.
        from: FdbVersion,
        /// `spec.version`.
        to: FdbVersion,
    },
    /// A downgrade across a protocol boundary: refused, nothing changes.
    Refused {
        /// The running version.
        from: FdbVersion,
        /// `spec.version`.
        to: FdbVersion,
    },
    /// A version that does not parse (validation reports it; nothing is upgraded).
    Unparsable {
        /// The text that does not parse.
        version: String,
    },
}

impl VersionChange {
    /// The message users see for a refused change.
    pub(crate) fn refusal_message(&self) -> Option<String> {
        match self {
            Self::Refused { from, to } => Some(format!(
                "spec.version {to} is a downgrade from the running version {from} across a \
                 protocol boundary; downgrades are only possible within a protocol-compatible \
                 pair (same major, minor and release candidate). Nothing was changed; set \
                 spec.version back to a version compatible with {from} or newer"
            )),
            Self::Unparsable { version } => Some(format!(
                "spec.version {version:?} (or status.runningVersion) is not a FoundationDB version; nothing was changed"
            )),
            Self::None | Self::Compatible { .. } | Self::Incompatible { .. } => None,
        }
    }
}

/// The change `cluster`'s spec asks for (docs/upgrades.md).
pub(crate) fn version_change(cluster: &FoundationDBCluster) -> VersionChange {
    let running = running_version(cluster);
    let wanted = cluster.spec.version.as_str();
    let (from, to) = match (running.parse::<FdbVersion>(), wanted.parse::<FdbVersion>()) {
        (Ok(from), Ok(to)) => (from, to),
        (Err(_), _) => {
            return VersionChange::Unparsable {
                version: running.to_owned(),
            };
        }
        (_, Err(_)) => {
            return VersionChange::Unparsable {
                version: wanted.to_owned(),
            };
        }
    };
    if from == to {
        VersionChange::None
    } else if from.is_protocol_compatible(&to) {
        VersionChange::Compatible { from, to }
    } else if from.can_change_to(&to) {
        VersionChange::Incompatible { from, to }
    } else {
        VersionChange::Refused { from, to }
    }
}

/// The target of a pending incompatible upgrade, if one is pending.
pub(crate) fn pending_upgrade_target(cluster: &FoundationDBCluster) -> Option<FdbVersion> {
    match version_change(cluster) {
        VersionChange::Incompatible { to, .. } => Some(to),
        _ => None,
    }
}

/// The path, relative to the sidecar's output dir, of the staged `fdbserver` of `target`.
pub(crate) fn staged_fdbserver(target: &FdbVersion) -> String {
    format!("bin/{target}/fdbserver")
}
