//! The lists shared by the instances of a database: the restart lists
//! ([`crate::controller::safety::restart_sync`]) and the exclusion lists
//! ([`crate::controller::safety::exclusion_sync`]). This instance's entries written, every
//! instance's read back for the step's conclusion, and the entries a kill or an
//! exclusion served cleared.

use crate::controller::context::Context;
use crate::controller::errors::StepError;
use crate::controller::pass::io::PassIo;
use crate::controller::safety::restart_sync::{RestartLists, applied, own_changes};
use crate::controller::snapshot::ClusterSnapshot;
use crate::fdb::{AdminClient as _, RestartEntry, RestartList};

/// Brings this instance's entries of the `pair` of lists (pending, ready) to `pending`
/// and `ready`, then returns both lists (every instance's entries). A database that
/// cannot be read (in a recovery) is not an error of the pass: the lists are left
/// unknown (`None`) and the step waits.
pub(super) async fn sync(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    pair: [RestartList; 2],
    pending: &[String],
    ready: &[String],
) -> Result<(String, Option<RestartLists>), StepError> {
    let owner = snapshot.spec().process_group_id_prefix().to_owned();
    let now = snapshot.now_unix();
    let admin = io.admin(ctx, snapshot)?;
    let mut lists = RestartLists::default();
    let mut written = 0;
    for (index, (list, wanted)) in pair.into_iter().zip([pending, ready]).enumerate() {
        let listed = match admin.restart_list(list).await {
            Ok(listed) => listed,
            Err(error) => {
                let error = fdb_shared::error_chain::ErrorChain(&error);
                tracing::warn!(%error, %list, "could not read a shared list");
                return Ok((format!("could not read {list}: {error}"), None));
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
        if index == 0 {
            lists.pending = after;
        } else {
            lists.ready = after;
        }
    }
    let what = format!(
        "{} and {}: {} pending, {} ready ({written} entries of this instance changed)",
        pair[0],
        pair[1],
        lists.pending.len(),
        lists.ready.len()
    );
    Ok((what, Some(lists)))
}

/// Removes `entries` from each of `lists` (the entries a kill or an exclusion served).
pub(super) async fn clear(
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    io: &mut PassIo,
    lists: &[RestartList],
    entries: &[RestartEntry],
) -> Result<String, StepError> {
    if entries.is_empty() {
        return Ok("no entries to clear".to_owned());
    }
    let admin = io.admin(ctx, snapshot)?;
    for list in lists {
        admin
            .update_restart_list(*list, &[], entries)
            .await
            .map_err(StepError::admin(format!(
                "clear {} entries of {list}",
                entries.len()
            )))?;
    }
    let names: Vec<&str> = lists.iter().map(|l| l.name()).collect();
    Ok(format!(
        "cleared {} entries of {}",
        entries.len(),
        names.join(" and ")
    ))
}
