//! Node taints that lead to replacement (`automationOptions.replacements
//! .taintReplacementOptions`): which taints of a group's node count, since when, and
//! whether the group has been tainted long enough (NodeTaintDetected, then
//! NodeTaintReplacing; ReplaceFailedPods replaces a group whose NodeTaintReplacing is
//! older than `taintReplacementTimeSeconds`).
//!
//! For each taint of the node (a taint without a key is ignored), the option with the
//! taint's key decides, else the `*` option. An option without a key, or without a
//! duration or with a negative one, is not an option at all. An option whose duration is
//! the maximum 64-bit integer is an opt-out: a taint it decides is ignored (also by `*`).

use fdb_shared::api::cluster::TaintReplacementOption;
use k8s_openapi::api::core::v1::Node;

/// The wildcard taint key.
pub(crate) const ANY_TAINT: &str = "*";

/// What the group's node says about taints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaintFacts {
    /// The node could not be read: the taint conditions stay as they were.
    Unknown,
    /// No taint of the node counts (or there is no node, or no option).
    Clear,
    /// A taint counts.
    Tainted {
        /// When NodeTaintDetected was first seen: the earliest of its previous
        /// timestamp, the counting taints' `timeAdded`, and now.
        detected_since: i64,
        /// Whether a counting taint has been there longer than its option's duration.
        replacing: bool,
    },
}

/// The duration of a usable option; `None` for an option that is not one.
fn duration(option: &TaintReplacementOption) -> Option<i64> {
    let key = option.key.as_deref().unwrap_or_default();
    let seconds = option.duration_in_seconds?;
    (!key.is_empty() && seconds >= 0).then_some(seconds)
}

/// The duration the options give a taint with `key`; `None` when the taint does not
/// count (no option for it, or an opt-out).
pub(crate) fn taint_duration(options: &[TaintReplacementOption], key: &str) -> Option<i64> {
    if key.is_empty() {
        return None;
    }
    let usable = |wanted: &str| {
        options
            .iter()
            .filter(|o| o.key.as_deref() == Some(wanted))
            .find_map(duration)
    };
    let seconds = usable(key).or_else(|| usable(ANY_TAINT))?;
    (seconds != i64::MAX).then_some(seconds)
}

/// The taint facts of a group whose pod runs on `node` (`None`: unscheduled), with the
/// previous NodeTaintDetected timestamp, at `now` (unix seconds).
pub(crate) fn taint_facts(
    options: &[TaintReplacementOption],
    node: Option<&Node>,
    previous_detected: Option<i64>,
    now: i64,
) -> TaintFacts {
    let Some(node) = node else {
        return TaintFacts::Clear;
    };
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(Vec::as_slice)
        .unwrap_or_default();
    let counting: Vec<(Option<i64>, i64)> = taints
        .iter()
        .filter_map(|taint| {
            let seconds = taint_duration(options, &taint.key)?;
            let added = taint.time_added.as_ref().map(|t| t.0.as_second());
            Some((added, seconds))
        })
        .collect();
    if counting.is_empty() {
        return TaintFacts::Clear;
    }
    let detected_since = counting
        .iter()
        .filter_map(|(added, _)| *added)
        .chain(previous_detected)
        .fold(now, i64::min);
    let tainted_for = now.saturating_sub(detected_since);
    TaintFacts::Tainted {
        detected_since,
        replacing: counting.iter().any(|(_, seconds)| tainted_for >= *seconds),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(key: &str, seconds: i64) -> TaintReplacementOption {
        TaintReplacementOption {
            key: Some(key.to_owned()),
            duration_in_seconds: Some(seconds),
        }
    }

    fn node(taints: serde_json::Value) -> Node {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "node-1"}, "spec": {"taints": taints}
        }))
        .unwrap()
    }

    #[test]
    fn the_specific_key_wins_over_the_wildcard_and_max_int_opts_out() {
        let options = [
            option("*", 60),
            option("maintenance", 600),
            option("keep", i64::MAX),
        ];
        assert_eq!(taint_duration(&options, "maintenance"), Some(600));
        assert_eq!(taint_duration(&options, "anything"), Some(60));
        assert_eq!(taint_duration(&options, "keep"), None, "opt-out");
        assert_eq!(taint_duration(&options, ""), None);
        assert_eq!(taint_duration(&[option("a", 5)], "b"), None);
        let broken = [
            TaintReplacementOption {
                key: Some("a".into()),
                duration_in_seconds: None,
            },
            option("a", -1),
            option("*", 30),
        ];
        assert_eq!(
            taint_duration(&broken, "a"),
            Some(30),
            "an option without a usable duration is no option"
        );
    }

    #[test]
    fn detected_first_then_replacing_after_the_duration() {
        let options = [option("*", 600)];
        let tainted = node(serde_json::json!([{"key": "k", "effect": "NoSchedule"}]));
        assert_eq!(
            taint_facts(&options, Some(&tainted), None, 1_000),
            TaintFacts::Tainted {
                detected_since: 1_000,
                replacing: false
            }
        );
        assert_eq!(
            taint_facts(&options, Some(&tainted), Some(1_000), 1_600),
            TaintFacts::Tainted {
                detected_since: 1_000,
                replacing: true
            }
        );
        // A taint's timeAdded dates the detection back.
        let stamped = node(serde_json::json!([{"key": "k", "effect": "NoExecute",
            "timeAdded": "1970-01-01T00:01:40Z"}]));
        assert_eq!(
            taint_facts(&options, Some(&stamped), None, 1_000),
            TaintFacts::Tainted {
                detected_since: 100,
                replacing: true
            }
        );
    }

    #[test]
    fn no_counting_taint_clears() {
        let options = [option("k", 60), option("keep", i64::MAX)];
        let other = node(serde_json::json!([{"key": "keep", "effect": "NoSchedule"},
            {"key": "", "effect": "NoSchedule"}]));
        assert_eq!(
            taint_facts(&options, Some(&other), Some(1), 1_000),
            TaintFacts::Clear
        );
        assert_eq!(taint_facts(&options, None, None, 1_000), TaintFacts::Clear);
        assert_eq!(
            taint_facts(
                &[],
                Some(&node(
                    serde_json::json!([{"key": "k", "effect": "NoSchedule"}])
                )),
                None,
                1
            ),
            TaintFacts::Clear
        );
    }
}
