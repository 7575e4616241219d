//! Regions: a database configured with `regions` keeps its transaction system in one
//! datacenter, the primary (the main datacenter of the highest priority that can host
//! it), writes its commits to logs in that region's satellites too, and with
//! `usable_regions: 2` ships them through log routers to logs in the other region's
//! main datacenter, the remote. When the primary datacenter is lost, the next recovery
//! recruits in the remote one (a failover) if two regions are usable; with one usable
//! region the data lives only in the primary region and the database waits for it.
//!
//! Also the `configure` changes FoundationDB refuses for regions.

use fdb_shared::api::{DatabaseConfiguration, ProcessClass};
use fdb_shared::cluster_math::region_migration::{is_satellite, main_dc, priority_of};

use std::collections::BTreeSet;

use super::SimulatedFdb;
use super::processes::SimProcess;
use super::state::State;

impl SimulatedFdb {
    /// The pods running processes of datacenter `dc` (`locality_dcid`), for the
    /// `dataCenterDown` fault.
    pub fn pods_in_dc(&self, dc: &str) -> BTreeSet<String> {
        self.lock()
            .processes
            .values()
            .filter(|p| p.running && dc_of(p) == Some(dc))
            .map(|p| p.launch.pod.clone())
            .collect()
    }
}

/// The datacenter of a process (`locality_dcid`).
pub(crate) fn dc_of(process: &SimProcess) -> Option<&str> {
    process.launch.locality.get("dcid").map(String::as_str)
}

/// Where the transaction system of a multi-region configuration goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The primary datacenter: logs and the stateless roles.
    pub primary: String,
    /// The satellites of the primary's region, the highest priority first.
    pub satellites: Vec<String>,
    /// Logs in the satellites.
    pub satellite_logs: usize,
    /// The other region's main datacenter, when two regions are usable.
    pub remote: Option<String>,
}

/// The layout for the database's configuration, `None` without regions. `can_host`
/// tells whether a datacenter's live processes can hold a transaction system.
pub(crate) fn layout(state: &State, can_host: impl Fn(&str) -> bool) -> Option<Layout> {
    let configuration = state.configuration.as_ref()?;
    let mut mains: Vec<(i32, String, usize)> = configuration
        .regions
        .iter()
        .enumerate()
        .filter_map(|(index, region)| {
            main_dc(region).map(|dc| (priority_of(dc), dc.id.clone(), index))
        })
        .collect();
    if mains.is_empty() {
        return None;
    }
    mains.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let usable = usize::try_from(configuration.usable_regions.unwrap_or(1)).unwrap_or(1);
    // A region of negative priority never becomes the primary; with one usable region
    // only the preferred one holds the data, so no other can take over.
    let candidates: Vec<&(i32, String, usize)> = mains
        .iter()
        .filter(|(priority, _, _)| *priority >= 0)
        .take(if usable >= 2 { mains.len() } else { 1 })
        .collect();
    let (_, primary, index) = candidates
        .iter()
        .find(|(_, id, _)| can_host(id))
        .or_else(|| candidates.first())
        .map(|c| (*c).clone())?;
    let region = &configuration.regions[index];
    let mut satellites: Vec<(i32, String)> = region
        .datacenters
        .iter()
        .filter(|dc| is_satellite(dc))
        .map(|dc| (priority_of(dc), dc.id.clone()))
        .collect();
    satellites.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let remote = (usable >= 2)
        .then(|| mains.iter().find(|(_, id, _)| *id != primary))
        .flatten()
        .map(|(_, id, _)| id.clone());
    Some(Layout {
        primary,
        satellites: satellites.into_iter().map(|(_, id)| id).collect(),
        satellite_logs: region
            .satellite_logs
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0),
        remote,
    })
}

/// The datacenters that each hold a full team of every shard: the main datacenters of
/// the usable regions, the preferred first (one with `usable_regions: 1`); `None`
/// without regions (the whole database is one team).
pub(crate) fn data_dcs(configuration: Option<&DatabaseConfiguration>) -> Option<Vec<String>> {
    let configuration = configuration?;
    let mut mains: Vec<(i32, String)> = configuration
        .regions
        .iter()
        .filter_map(main_dc)
        .map(|dc| (priority_of(dc), dc.id.clone()))
        .collect();
    if mains.is_empty() {
        return None;
    }
    mains.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let usable = usize::try_from(configuration.usable_regions.unwrap_or(1)).unwrap_or(1);
    Some(
        mains
            .into_iter()
            .take(usable.max(1))
            .map(|(_, id)| id)
            .collect(),
    )
}

/// The scopes a shard's team is counted in: each data datacenter, or the whole database.
pub(crate) fn scopes(dcs: Option<&Vec<String>>) -> Vec<Option<&str>> {
    match dcs {
        Some(dcs) => dcs.iter().map(|dc| Some(dc.as_str())).collect(),
        None => vec![None],
    }
}

/// Whether a disk of datacenter `dc` counts in `scope`.
pub(crate) fn in_scope(dc: Option<&str>, scope: Option<&str>) -> bool {
    scope.is_none_or(|scope| dc == Some(scope))
}

/// The count of a role from the configuration, `default` when unset or not positive.
pub(crate) fn count(value: Option<i32>, default: usize) -> usize {
    value
        .filter(|v| *v > 0)
        .and_then(|v| usize::try_from(v).ok())
        .unwrap_or(default)
}

/// Whether a process class can host a log.
pub(crate) fn log_capable(class: ProcessClass) -> bool {
    matches!(
        class,
        ProcessClass::Log | ProcessClass::Transaction | ProcessClass::Unset
    )
}

/// Why FoundationDB refuses to go from `current` to `merged`, as fdbcli says it.
pub(crate) fn refusal(
    current: &DatabaseConfiguration,
    merged: &DatabaseConfiguration,
) -> Option<&'static str> {
    let usable = |c: &DatabaseConfiguration| c.usable_regions.unwrap_or(1);
    let mains =
        i32::try_from(merged.regions.iter().filter_map(main_dc).count()).unwrap_or(i32::MAX);
    if merged.regions.len() > 2 || usable(merged) > 2 || usable(merged) > mains.max(1) {
        return Some("ERROR: These changes would make the configuration invalid");
    }
    if usable(current) != usable(merged) {
        if current.regions != merged.regions {
            return Some(
                "ERROR: The region configuration cannot be changed while simultaneously changing usable_regions",
            );
        }
        let active = merged
            .regions
            .iter()
            .filter_map(main_dc)
            .filter(|dc| priority_of(dc) >= 0)
            .count();
        if active > 1 {
            return Some(
                "ERROR: When changing usable_regions, only one region can have priority >= 0",
            );
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> DatabaseConfiguration {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn regions_and_usable_regions_never_change_together() {
        let one = config("{usable_regions: 1, regions: [{datacenters: [{id: dc1, priority: 1}]}]}");
        let both = config(
            "{usable_regions: 2, regions: [{datacenters: [{id: dc1, priority: 1}]}, {datacenters: [{id: dc2, priority: -1}]}]}",
        );
        assert!(refusal(&one, &both).unwrap().contains("simultaneously"));
        let mut added = both.clone();
        added.usable_regions = Some(1);
        assert_eq!(refusal(&one, &added), None);
        assert_eq!(refusal(&added, &both), None);
        // Two usable regions need two regions.
        let mut alone = one.clone();
        alone.usable_regions = Some(2);
        assert!(refusal(&one, &alone).unwrap().contains("invalid"));
        // The usable count changes only while one region may be the primary.
        let mut active = added.clone();
        active.regions[1].datacenters[0].priority = Some(0);
        let mut raised = active.clone();
        raised.usable_regions = Some(2);
        assert!(
            refusal(&active, &raised)
                .unwrap()
                .contains("only one region")
        );
    }
}
