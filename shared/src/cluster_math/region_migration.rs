//! The order of region changes: the next `configure` on the way from the live database
//! configuration to the desired one, when the regions differ.
//!
//! FoundationDB refuses to change `regions` and `usable_regions` in one command, and a
//! region that is not yet replicated must not become the primary. The way there is the
//! one FoundationDB's manual gives for "migrating a database to use a region
//! configuration" (and the Go operator follows): add the new region at a negative
//! priority, raise `usable_regions` so the data is copied there, only then give it its
//! priority; to leave a region, first lower its priority below zero, then
//! `usable_regions`, then drop it. Each call returns one step; applying the steps one by
//! one reaches the desired configuration. The settings other than the regions keep their
//! live values until the regions are done.

use std::collections::BTreeMap;

use crate::api::database_configuration::{DataCenter, DatabaseConfiguration, Region};

/// The next configuration to apply on the way from `live` to `desired`: `desired` itself
/// when the regions already agree.
pub fn next_configuration_change(
    live: &DatabaseConfiguration,
    desired: &DatabaseConfiguration,
) -> DatabaseConfiguration {
    if live.regions == desired.regions {
        return desired.clone();
    }
    let mut next = live.clone();
    let live_priorities = main_priorities(live);
    let desired_priorities = main_priorities(desired);

    // 1. The regions kept take their desired satellites and satellite settings, at the
    //    priority they have now.
    for region in &mut next.regions {
        if let Some(main) = main_dc(region) {
            let (id, priority) = (main.id.clone(), priority_of(main));
            *region = region_of(desired, &id, priority);
        }
    }

    // 2. Add missing regions (two at most), the highest desired priority first: the
    //    first region of a database at priority 1, a second one at -1, so it never
    //    becomes the primary before it holds the data.
    let mut known = live_priorities.clone();
    while next.regions.len() < 2 {
        let Some(id) = highest(
            desired_priorities
                .iter()
                .filter(|(id, _)| !known.contains_key(*id)),
        ) else {
            break;
        };
        let priority = if next.regions.is_empty() { 1 } else { -1 };
        next.regions.push(region_of(desired, &id, priority));
        known.insert(id, priority);
    }
    if next.regions.len() != live.regions.len() {
        return next;
    }

    if let Some(step) = removal_step(live, desired, &desired_priorities, &next) {
        return step;
    }
    if let Some(step) = priority_step(live, live_priorities, desired_priorities, &next) {
        return step;
    }
    // 5. The desired number of usable regions, then 6. the desired regions as written.
    if live.usable_regions != desired.usable_regions {
        next.usable_regions = desired.usable_regions;
        return next;
    }
    next.regions = desired.regions.clone();
    next
}

/// Step 3: remove a region the desired configuration does not have (unless the regions
/// go altogether): lower its priority below zero first (giving another region a positive
/// one if none has), then `usable_regions`, then drop it.
fn removal_step(
    live: &DatabaseConfiguration,
    desired: &DatabaseConfiguration,
    desired_priorities: &BTreeMap<String, i32>,
    next: &DatabaseConfiguration,
) -> Option<DatabaseConfiguration> {
    let mut next = next.clone();
    let leaving: Vec<(String, i32)> = live
        .regions
        .iter()
        .filter_map(main_dc)
        .filter(|dc| {
            !desired_priorities.contains_key(&dc.id)
                && live.regions.len() > 1
                && !desired.regions.is_empty()
        })
        .map(|dc| (dc.id.clone(), priority_of(dc)))
        .collect();
    let fewer = i32::try_from(next.regions.len()).unwrap_or(i32::MAX) - 1;
    if let Some((id, _)) = leaving.iter().find(|(_, priority)| *priority < 0) {
        if next.usable_regions != Some(fewer) {
            next.usable_regions = Some(fewer);
        } else {
            next.regions
                .retain(|region| main_dc(region).is_none_or(|dc| &dc.id != id));
        }
        return Some(next);
    }
    let usable = live.usable_regions.unwrap_or(1);
    if let Some((id, _)) = leaving
        .iter()
        .find(|(_, priority)| !(*priority > 0 && usable < 2))
    {
        demote(&mut next, id);
        return Some(next);
    }

    None
}

/// Step 4: give the regions their desired priorities, once every region is usable (a
/// region's priority only rises once it holds a copy of the data). At least one region
/// keeps a positive priority.
fn priority_step(
    live: &DatabaseConfiguration,
    live_priorities: BTreeMap<String, i32>,
    desired_priorities: BTreeMap<String, i32>,
    next: &DatabaseConfiguration,
) -> Option<DatabaseConfiguration> {
    let mut next = next.clone();
    let mut current = live_priorities;
    let mut wanted = desired_priorities;
    for id in current.keys() {
        wanted.entry(id.clone()).or_insert(-1);
    }
    for id in wanted.keys() {
        current.entry(id.clone()).or_insert(-1);
    }
    let top_current = highest(current.iter());
    let top_wanted = highest(wanted.iter());
    if top_wanted.as_ref().is_none_or(|id| wanted[id] < 0)
        && let Some(id) = top_current
    {
        let priority = current[&id];
        wanted.insert(id, priority);
    }
    if current != wanted {
        let all = i32::try_from(live.regions.len()).unwrap_or(i32::MAX);
        if live.usable_regions.unwrap_or(1) != all {
            next.usable_regions = Some(all);
        } else {
            for region in &mut next.regions {
                if let Some(main) = main_dc_mut(region)
                    && let Some(priority) = wanted.get(&main.id)
                {
                    main.priority = Some(*priority);
                }
            }
        }
        return Some(next);
    }

    None
}

/// Lowers the priority of the region of `id` below zero; when no other region then has a
/// positive priority, the first other one gets priority 1.
fn demote(next: &mut DatabaseConfiguration, id: &str) {
    let mut other_primary = false;
    for region in &mut next.regions {
        if let Some(main) = main_dc_mut(region) {
            if main.id == id {
                main.priority = Some(-1);
            } else if priority_of(main) > 0 {
                other_primary = true;
            }
        }
    }
    if !other_primary
        && let Some(main) = next
            .regions
            .iter_mut()
            .filter_map(main_dc_mut)
            .find(|dc| dc.id != id)
    {
        main.priority = Some(1);
    }
}

/// The ID with the highest priority (the first in ID order on a tie).
fn highest<'a>(entries: impl Iterator<Item = (&'a String, &'a i32)>) -> Option<String> {
    let mut best: Option<(&String, i32)> = None;
    for (id, priority) in entries {
        if best.is_none_or(|(_, top)| *priority > top) {
            best = Some((id, *priority));
        }
    }
    best.map(|(id, _)| id.clone())
}

/// Whether a datacenter is a satellite.
pub fn is_satellite(dc: &DataCenter) -> bool {
    dc.satellite.unwrap_or(0) != 0
}

/// A datacenter's priority (0 when unset).
pub fn priority_of(dc: &DataCenter) -> i32 {
    dc.priority.unwrap_or(0)
}

/// The main (not satellite) datacenter of a region.
pub fn main_dc(region: &Region) -> Option<&DataCenter> {
    region.datacenters.iter().find(|dc| !is_satellite(dc))
}

fn main_dc_mut(region: &mut Region) -> Option<&mut DataCenter> {
    region.datacenters.iter_mut().find(|dc| !is_satellite(dc))
}

/// The priority of each region's main datacenter.
fn main_priorities(config: &DatabaseConfiguration) -> BTreeMap<String, i32> {
    config
        .regions
        .iter()
        .filter_map(main_dc)
        .map(|dc| (dc.id.clone(), priority_of(dc)))
        .collect()
}

/// The desired region whose main datacenter is `id`, at `priority` (a region of that
/// datacenter alone when the desired configuration has none).
fn region_of(desired: &DatabaseConfiguration, id: &str, priority: i32) -> Region {
    let mut region = desired
        .regions
        .iter()
        .find(|region| main_dc(region).is_some_and(|dc| dc.id == id))
        .cloned()
        .unwrap_or_else(|| Region {
            datacenters: vec![DataCenter {
                id: id.to_owned(),
                ..DataCenter::default()
            }],
            ..Region::default()
        });
    if let Some(main) = main_dc_mut(&mut region) {
        main.priority = Some(priority);
    }
    region
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> DatabaseConfiguration {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    /// The Go operator's `multi_dc` sample: stage 1 and final.
    const STAGE_1: &str = "{redundancy_mode: double, usable_regions: 1, regions: [{datacenters: [{id: dc1, priority: 1}]}]}";
    const FINAL: &str = "{redundancy_mode: double, usable_regions: 2, regions: [
        {datacenters: [{id: dc1, priority: 1}, {id: dc3, satellite: 1, priority: 2}, {id: dc2, satellite: 1, priority: 1}], satellite_logs: 3},
        {datacenters: [{id: dc2, priority: 0}, {id: dc3, satellite: 1, priority: 2}, {id: dc1, satellite: 1, priority: 1}], satellite_logs: 3}]}";

    /// Applies the steps until the desired configuration is reached (at most 10).
    fn steps(from: &str, to: &str) -> Vec<DatabaseConfiguration> {
        let desired = config(to);
        let mut live = config(from);
        let mut steps = Vec::new();
        while live != desired {
            let next = next_configuration_change(&live, &desired);
            assert_ne!(next, live, "no progress from {live:?}");
            assert!(
                !(next.usable_regions != live.usable_regions && next.regions != live.regions),
                "regions and usable_regions change together: {live:?} -> {next:?}"
            );
            steps.push(next.clone());
            live = next;
            assert!(steps.len() <= 10, "{steps:#?}");
        }
        steps
    }

    fn priorities(config: &DatabaseConfiguration) -> Vec<(String, i32)> {
        main_priorities(config).into_iter().collect()
    }

    #[test]
    fn one_region_to_two_adds_the_region_unused_then_usable_then_its_priority() {
        let steps = steps(STAGE_1, FINAL);
        assert_eq!(steps.len(), 3, "{steps:#?}");
        // The new region joins at -1 with the satellites of the final configuration.
        assert_eq!(steps[0].usable_regions, Some(1));
        assert_eq!(
            priorities(&steps[0]),
            [("dc1".to_owned(), 1), ("dc2".to_owned(), -1)]
        );
        assert_eq!(steps[0].regions[0], config(FINAL).regions[0]);
        // Then the data goes to both regions, then the remote gets its priority.
        assert_eq!(steps[1].usable_regions, Some(2));
        assert_eq!(steps[1].regions, steps[0].regions);
        assert_eq!(steps[2], config(FINAL));
    }

    #[test]
    fn two_regions_to_one_lowers_the_leaving_region_then_usable_regions_then_drops_it() {
        let steps = steps(FINAL, STAGE_1);
        // dc1's region loses its satellites and dc2 (priority 0) goes to -1, then
        // usable_regions to 1, then dc2's region goes.
        assert_eq!(
            priorities(&steps[0]),
            [("dc1".to_owned(), 1), ("dc2".to_owned(), -1)]
        );
        assert_eq!(steps[0].usable_regions, Some(2));
        assert_eq!(steps[1].usable_regions, Some(1));
        assert_eq!(priorities(&steps[2]), [("dc1".to_owned(), 1)]);
        assert_eq!(steps.last(), Some(&config(STAGE_1)));
    }

    #[test]
    fn leaving_the_primary_region_moves_the_primary_first() {
        let from = "{usable_regions: 2, regions: [{datacenters: [{id: dc1, priority: 1}]}, {datacenters: [{id: dc2, priority: 0}]}]}";
        let to = "{usable_regions: 1, regions: [{datacenters: [{id: dc2, priority: 1}]}]}";
        let steps = steps(from, to);
        // The leaving primary is demoted and the other region made primary in one step.
        assert_eq!(
            priorities(&steps[0]),
            [("dc1".to_owned(), -1), ("dc2".to_owned(), 1)]
        );
        assert_eq!(steps[1].usable_regions, Some(1));
        assert_eq!(steps.last(), Some(&config(to)));
    }

    #[test]
    fn without_a_region_change_the_desired_configuration_is_next() {
        let live = config("{logs: 3, usable_regions: 1}");
        let desired = config("{logs: 5, usable_regions: 1}");
        assert_eq!(next_configuration_change(&live, &desired), desired);
        // A database without regions gets its first region at priority 1.
        let steps = steps("{redundancy_mode: double, usable_regions: 1}", STAGE_1);
        assert_eq!(steps.len(), 1);
    }
}
