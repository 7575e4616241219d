//! Whether the operator coordinates through the global lock (docs/operator.md, "The
//! steps").

use crate::api::cluster::FoundationDBClusterSpec;

/// Locks are used when several operator instances may manage the database: several
/// regions or datacenters, a fault domain spanning several Kubernetes clusters
/// (`faultDomain.zoneCount` > 1) or three_data_hall; never with
/// `lockOptions.disableLocks`.
pub fn uses_locks(spec: &FoundationDBClusterSpec) -> bool {
    if spec.lock_options.disable_locks() {
        return false;
    }
    let config = &spec.database_configuration;
    let multi_region = spec.usable_regions() > 1 || config.regions.len() > 1;
    let multi_zone = spec.fault_domain.zone_count.unwrap_or(0) > 1;
    let data_halls = spec.redundancy_mode().spreads_over_data_halls();
    multi_region || multi_zone || data_halls
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> FoundationDBClusterSpec {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn locks_follow_topology_unless_disabled() {
        assert!(!uses_locks(&FoundationDBClusterSpec::default()));
        assert!(uses_locks(&spec(
            "databaseConfiguration: {usable_regions: 2}"
        )));
        assert!(uses_locks(&spec("faultDomain: {zoneCount: 3}")));
        assert!(uses_locks(&spec(
            "databaseConfiguration: {redundancy_mode: three_data_hall}"
        )));
        assert!(!uses_locks(&spec(
            "databaseConfiguration: {redundancy_mode: three_data_hall}\nlockOptions: {disableLocks: true}"
        )));
    }
}
