//! fdbcli's `force_recovery_with_data_loss <DCID>`
//! (`fdbcli/ForceRecoveryWithDataLossCommand.actor.cpp`): usage unless exactly one
//! argument; otherwise it waits for the cluster controller to recover the database into
//! DCID and prints nothing. It returns at once when the database already commits, and
//! never (to fdbcli's timeout) when no recovery can happen: no majority of coordinators
//! to elect a cluster controller, no coordinated state to recover from, or a DCID the
//! region configuration does not have (`fdb/forced_recovery.rs`).

use super::line::text;
use super::texts::Stop;
use crate::fdb::SimulatedFdb;

/// The command's usage line, as fdbcli's `printUsage` prints it.
pub(super) const USAGE: &str = "force_recovery_with_data_loss <DCID>";

/// Runs the command: `Ok(None)` for a usage error, `Ok(Some(changed))` when it returned.
pub(super) fn run(fdb: &SimulatedFdb, arguments: &[Vec<u8>]) -> Result<Option<bool>, Stop> {
    let [dc] = arguments else {
        return Ok(None);
    };
    match fdb.force_recovery_with_data_loss(&text(dc)) {
        Ok(forced) => Ok(Some(forced.is_some())),
        Err(_) => Err(Stop::Unavailable),
    }
}
