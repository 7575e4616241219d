//! `spec.lockOptions`: the global lock that serialises operator instances sharing a
//! database.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The key prefix of the lock keys when `lockOptions.lockKeyPrefix` is not set.
pub const DEFAULT_LOCK_KEY_PREFIX: &[u8] = b"\xff\x02/org.foundationdb.kubernetes-operator";

/// `spec.lockOptions`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LockOptions {
    /// Whether locking is disabled even where it would be used (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_locks: Option<bool>,
    /// Prefix of the lock keys (default `\xff\x02/org.foundationdb.kubernetes-operator`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_key_prefix: Option<String>,
    /// How long a lock is held before it must be renewed, in minutes (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_duration_minutes: Option<i32>,
    /// Operator instances that may not take the lock (`allow: true` removes an entry).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_list: Vec<LockDenyListEntry>,
}

/// An entry of the lock deny list.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LockDenyListEntry {
    /// The lock ID (`processGroupIDPrefix`) of the operator instance.
    #[serde(default)]
    pub id: String,
    /// `true` removes the instance from the deny list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<bool>,
}

impl LockOptions {
    /// Whether locks are disabled (default false).
    pub fn disable_locks(&self) -> bool {
        self.disable_locks.unwrap_or(false)
    }

    /// Lock key prefix as bytes (default [`DEFAULT_LOCK_KEY_PREFIX`]). The spec value is
    /// in FoundationDB's printable form, where `\xNN` stands for the byte `NN`.
    pub fn lock_key_prefix(&self) -> Vec<u8> {
        match &self.lock_key_prefix {
            Some(text) => decode_printable_key(text),
            None => DEFAULT_LOCK_KEY_PREFIX.to_vec(),
        }
    }

    /// Lock duration in minutes (default 10).
    pub fn lock_duration_minutes(&self) -> i32 {
        self.lock_duration_minutes.unwrap_or(10)
    }
}

/// Decodes FoundationDB's printable key form: `\xNN` is the byte `NN`, `\\` a backslash,
/// anything else is taken literally.
pub fn decode_printable_key(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let rest = &bytes[index..];
        if rest.starts_with(b"\\\\") {
            out.push(b'\\');
            index += 2;
            continue;
        }
        if rest.len() >= 4 && rest.starts_with(b"\\x") {
            let hex = std::str::from_utf8(&rest[2..4]).ok();
            if let Some(byte) = hex.and_then(|hex| u8::from_str_radix(hex, 16).ok()) {
                out.push(byte);
                index += 4;
                continue;
            }
        }
        out.push(bytes[index]);
        index += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_keys_decode_hex_escapes() {
        assert_eq!(
            decode_printable_key("\\xff\\x02/org.foundationdb.kubernetes-operator"),
            DEFAULT_LOCK_KEY_PREFIX
        );
        assert_eq!(decode_printable_key("a\\\\b\\xzz"), b"a\\b\\xzz");
        assert_eq!(
            LockOptions::default().lock_key_prefix(),
            DEFAULT_LOCK_KEY_PREFIX
        );
    }
}
