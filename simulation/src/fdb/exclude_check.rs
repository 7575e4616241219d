//! What fdbcli's `exclude` checks before it excludes (without `FORCE`), and what it
//! warns about after: the free space left on the storage servers that stay
//! (`checkExclusion` in fdbclient/SpecialKeySpace.actor.cpp, run by the client when
//! the exclusion is committed through the special key space), and the coordinators the
//! exclusion covers (`checkForCoordinators` in fdbcli/ExcludeCommand.actor.cpp).
//!
//! The space is summed over the storage roles as `status json` renders them
//! (`fdb/render.rs`: `kvstore_used_bytes`, and `kvstore_free_bytes` =
//! `kvstore_available_bytes` = what the data volume has left): the bytes every storage
//! server holds against the used and free bytes of those not excluded.

use fdb_operator::fdb::ExclusionTarget;
use fdb_shared::FdbVersion;

use super::SimulatedFdb;
use super::render_metrics::disk_total_bytes;

/// Why `exclude` refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExcludeRefusal {
    /// The storage servers left would have less than 10 % of their space free.
    FreeSpace,
    /// A storage role in `status json` lacks its metrics (`kvstore_used_bytes`,
    /// `kvstore_free_bytes`, and from 7.3 `kvstore_available_bytes`): the impact on the
    /// free space cannot be calculated, whatever the exclusion names.
    MetricsMissing,
}

impl SimulatedFdb {
    /// Whether fdbcli of `version` refuses to exclude `targets` (on top of the current
    /// exclusions) for lack of space: every storage server excluded, or the data of all
    /// of them on those left filling 90 % of their space (7.1 refuses at 90 %,
    /// `1 - used / (usedNotExcluded + free) <= 0.1`; 7.3 and 7.4 above it,
    /// `finalUnavailableRatio > 0.9`). Only an exclusion that covers a storage server
    /// is checked for space; any exclusion is refused while a storage server reports
    /// no metrics (`storageMetricsMissing`).
    pub fn exclude_refusal(
        &self,
        targets: &[ExclusionTarget],
        version: &FdbVersion,
    ) -> Option<ExcludeRefusal> {
        let state = self.caught_up();
        let cluster_version = state.cluster_version();
        state.configuration.as_ref()?;
        let total = disk_total_bytes(&state) as f64;
        let (mut servers, mut excluded_servers) = (0_usize, 0_usize);
        let (mut used_all, mut used_kept, mut free_kept) = (0.0, 0.0, 0.0);
        for process in state.processes.values() {
            let already = state.is_excluded(process);
            let storage = process.launch.class == fdb_shared::api::ProcessClass::Storage
                && state.is_member(process, cluster_version.as_ref())
                && (state.held(&process.disk) > 0 || !already);
            if !storage {
                continue;
            }
            // `checkExclusion` reads every storage role before it sums anything up: one
            // without its metrics refuses any exclusion, of storage or not.
            if process.running && state.metrics_missing_of(process) {
                return Some(ExcludeRefusal::MetricsMissing);
            }
            let used = (state.held(&process.disk) as f64 * state.shard_bytes()).round();
            let excluded = already || targets.iter().any(|t| process.is_matched_by(t));
            servers += 1;
            used_all += used;
            if excluded {
                excluded_servers += 1;
            } else {
                used_kept += used;
                free_kept += (total - used).max(0.0);
            }
        }
        if excluded_servers == 0 {
            return None;
        }
        let kept = used_kept + free_kept;
        let too_full = if version.minor == 1 && version.major == 7 {
            kept == 0.0 || 1.0 - used_all / kept <= 0.1
        } else {
            used_all / kept.max(1.0) > 0.9
        };
        (excluded_servers == servers || too_full).then_some(ExcludeRefusal::FreeSpace)
    }

    /// The coordinators (as their processes' addresses) that `targets` exclude, which
    /// fdbcli warns about after excluding.
    pub fn excluded_coordinators(&self, targets: &[ExclusionTarget]) -> Vec<String> {
        let state = self.caught_up();
        let Some(connection) = &state.connection_string else {
            return Vec::new();
        };
        connection
            .coordinators
            .iter()
            .filter_map(|coordinator| {
                state
                    .processes
                    .values()
                    .find(|p| p.running && p.answers_to(coordinator))
            })
            .filter(|process| targets.iter().any(|t| process.is_matched_by(t)))
            .map(|process| process.launch.address.to_string())
            .collect()
    }
}
