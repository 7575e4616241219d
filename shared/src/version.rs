//! FoundationDB versions: parsing, ordering, protocol compatibility and the features
//! that depend on the version.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// The oldest FoundationDB version this operator manages.
pub const MINIMUM_SUPPORTED_VERSION: FdbVersion = FdbVersion::new(7, 1, 0);

/// A FoundationDB version such as `7.1.57` or `7.3.0-rc2`.
///
/// Ordering is by major, minor and patch; a final release sorts after its release
/// candidates (`7.1.0-rc1 < 7.1.0-rc2 < 7.1.0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FdbVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Patch version.
    pub patch: u32,
    /// Release candidate number, if this is a release candidate.
    pub release_candidate: Option<u32>,
}

/// Why a version string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{input:?} is not a valid FoundationDB version (expected MAJOR.MINOR.PATCH with an optional -rcN, e.g. 7.1.57)"
)]
pub struct ParseVersionError {
    /// The text that failed to parse.
    pub input: String,
}

impl FdbVersion {
    /// A final (non release candidate) version.
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self {
            major,
            minor,
            patch,
            release_candidate: None,
        }
    }

    /// Whether processes on `self` and `other` speak the same protocol: same major, minor
    /// and release candidate; the patch may differ.
    pub fn is_protocol_compatible(&self, other: &FdbVersion) -> bool {
        self.major == other.major
            && self.minor == other.minor
            && self.release_candidate == other.release_candidate
    }

    /// Whether a cluster running `self` may be moved to `target`: any protocol-compatible
    /// version (patch up- or downgrade), or a newer one. Incompatible downgrades are refused.
    pub fn can_change_to(&self, target: &FdbVersion) -> bool {
        self.is_protocol_compatible(target) || target > self
    }

    /// Whether this version is at least `other`.
    pub fn is_at_least(&self, other: &FdbVersion) -> bool {
        self >= other
    }

    /// Whether `exclude locality_instance_id:<id>` is supported: from 7.1.42 on the 7.1
    /// line, never on 7.2, and from 7.3.26 on later lines.
    pub fn supports_locality_based_exclusions(&self) -> bool {
        match (self.major, self.minor) {
            (7, 1) => self.is_at_least(&FdbVersion::new(7, 1, 42)),
            (7, 2) => false,
            (7, 3) => self.is_at_least(&FdbVersion::new(7, 3, 26)),
            (major, _) => major > 7 || self.is_at_least(&FdbVersion::new(7, 3, 26)),
        }
    }

    /// Whether `fdbbackup modify` takes `--encryption-key-file`, so a new destination keeps
    /// the backup encrypted: 7.3.72 and later on the 7.3 line, 7.4.6 and later on 7.4,
    /// every later line (apple/foundationdb #12554, in fdbbackup/backup.actor.cpp of those
    /// releases). Before, `modify -d` opens the new container without encryption.
    pub fn supports_backup_modify_encryption(&self) -> bool {
        match (self.major, self.minor) {
            (7, 3) => self.is_at_least(&FdbVersion::new(7, 3, 72)),
            (7, 4) => self.is_at_least(&FdbVersion::new(7, 4, 6)),
            (major, minor) => major > 7 || (major == 7 && minor > 4),
        }
    }

    /// Whether the `ssd-sharded-rocksdb` storage engine exists (7.2.0 and later).
    pub fn supports_sharded_rocksdb(&self) -> bool {
        self.is_at_least(&FdbVersion::new(7, 2, 0))
    }

    /// Whether the `ssd-redwood-1` storage engine name exists (7.3.0 and later).
    pub fn supports_redwood_1(&self) -> bool {
        self.is_at_least(&FdbVersion::new(7, 3, 0))
    }

    /// Whether `configure` and `status json` name the radix-tree engine
    /// `memory-radixtree` (7.4.0 and later) rather than only `memory-radixtree-beta`, and
    /// `configure` no longer takes `ssd-redwood-1-experimental` (`configForToken` in
    /// fdbclient/ManagementAPI.actor.cpp, release-7.4).
    pub fn names_memory_radixtree(&self) -> bool {
        self.is_at_least(&FdbVersion::new(7, 4, 0))
    }

    /// Whether the sidecar has the `is_present` endpoint (7.1.4 and later).
    pub fn sidecar_supports_is_present(&self) -> bool {
        self.is_at_least(&FdbVersion::new(7, 1, 4))
    }

    /// Whether this version is at least [`MINIMUM_SUPPORTED_VERSION`].
    pub fn is_supported(&self) -> bool {
        self.is_at_least(&MINIMUM_SUPPORTED_VERSION)
    }

    /// The same version without its release candidate suffix.
    pub fn without_release_candidate(&self) -> Self {
        Self::new(self.major, self.minor, self.patch)
    }
}

impl Ord for FdbVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (self.release_candidate, other.release_candidate) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(a), Some(b)) => a.cmp(&b),
            })
    }
}

impl PartialOrd for FdbVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl FromStr for FdbVersion {
    type Err = ParseVersionError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let error = || ParseVersionError {
            input: input.to_owned(),
        };
        let (numbers, release_candidate) = match input.split_once('-') {
            Some((numbers, suffix)) => {
                let rc = suffix.strip_prefix("rc").ok_or_else(error)?;
                (numbers, Some(parse_number(rc).ok_or_else(error)?))
            }
            None => (input, None),
        };
        let mut parts = numbers.split('.');
        let mut next = || parts.next().and_then(parse_number).ok_or_else(error);
        let (major, minor, patch) = (next()?, next()?, next()?);
        if parts.next().is_some() {
            return Err(error());
        }
        Ok(Self {
            major,
            minor,
            patch,
            release_candidate,
        })
    }
}

/// Parses a plain decimal number: digits only, no sign, no spaces.
fn parse_number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

impl fmt::Display for FdbVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if let Some(rc) = self.release_candidate {
            write!(f, "-rc{rc}")?;
        }
        Ok(())
    }
}

crate::text_serde::serde_as_text!(FdbVersion);

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> FdbVersion {
        text.parse().unwrap()
    }

    #[test]
    fn parses_and_prints_round_trip() {
        for text in ["7.1.57", "7.3.0-rc2", "6.2.30", "10.20.30"] {
            assert_eq!(v(text).to_string(), text);
        }
    }

    #[test]
    fn rejects_malformed_versions() {
        for text in [
            "",
            "7",
            "7.1",
            "7.1.",
            "7.1.x",
            "7.1.0.1",
            "7.1.0-beta1",
            "7.1.0-rc",
            " 7.1.0",
            "+7.1.0",
            "7.-1.0",
        ] {
            assert!(text.parse::<FdbVersion>().is_err(), "{text:?} should fail");
        }
    }

    #[test]
    fn orders_release_candidates_before_the_release() {
        let mut versions = [
            v("7.1.0"),
            v("7.1.0-rc2"),
            v("6.3.25"),
            v("7.1.0-rc1"),
            v("7.0.9"),
        ];
        versions.sort();
        let printed: Vec<String> = versions.iter().map(ToString::to_string).collect();
        assert_eq!(
            printed,
            ["6.3.25", "7.0.9", "7.1.0-rc1", "7.1.0-rc2", "7.1.0"]
        );
    }

    #[test]
    fn compatibility_and_allowed_changes() {
        assert!(v("7.1.25").is_protocol_compatible(&v("7.1.57")));
        assert!(!v("7.1.25").is_protocol_compatible(&v("7.3.43")));
        assert!(!v("7.1.0-rc1").is_protocol_compatible(&v("7.1.0")));
        assert!(v("7.1.57").can_change_to(&v("7.1.25")), "patch downgrade");
        assert!(v("7.1.57").can_change_to(&v("7.3.43")), "upgrade");
        assert!(
            !v("7.3.43").can_change_to(&v("7.1.57")),
            "incompatible downgrade"
        );
    }

    #[test]
    fn version_gated_features() {
        assert!(!v("7.1.41").supports_locality_based_exclusions());
        assert!(v("7.1.42").supports_locality_based_exclusions());
        assert!(!v("7.2.9").supports_locality_based_exclusions());
        assert!(!v("7.3.25").supports_locality_based_exclusions());
        assert!(v("7.3.26").supports_locality_based_exclusions());
        assert!(!v("7.1.57").supports_backup_modify_encryption());
        assert!(!v("7.3.71").supports_backup_modify_encryption());
        assert!(v("7.3.72").supports_backup_modify_encryption());
        assert!(!v("7.4.5").supports_backup_modify_encryption());
        assert!(v("7.4.6").supports_backup_modify_encryption());
        assert!(!v("7.1.57").supports_sharded_rocksdb());
        assert!(v("7.2.0").supports_sharded_rocksdb());
        assert!(!v("7.2.5").supports_redwood_1());
        assert!(v("7.3.0").supports_redwood_1());
        assert!(!v("7.1.3").sidecar_supports_is_present());
        assert!(v("7.1.4").sidecar_supports_is_present());
        assert!(!v("7.0.0").is_supported());
        assert!(v("7.1.0").is_supported());
    }

    #[test]
    fn serde_uses_the_text_form() {
        let parsed: FdbVersion = serde_json::from_str("\"7.1.57\"").unwrap();
        assert_eq!(parsed, v("7.1.57"));
        assert_eq!(serde_json::to_string(&parsed).unwrap(), "\"7.1.57\"");
        assert!(serde_json::from_str::<FdbVersion>("\"seven\"").is_err());
    }
}
