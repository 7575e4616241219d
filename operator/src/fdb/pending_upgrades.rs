//! The pending-upgrade list under the operator lock prefix (docs/upgrades.md, "Incompatible
//! upgrades" step 4): before an incompatible upgrade's cluster-wide kill, every operator
//! instance sharing the database adds its ready process groups under
//! `\xff\x02/org.foundationdb.kubernetes-operator/upgrades/<target>/<processGroupID>`
//! (value: the process group ID), the layout the Go operator uses, so mixed fleets agree.
//! The instance that kills clears the whole `upgrades/` range.

use fdb_shared::FdbVersion;

/// The prefix of every pending-upgrade key; `<target>/<processGroupID>` follows.
pub const UPGRADES_PREFIX: &[u8] = b"\xff\x02/org.foundationdb.kubernetes-operator/upgrades/";

/// One entry of the list: a process group ready for the upgrade to `version`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct PendingUpgrade {
    /// The target version as written in the key (`7.3.43`).
    pub version: String,
    /// The process group ID.
    pub group: String,
}

impl PendingUpgrade {
    /// The entry of `group` for `target`.
    pub fn new(target: &FdbVersion, group: impl Into<String>) -> Self {
        Self {
            version: target.to_string(),
            group: group.into(),
        }
    }

    /// Its key.
    pub fn key(&self) -> Vec<u8> {
        let mut key = UPGRADES_PREFIX.to_vec();
        key.extend_from_slice(self.version.as_bytes());
        key.push(b'/');
        key.extend_from_slice(self.group.as_bytes());
        key
    }

    /// Its value (the process group ID).
    pub fn value(&self) -> Vec<u8> {
        self.group.as_bytes().to_vec()
    }

    /// The entry a key names, when it is one (`upgrades/<version>/<group>`).
    pub fn from_key(key: &[u8]) -> Option<Self> {
        let rest = key.strip_prefix(UPGRADES_PREFIX)?;
        let text = String::from_utf8_lossy(rest);
        let (version, group) = text.split_once('/')?;
        if version.is_empty() || group.is_empty() {
            return None;
        }
        Some(Self {
            version: version.to_owned(),
            group: group.to_owned(),
        })
    }

    /// Whether it is an entry for `target`.
    pub fn is_for(&self, target: &FdbVersion) -> bool {
        self.version == target.to_string()
    }
}

/// The end of the `upgrades/` range (the prefix with its last byte incremented).
pub fn upgrades_range_end() -> Vec<u8> {
    let mut end = UPGRADES_PREFIX.to_vec();
    if let Some(last) = end.last_mut() {
        *last = last.saturating_add(1);
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_go_operator_layout_and_parse_back() {
        let target: FdbVersion = "7.3.43".parse().unwrap();
        let entry = PendingUpgrade::new(&target, "kc1-storage-1");
        assert_eq!(
            entry.key(),
            b"\xff\x02/org.foundationdb.kubernetes-operator/upgrades/7.3.43/kc1-storage-1"
        );
        assert_eq!(entry.value(), b"kc1-storage-1");
        assert_eq!(PendingUpgrade::from_key(&entry.key()), Some(entry.clone()));
        assert!(entry.is_for(&target));
        assert!(!entry.is_for(&"7.1.57".parse().unwrap()));
        assert_eq!(PendingUpgrade::from_key(b"\xff\x02/other"), None);
        assert_eq!(
            PendingUpgrade::from_key(&[UPGRADES_PREFIX, b"7.3.43"].concat()),
            None
        );
        let end = upgrades_range_end();
        assert!(end.as_slice() > entry.key().as_slice());
        assert!(end.as_slice() > UPGRADES_PREFIX);
    }
}
