//! The refusals of fdbcli's `exclude` (without `FORCE`), told apart by their text: the
//! client-side check of `checkExclusion` (fdbclient/SpecialKeySpace.actor.cpp, printed
//! by `excludeServersAndLocalities` in fdbcli/ExcludeCommand.actor.cpp, exit code 1)
//! refuses when the exclusion would leave too little free space, or when it cannot
//! tell because a storage server's metrics are missing from `status json`. Both leave
//! the database as it was: nothing is excluded, and the same command may succeed later.

/// Why FoundationDB refused an exclusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExcludeRefusal {
    /// "Could not calculate the impact of this exclude on the total free space"
    /// (7.1; "available space" from 7.3): a storage role lacks its metrics, and
    /// FoundationDB asks to try again in 30 seconds.
    MetricsMissing,
    /// "This exclude may cause the total free space in the cluster to drop below 10%"
    /// (7.1; "available space" from 7.3).
    FreeSpace,
}

impl ExcludeRefusal {
    /// What FoundationDB refused, in words for an Event.
    pub fn describe(self) -> &'static str {
        match self {
            Self::MetricsMissing => {
                "FoundationDB could not calculate the exclusion's impact on the free space (a storage server's metrics are missing from status json)"
            }
            Self::FreeSpace => {
                "FoundationDB refused the exclusion: the storage servers left would have less than 10% of their space free"
            }
        }
    }
}

/// The refusal an `exclude` run's output reports, if it is one.
pub fn exclude_refusal(output: &str) -> Option<ExcludeRefusal> {
    if output.contains("Could not calculate the impact of this exclude") {
        Some(ExcludeRefusal::MetricsMissing)
    } else if output.contains("This exclude may cause the total")
        && output.contains("to drop below 10%")
    {
        Some(ExcludeRefusal::FreeSpace)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_versions_refusal_text_is_told_apart() {
        // As each release branch's fdbcli prints them (simulation/src/fdbcli/session.rs
        // holds the full texts, tested against the simulated database).
        for text in [
            "ERROR: Could not calculate the impact of this exclude on the total free space in the cluster.\nPlease try the exclude again in 30 seconds.\nType `exclude FORCE <ADDRESS...>' to exclude without checking free space.\n",
            "ERROR: Could not calculate the impact of this exclude on the total available space in the cluster.\nPlease try the exclude again in 30 seconds.\nType `exclude FORCE failed <ADDRESS...>' to exclude without performing safety checks.\n",
        ] {
            assert_eq!(exclude_refusal(text), Some(ExcludeRefusal::MetricsMissing));
        }
        for text in [
            "ERROR: This exclude may cause the total free space in the cluster to drop below 10%.\n",
            "ERROR: This exclude may cause the total available space in the cluster to drop below 10%.\n",
        ] {
            assert_eq!(exclude_refusal(text), Some(ExcludeRefusal::FreeSpace));
        }
        for text in [
            "ERROR: `x' is neither a valid network endpoint address nor a locality\n",
            "The database is unavailable; type `status' for more information.\n",
        ] {
            assert_eq!(exclude_refusal(text), None);
        }
    }
}
