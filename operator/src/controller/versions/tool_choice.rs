//! Which FoundationDB version's tools the operator runs for a cluster, decided from the
//! cluster alone (pure), and which of them the operator lacks.
//!
//! As the Go operator (`fdbclient/admin_client.go`: `getVersion` takes the cluster's
//! running version, `getStatus` retries with `spec.version` during a
//! version-incompatible upgrade): the tools of the running version (`status.runningVersion`,
//! else `spec.version` for a new cluster), and during an incompatible upgrade also the
//! target's, which the admin client moves to once the kill has restarted the processes
//! on the target (see `fdb/fdbcli/version_fallback.rs`).

use fdb_shared::FdbVersion;
use fdb_shared::api::FoundationDBCluster;

use super::super::context::AdminClientProvider;
use super::super::model::pod::running_version;
use super::change::{VersionChange, version_change};
use crate::fdb::MissingTool;

/// The versions whose tools a pass may run for a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolVersions {
    /// The version the processes run (the tools every command starts with).
    pub running: FdbVersion,
    /// The target of a pending incompatible upgrade: its tools read the database once
    /// the processes restarted on it.
    pub upgrade_target: Option<FdbVersion>,
}

impl ToolVersions {
    /// The versions, running first.
    pub fn all(&self) -> impl Iterator<Item = FdbVersion> {
        std::iter::once(self.running).chain(self.upgrade_target)
    }
}

/// The versions of `cluster`'s tools, or why there are none (a version that does not
/// parse; validation reports it on the cluster).
pub fn tool_versions(cluster: &FoundationDBCluster) -> Result<ToolVersions, String> {
    let running = running_version(cluster);
    let running: FdbVersion = running.parse().map_err(|_| {
        format!("status.runningVersion (or spec.version) {running:?} is not a FoundationDB version, so no fdbcli can be chosen")
    })?;
    let upgrade_target = match version_change(cluster) {
        VersionChange::Incompatible { to, .. } => Some(to),
        _ => None,
    };
    Ok(ToolVersions {
        running,
        upgrade_target,
    })
}

/// The tools `cluster` needs now that `provider` does not have (none when the versions
/// do not parse: the version checks report that).
pub(crate) fn missing_tools(
    provider: &dyn AdminClientProvider,
    cluster: &FoundationDBCluster,
) -> Vec<MissingTool> {
    let Ok(versions) = tool_versions(cluster) else {
        return Vec::new();
    };
    let mut missing: Vec<MissingTool> = versions
        .all()
        .filter_map(|version| provider.missing_tool(&version))
        .collect();
    missing.dedup();
    missing
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::cluster;

    fn running(spec: &str, running: Option<&str>) -> FoundationDBCluster {
        let mut cluster = cluster(spec);
        cluster.status.get_or_insert_default().running_version = running.map(str::to_owned);
        cluster
    }

    fn v(text: &str) -> FdbVersion {
        text.parse().unwrap()
    }

    #[test]
    fn the_running_version_chooses_the_tools() {
        let steady = tool_versions(&running("version: 7.3.43", Some("7.3.43"))).unwrap();
        assert_eq!(steady.running, v("7.3.43"));
        assert_eq!(steady.upgrade_target, None);
        // A new cluster has no running version yet: the spec's.
        let new = tool_versions(&running("version: 7.1.57", None)).unwrap();
        assert_eq!(new.running, v("7.1.57"));
        // A patch upgrade keeps the protocol: no second set of tools.
        let patch = tool_versions(&running("version: 7.1.63", Some("7.1.57"))).unwrap();
        assert_eq!((patch.running, patch.upgrade_target), (v("7.1.57"), None));
    }

    #[test]
    fn an_incompatible_upgrade_adds_the_targets_tools() {
        let upgrade = tool_versions(&running("version: 7.3.43", Some("7.1.57"))).unwrap();
        assert_eq!(upgrade.running, v("7.1.57"));
        assert_eq!(upgrade.upgrade_target, Some(v("7.3.43")));
        assert_eq!(
            upgrade.all().collect::<Vec<_>>(),
            [v("7.1.57"), v("7.3.43")]
        );
        // A refused downgrade runs only the running version's tools.
        let down = tool_versions(&running("version: 7.1.57", Some("7.3.43"))).unwrap();
        assert_eq!(down.upgrade_target, None);
        assert!(tool_versions(&running("version: 7.1.57", Some("seven"))).is_err());
    }
}
