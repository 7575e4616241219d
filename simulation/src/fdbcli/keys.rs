//! fdbcli's key commands on the system keys the operator keeps (`get`, `getrange`,
//! `set`, `clear`, `clearrange` inside `begin`/`commit`), carried out through the typed
//! admin interface: the global lock, the deny list, the pending-upgrade list and the
//! restart lists. A key outside them is refused by name: the simulated database keeps
//! no other system key.

use fdb_operator::fdb::locks::{
    DENY_LIST_PREFIX, GLOBAL_LOCK_KEY, deny_list_id, deny_list_key, deny_list_range_end,
};
use fdb_operator::fdb::pending_upgrades::{UPGRADES_PREFIX, upgrades_range_end};
use fdb_operator::fdb::{
    AdminClient, AdminError, LockValue, PendingUpgrade, RestartEntry, RestartList,
};

use super::line::printable;

/// The restart lists, each a range of keys.
const RESTART_LISTS: [RestartList; 4] = [
    RestartList::Pending,
    RestartList::Ready,
    RestartList::PendingExclusion,
    RestartList::ReadyExclusion,
];

/// One change of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    /// `set KEY VALUE`.
    Set(Vec<u8>, Vec<u8>),
    /// `clear KEY`.
    Clear(Vec<u8>),
    /// `clearrange BEGIN END`.
    ClearRange(Vec<u8>, Vec<u8>),
}

/// An error of a key command that is not the database's: printed as is.
pub fn unkept(key: &[u8]) -> AdminError {
    AdminError::Unsupported {
        command: format!("`{}'", printable(key)),
        reason: "the simulated database keeps no such system key (it keeps the operator's lock, deny list, pending-upgrade and restart lists)".to_owned(),
    }
}

/// `get KEY`: what fdbcli prints.
pub async fn get(admin: &dyn AdminClient, key: &[u8]) -> Result<String, AdminError> {
    if key != GLOBAL_LOCK_KEY {
        return Err(unkept(key));
    }
    Ok(match admin.read_lock().await? {
        Some(lock) => format!("`{}' is `{}'\n", printable(key), printable(&lock.encode())),
        None => format!("`{}': not found\n", printable(key)),
    })
}

/// `getrange BEGIN END LIMIT`: what fdbcli prints.
pub async fn get_range(
    admin: &dyn AdminClient,
    begin: &[u8],
    end: &[u8],
    limit: usize,
) -> Result<String, AdminError> {
    let pairs: Vec<(Vec<u8>, Vec<u8>)> =
        if begin == DENY_LIST_PREFIX && end == deny_list_range_end() {
            let ids = admin.deny_list().await?;
            ids.iter()
                .map(|id| (deny_list_key(id), id.as_bytes().to_vec()))
                .collect()
        } else if begin == UPGRADES_PREFIX && end == upgrades_range_end() {
            let entries = admin.pending_upgrades().await?;
            entries.iter().map(|e| (e.key(), e.value())).collect()
        } else if let Some(list) = RESTART_LISTS
            .into_iter()
            .find(|list| begin == list.prefix() && end == list.range_end())
        {
            let entries = admin.restart_list(list).await?;
            entries.iter().map(|e| (e.key(list), e.value())).collect()
        } else {
            return Err(unkept(begin));
        };
    let mut pairs = pairs;
    pairs.sort();
    pairs.truncate(limit);
    let mut text = format!("\nRange limited to {limit} keys\n");
    for (key, value) in pairs {
        text.push_str(&format!(
            "`{}' is `{}'\n",
            printable(&key),
            printable(&value)
        ));
    }
    text.push('\n');
    Ok(text)
}

/// Commits `mutations` through the typed interface, one call per kind of key (each a
/// transaction of its own in the simulated database).
pub async fn commit(admin: &dyn AdminClient, mutations: &[Mutation]) -> Result<(), AdminError> {
    let mut lock: Option<LockValue> = None;
    let (mut deny_add, mut deny_remove) = (Vec::new(), Vec::new());
    let (mut upgrades_add, mut upgrades_remove) = (Vec::new(), Vec::new());
    let mut restarts: Vec<(RestartList, Vec<RestartEntry>, Vec<RestartEntry>)> = Vec::new();
    let mut clear_upgrades = false;
    for mutation in mutations {
        match mutation {
            Mutation::Set(key, value) if key == GLOBAL_LOCK_KEY => {
                lock = Some(LockValue::decode(value).map_err(|e| AdminError::Rejected {
                    command: "set".to_owned(),
                    reason: e.to_string(),
                })?);
            }
            Mutation::Set(key, _) | Mutation::Clear(key) if deny_list_id(key).is_some() => {
                let id = deny_list_id(key).unwrap_or_default();
                match mutation {
                    Mutation::Set(..) => deny_add.push(id),
                    _ => deny_remove.push(id),
                }
            }
            Mutation::Set(key, _) | Mutation::Clear(key)
                if PendingUpgrade::from_key(key).is_some() =>
            {
                let entry = PendingUpgrade::from_key(key).ok_or_else(|| unkept(key))?;
                match mutation {
                    Mutation::Set(..) => upgrades_add.push(entry),
                    _ => upgrades_remove.push(entry),
                }
            }
            Mutation::ClearRange(begin, end)
                if begin == UPGRADES_PREFIX && *end == upgrades_range_end() =>
            {
                clear_upgrades = true;
            }
            Mutation::Set(key, value) => {
                let (list, entry) = restart_entry(key, value).ok_or_else(|| unkept(key))?;
                restart_group(&mut restarts, list).1.push(entry);
            }
            Mutation::Clear(key) => {
                let placeholder = RestartEntry {
                    owner: String::new(),
                    group: "x".to_owned(),
                    since: 0,
                }
                .value();
                let (list, entry) = restart_entry(key, &placeholder).ok_or_else(|| unkept(key))?;
                restart_group(&mut restarts, list).2.push(entry);
            }
            Mutation::ClearRange(begin, _) => return Err(unkept(begin)),
        }
    }
    if let Some(lock) = lock {
        admin.write_lock(&lock).await?;
    }
    if !deny_add.is_empty() || !deny_remove.is_empty() {
        admin.update_deny_list(&deny_add, &deny_remove).await?;
    }
    if !upgrades_add.is_empty() || !upgrades_remove.is_empty() {
        admin
            .update_pending_upgrades(&upgrades_add, &upgrades_remove)
            .await?;
    }
    if clear_upgrades {
        admin.clear_pending_upgrades().await?;
    }
    for (list, add, remove) in restarts {
        admin.update_restart_list(list, &add, &remove).await?;
    }
    Ok(())
}

fn restart_entry(key: &[u8], value: &[u8]) -> Option<(RestartList, RestartEntry)> {
    RESTART_LISTS
        .into_iter()
        .find_map(|list| list.entry(key, value).map(|entry| (list, entry)))
}

fn restart_group(
    groups: &mut Vec<(RestartList, Vec<RestartEntry>, Vec<RestartEntry>)>,
    list: RestartList,
) -> &mut (RestartList, Vec<RestartEntry>, Vec<RestartEntry>) {
    let at = match groups.iter().position(|(l, _, _)| *l == list) {
        Some(at) => at,
        None => {
            groups.push((list, Vec::new(), Vec::new()));
            groups.len() - 1
        }
    };
    &mut groups[at]
}
