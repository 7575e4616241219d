//! The operator's lock keys and deny list in the database's system key space, and
//! fdbcli's printable byte escaping.
//!
//! The global lock key holds the FoundationDB tuple `(lockID, start, end)` (unix seconds);
//! each deny list entry is the key `<prefix>/denyList/<id>` holding `<id>`.

use foundationdb_tuple::{pack, unpack};

/// The key of the global operator lock.
pub const GLOBAL_LOCK_KEY: &[u8] = b"\xff\x02/org.foundationdb.kubernetes-operator/global";

/// The prefix of deny list keys; the operator ID follows.
pub const DENY_LIST_PREFIX: &[u8] = b"\xff\x02/org.foundationdb.kubernetes-operator/denyList/";

/// How long a lock is held before it must be renewed (10 minutes).
pub const LOCK_DURATION_SECONDS: i64 = 600;

/// The value of the global lock.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LockValue {
    /// Who holds it (the cluster's `processGroupIDPrefix`).
    pub lock_id: String,
    /// When it was taken (unix seconds).
    pub start: i64,
    /// When it expires (unix seconds).
    pub end: i64,
}

/// Why a stored lock value cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("lock value {escaped} is not the tuple (lockID, start, end): {reason}")]
pub struct LockDecodeError {
    /// The value in fdbcli's escaping.
    pub escaped: String,
    /// The tuple decoder's message.
    pub reason: String,
}

impl LockValue {
    /// A lock taken at `now` for [`LOCK_DURATION_SECONDS`].
    pub fn new(lock_id: impl Into<String>, now: i64) -> Self {
        Self {
            lock_id: lock_id.into(),
            start: now,
            end: now.saturating_add(LOCK_DURATION_SECONDS),
        }
    }

    /// The tuple encoding stored under [`GLOBAL_LOCK_KEY`].
    pub fn encode(&self) -> Vec<u8> {
        pack(&(self.lock_id.as_str(), self.start, self.end))
    }

    /// Decodes a stored value.
    pub fn decode(bytes: &[u8]) -> Result<Self, LockDecodeError> {
        let (lock_id, start, end): (String, i64, i64) =
            unpack(bytes).map_err(|error| LockDecodeError {
                escaped: escape_bytes(bytes),
                reason: error.to_string(),
            })?;
        Ok(Self {
            lock_id,
            start,
            end,
        })
    }

    /// Whether the lock has expired at `now`.
    pub fn is_expired(&self, now: i64) -> bool {
        now >= self.end
    }

    /// Whether `lock_id` may take or renew the lock at `now`: it holds it, or it expired.
    pub fn can_be_taken_by(&self, lock_id: &str, now: i64) -> bool {
        self.lock_id == lock_id || self.is_expired(now)
    }
}

/// The deny list key of an operator ID.
pub fn deny_list_key(id: &str) -> Vec<u8> {
    let mut key = DENY_LIST_PREFIX.to_vec();
    key.extend_from_slice(id.as_bytes());
    key
}

/// The operator ID of a deny list key, when it is one.
pub fn deny_list_id(key: &[u8]) -> Option<String> {
    key.strip_prefix(DENY_LIST_PREFIX)
        .map(|id| String::from_utf8_lossy(id).into_owned())
}

/// The end of the deny list's key range (the prefix with its last byte incremented).
pub fn deny_list_range_end() -> Vec<u8> {
    let mut end = DENY_LIST_PREFIX.to_vec();
    if let Some(last) = end.last_mut() {
        *last = last.saturating_add(1);
    }
    end
}

// The printable byte codec lives in fdb-shared, where validation parses restore keys
// with it too.
pub use fdb_shared::printable::{UnescapeError, escape_bytes, unescape_bytes};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_value_round_trips_through_the_tuple_encoding() {
        let lock = LockValue::new("sample", 1_000);
        assert_eq!(lock.end, 1_600);
        let bytes = lock.encode();
        // Tuple layer: 0x02 string, 0x00 terminator, then integers.
        assert_eq!(bytes[0], 0x02);
        assert_eq!(&bytes[1..7], b"sample");
        assert_eq!(LockValue::decode(&bytes).unwrap(), lock);
        let error = LockValue::decode(b"garbage").unwrap_err();
        assert!(error.to_string().contains("garbage"), "{error}");
    }

    #[test]
    fn lock_expiry_and_takeover() {
        let lock = LockValue::new("a", 100);
        assert!(lock.can_be_taken_by("a", 200));
        assert!(!lock.can_be_taken_by("b", 699));
        assert!(lock.can_be_taken_by("b", 700));
    }

    #[test]
    fn escaping_round_trips_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let escaped = escape_bytes(&all);
        assert!(!escaped.contains(' ') && !escaped.contains('"') && !escaped.contains(';'));
        assert_eq!(unescape_bytes(&escaped).unwrap(), all);
        assert_eq!(
            escape_bytes(GLOBAL_LOCK_KEY),
            "\\xff\\x02/org.foundationdb.kubernetes-operator/global"
        );
        // fdbcli prints printable characters as is and a backslash doubled.
        assert_eq!(unescape_bytes("a b\\\\c\\x00").unwrap(), b"a b\\c\x00");
        assert!(unescape_bytes("\\x0").is_err());
        assert!(unescape_bytes("\\q").is_err());
    }

    #[test]
    fn deny_list_keys() {
        let key = deny_list_key("other-operator");
        assert_eq!(deny_list_id(&key).as_deref(), Some("other-operator"));
        assert_eq!(deny_list_id(GLOBAL_LOCK_KEY), None);
        assert!(deny_list_range_end().as_slice() > key.as_slice());
    }
}
