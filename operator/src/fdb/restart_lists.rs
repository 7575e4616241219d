//! The restart lists shared by the operator instances of one database (the Go
//! operator's global synchronization): under the operator lock prefix, each instance
//! writes `pendingForRestart/<processGroupIDPrefix>/<processGroupID>` for its process
//! groups that need a restart, and `readyForRestart/...` for those ready for it (their
//! new configuration confirmed), each holding the tuple `(unix seconds)` of when it was
//! added: the Go operator's layout and encoding, so mixed fleets agree. One instance
//! kills every process of the database once every pending group is ready.
//!
//! The exclusion lists (`pendingForExclusion` / `readyForExclusion`) have the same
//! layout: one instance excludes every instance's ready groups at once
//! (`controller::exclusion_sync`).

use foundationdb_tuple::{pack, unpack};

/// The operator's key prefix in the system key space (the lock's).
pub const OPERATOR_PREFIX: &[u8] = b"\xff\x02/org.foundationdb.kubernetes-operator/";

/// Which of the two lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum RestartList {
    /// Groups that need a restart.
    Pending,
    /// Groups ready for it.
    Ready,
    /// Groups marked for removal that need the exclude command.
    PendingExclusion,
    /// Those their instance would exclude now.
    ReadyExclusion,
}

impl RestartList {
    /// The list's name in its keys (the Go operator's).
    pub fn name(self) -> &'static str {
        match self {
            Self::Pending => "pendingForRestart",
            Self::Ready => "readyForRestart",
            Self::PendingExclusion => "pendingForExclusion",
            Self::ReadyExclusion => "readyForExclusion",
        }
    }

    /// The prefix of every key of the list (ends with `/`).
    pub fn prefix(self) -> Vec<u8> {
        [OPERATOR_PREFIX, self.name().as_bytes(), b"/"].concat()
    }

    /// The end of the list's key range (its prefix with the last byte incremented).
    pub fn range_end(self) -> Vec<u8> {
        let mut end = self.prefix();
        if let Some(last) = end.last_mut() {
            *last = last.saturating_add(1);
        }
        end
    }

    /// The entry a key and value of this list name, when they are one.
    pub fn entry(self, key: &[u8], value: &[u8]) -> Option<RestartEntry> {
        let prefix = self.prefix();
        let rest = String::from_utf8_lossy(key.strip_prefix(prefix.as_slice())?).into_owned();
        // Go's `path.Join`: `<prefix>/<group>`, or `<group>` alone with an empty prefix.
        let (owner, group) = rest.rsplit_once('/').unwrap_or(("", rest.as_str()));
        if group.is_empty() {
            return None;
        }
        let (since,): (i64,) = unpack(value).ok()?;
        Some(RestartEntry {
            owner: owner.to_owned(),
            group: group.to_owned(),
            since,
        })
    }
}

impl std::fmt::Display for RestartList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One entry of a restart list.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct RestartEntry {
    /// The `processGroupIDPrefix` of the instance that wrote it.
    pub owner: String,
    /// The process group ID.
    pub group: String,
    /// When it was added (unix seconds).
    pub since: i64,
}

impl RestartEntry {
    /// Its key in `list`.
    pub fn key(&self, list: RestartList) -> Vec<u8> {
        let mut key = list.prefix();
        if !self.owner.is_empty() {
            key.extend_from_slice(self.owner.as_bytes());
            key.push(b'/');
        }
        key.extend_from_slice(self.group.as_bytes());
        key
    }

    /// Its value: the tuple `(since)`.
    pub fn value(&self) -> Vec<u8> {
        pack(&(self.since,))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_go_operator_layout_and_parse_back() {
        let entry = RestartEntry {
            owner: "dc1".into(),
            group: "dc1-storage-1".into(),
            since: 1_700_000_000,
        };
        let key = entry.key(RestartList::Pending);
        assert_eq!(
            key,
            b"\xff\x02/org.foundationdb.kubernetes-operator/pendingForRestart/dc1/dc1-storage-1"
        );
        // Go's tuple encoding of a positive integer: 0x14 + its length, big-endian bytes.
        assert_eq!(entry.value(), [0x18, 0x65, 0x53, 0xf1, 0x00]);
        assert_eq!(
            RestartList::Pending.entry(&key, &entry.value()),
            Some(entry.clone())
        );
        // Not an entry of the other list, nor a value that is not the tuple.
        assert_eq!(RestartList::Ready.entry(&key, &entry.value()), None);
        assert_eq!(RestartList::Pending.entry(&key, b"x"), None);
        let bare = RestartEntry {
            owner: String::new(),
            ..entry.clone()
        };
        let key = bare.key(RestartList::Ready);
        assert!(key.ends_with(b"readyForRestart/dc1-storage-1"));
        assert_eq!(RestartList::Ready.entry(&key, &bare.value()), Some(bare));
        assert!(RestartList::Ready.range_end() > key);
        // The exclusion lists: their own prefixes, not a prefix of the restart lists'.
        let key = entry.key(RestartList::ReadyExclusion);
        assert!(key.ends_with(b"/readyForExclusion/dc1/dc1-storage-1"));
        assert_eq!(
            RestartList::PendingExclusion.entry(&key, &entry.value()),
            None
        );
        assert_eq!(
            RestartList::ReadyExclusion.entry(&key, &entry.value()),
            Some(entry)
        );
    }
}
