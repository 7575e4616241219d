//! How many coordinators a cluster should have (docs/controller-model.md, "Process counts
//! and roles").

use crate::api::database_configuration::RedundancyMode;

/// Desired coordinator count: single 1, double 3, triple 5; 9 for the data hall and
/// datacenter modes or when more than one region is usable.
pub fn desired_coordinator_count(mode: &RedundancyMode, usable_regions: i32) -> i32 {
    if usable_regions > 1 {
        return 9;
    }
    match mode {
        RedundancyMode::Single => 1,
        RedundancyMode::Double | RedundancyMode::Other(_) => 3,
        RedundancyMode::Triple => 5,
        RedundancyMode::ThreeDataHall
        | RedundancyMode::ThreeDataHallFallback
        | RedundancyMode::ThreeDatacenter
        | RedundancyMode::ThreeDatacenterFallback => 9,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinator_counts_per_mode_and_regions() {
        assert_eq!(desired_coordinator_count(&RedundancyMode::Single, 1), 1);
        assert_eq!(desired_coordinator_count(&RedundancyMode::Double, 1), 3);
        assert_eq!(desired_coordinator_count(&RedundancyMode::Triple, 1), 5);
        assert_eq!(
            desired_coordinator_count(&RedundancyMode::ThreeDataHall, 1),
            9
        );
        assert_eq!(desired_coordinator_count(&RedundancyMode::Double, 2), 9);
    }
}
