//! The restart lists shared by the instances of a database
//! ([`crate::controller::restart_sync`]): this instance's entries written, every
//! instance's read back for the step's conclusion, and the ready entries cleared after
//! a kill.

use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::pass_io::PassIo;
use crate::controller::plan::PassFacts;
use crate::controller::restart_sync::{RestartLists, applied, own_changes};
use crate::controller::snapshot::ClusterSnapshot;
use crate::fdb::{AdminClient as _, RestartEntry, RestartList};

/// Brings this instance's entries to `pending` and `ready`, then leaves both lists in
/// `facts`. A database that cannot be read (in a recovery) is not an error of the pass:
/// the lists are left unknown and the step waits.
pub(super) async fn sync(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    facts: &mut PassFacts,
    pending: &[String],
    ready: &[String],
) -> Result<String, StepError> {
    let owner = snapshot.spec().process_group_id_prefix().to_owned();
    let now = snapshot.now_unix();
    let admin = io.admin(ctx, snapshot)?;
    let mut lists = RestartLists::default();
    let mut written = 0;
    for (list, wanted) in [(RestartList::Pending, pending), (RestartList::Ready, ready)] {
        let listed = match admin.restart_list(list).await {
            Ok(listed) => listed,
            Err(error) => {
                tracing::warn!(%error, %list, "could not read a restart list");
                return Ok(format!("could not read {list}: {error}"));
            }
        };
        let (add, remove) = own_changes(&owner, &listed, wanted, now);
        if !add.is_empty() || !remove.is_empty() {
            admin
                .update_restart_list(list, &add, &remove)
                .await
                .map_err(StepError::admin(format!(
                    "write {} entries of {list} and remove {}",
                    add.len(),
                    remove.len()
                )))?;
            written += add.len() + remove.len();
        }
        let after = applied(listed, add, &remove);
        match list {
            RestartList::Pending => lists.pending = after,
            RestartList::Ready => lists.ready = after,
        }
    }
    let what = format!(
        "restart lists: {} pending, {} ready ({written} entries of this instance changed)",
        lists.pending.len(),
        lists.ready.len()
    );
    facts.restart_lists = Some(lists);
    Ok(what)
}

/// Removes the ready entries a kill served.
pub(super) async fn clear_ready(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    entries: &[RestartEntry],
) -> Result<String, StepError> {
    if entries.is_empty() {
        return Ok("no ready entries to clear".to_owned());
    }
    io.admin(ctx, snapshot)?
        .update_restart_list(RestartList::Ready, &[], entries)
        .await
        .map_err(StepError::admin(format!(
            "clear {} entries of readyForRestart",
            entries.len()
        )))?;
    Ok(format!(
        "cleared {} entries of readyForRestart",
        entries.len()
    ))
}
