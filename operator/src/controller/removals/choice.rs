//! Which groups a shrink removes: the survivors are chosen so they span as many zones as
//! possible, preferring healthy groups and then lower IDs; the rest are removed.

use std::collections::BTreeMap;

/// A group that could survive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// The process group ID.
    pub id: String,
    /// Its zone.
    pub zone: String,
    /// Whether it is healthy (no conditions): healthy groups survive first.
    pub healthy: bool,
    /// Its number in the ID, for a stable order.
    pub number: u32,
}

/// The IDs to remove so that `keep` candidates survive, spread over the most zones.
///
/// Survivors are picked round by round: each round takes the best remaining candidate of
/// every zone (zones with a better candidate first), until `keep` are taken.
pub(crate) fn surplus(candidates: &[Candidate], keep: usize) -> Vec<String> {
    let mut zones: BTreeMap<&str, Vec<&Candidate>> = BTreeMap::new();
    for candidate in candidates {
        zones.entry(&candidate.zone).or_default().push(candidate);
    }
    let rank = |c: &Candidate| (!c.healthy, c.number, c.id.clone());
    for members in zones.values_mut() {
        members.sort_by_key(|c| rank(c));
    }
    let mut survivors: Vec<&str> = Vec::new();
    let mut round = 0;
    while survivors.len() < keep {
        let mut this_round: Vec<&Candidate> = zones
            .values()
            .filter_map(|members| members.get(round).copied())
            .collect();
        if this_round.is_empty() {
            break;
        }
        this_round.sort_by_key(|c| rank(c));
        for candidate in this_round {
            if survivors.len() < keep {
                survivors.push(&candidate.id);
            }
        }
        round += 1;
    }
    let mut removed: Vec<String> = candidates
        .iter()
        .filter(|c| !survivors.contains(&c.id.as_str()))
        .map(|c| c.id.clone())
        .collect();
    removed.sort();
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: &str, zone: &str, healthy: bool, number: u32) -> Candidate {
        Candidate {
            id: id.into(),
            zone: zone.into(),
            healthy,
            number,
        }
    }

    #[test]
    fn survivors_span_the_most_zones() {
        let candidates = [
            c("storage-1", "z1", true, 1),
            c("storage-2", "z1", true, 2),
            c("storage-3", "z2", true, 3),
            c("storage-4", "z3", true, 4),
        ];
        assert_eq!(surplus(&candidates, 3), ["storage-2"]);
        assert_eq!(surplus(&candidates, 4), Vec::<String>::new());
        assert_eq!(
            surplus(&candidates, 1),
            ["storage-2", "storage-3", "storage-4"]
        );
    }

    #[test]
    fn unhealthy_groups_go_first() {
        let candidates = [
            c("storage-1", "z1", false, 1),
            c("storage-2", "z1", true, 2),
            c("storage-3", "z2", true, 3),
        ];
        assert_eq!(surplus(&candidates, 2), ["storage-1"]);
    }
}
