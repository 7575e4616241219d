//! Process group ID numbers: new groups take the numbers above the highest in use, so a
//! number freed by a removal is not handed out again at once (the Go operator picks
//! random numbers for the same reason): a replacement never meets what its predecessor
//! left behind (a pod still terminating under the same name, an exclusion of the same
//! locality).

use std::collections::BTreeSet;

/// The `count` numbers following the highest in `used` (numbers of groups that exist,
/// are being removed, or whose processes are still excluded in the database), from 1
/// when none is.
pub(crate) fn next_free_numbers(used: &BTreeSet<u32>, count: usize) -> Vec<u32> {
    // None left above the highest possible number.
    let Some(start) = used
        .last()
        .map_or(Some(1), |highest| highest.checked_add(1))
    else {
        return Vec::new();
    };
    (start..=u32::MAX).take(count).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_freed_below_the_highest_are_not_reused() {
        let used = BTreeSet::from([1, 2, 4, 7]);
        assert_eq!(next_free_numbers(&used, 3), [8, 9, 10]);
        assert_eq!(next_free_numbers(&BTreeSet::new(), 3), [1, 2, 3]);
        assert!(next_free_numbers(&used, 0).is_empty());
        assert!(next_free_numbers(&BTreeSet::from([u32::MAX]), 2).is_empty());
    }
}
