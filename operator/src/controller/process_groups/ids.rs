//! Process group ID numbers: the lowest positive numbers not in use.

use std::collections::BTreeSet;

/// The `count` lowest positive numbers not in `used` (numbers of groups that exist,
/// are being removed, or whose processes are still excluded in the database).
pub fn lowest_free_numbers(used: &BTreeSet<u32>, count: usize) -> Vec<u32> {
    (1..=u32::MAX)
        .filter(|n| !used.contains(n))
        .take(count)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_gaps_first() {
        let used = BTreeSet::from([1, 2, 4, 7]);
        assert_eq!(lowest_free_numbers(&used, 4), [3, 5, 6, 8]);
        assert_eq!(lowest_free_numbers(&BTreeSet::new(), 3), [1, 2, 3]);
        assert!(lowest_free_numbers(&used, 0).is_empty());
    }
}
