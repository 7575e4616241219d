//! The spread of coordinators over the datacenters of a database with two usable
//! regions (issue 24).

use super::*;

fn candidate(id: &str, dc: &str, number: u32, zone: &str) -> CoordinatorCandidate {
    CoordinatorCandidate {
        process_group_id: id.to_owned(),
        class: ProcessClass::Log,
        number,
        zone: zone.to_owned(),
        dc: Some(dc.to_owned()),
        address: ProcessAddress::new(format!("10.0.0.{number}"), 4501),
        current: false,
        hall: None,
    }
}

fn defaults() -> Vec<CoordinatorSelectionSetting> {
    fdb_shared::api::FoundationDBClusterSpec::default().coordinator_selection()
}

#[test]
fn two_usable_regions_never_put_a_majority_in_one_datacenter() {
    // dc1 and dc2 are mostly marked for removal (a rollout): 1 and 2 candidates; dc3 6.
    let mut candidates = Vec::new();
    for (dc, count) in [("dc1", 1), ("dc2", 2), ("dc3", 6)] {
        for n in 1..=count {
            candidates.push(candidate(
                &format!("{dc}-log-{n}"),
                dc,
                n,
                &format!("{dc}-z{n}"),
            ));
        }
    }
    // One usable region: distinct zones alone once the spread cannot be had.
    let loose = select_coordinators_spread(&candidates, &defaults(), 9, false, 0).unwrap();
    let in_dc3 = |chosen: &[CoordinatorCandidate]| {
        chosen
            .iter()
            .filter(|c| c.dc.as_deref() == Some("dc3"))
            .count()
    };
    assert!(in_dc3(&loose) > 3, "{loose:?}");
    // Two usable regions over 3 datacenters: at most 3 in one, or none chosen.
    let error = select_coordinators_spread(&candidates, &defaults(), 9, false, 3).unwrap_err();
    assert!(
        error.to_string().contains("at most 3 per datacenter"),
        "{error}"
    );
    // dc3 alone up (dc1 and dc2 lost): still at most 3 there, so none chosen.
    let lone: Vec<_> = candidates
        .iter()
        .filter(|c| c.dc.as_deref() == Some("dc3"))
        .cloned()
        .collect();
    assert!(select_coordinators_spread(&lone, &defaults(), 9, false, 3).is_err());
    // Every datacenter with three zones: three each.
    candidates.push(candidate("dc2-storage-1", "dc2", 9, "dc2-z9"));
    candidates.push(candidate("dc1-storage-1", "dc1", 10, "dc1-z10"));
    candidates.push(candidate("dc1-storage-2", "dc1", 11, "dc1-z11"));
    let spread = select_coordinators_spread(&candidates, &defaults(), 9, false, 3).unwrap();
    assert_eq!(in_dc3(&spread), 3, "{spread:?}");
    assert_eq!(spread.len(), 9);
}

#[test]
fn the_datacenters_of_two_usable_regions_count() {
    let spec: fdb_shared::api::FoundationDBClusterSpec = serde_yaml_ng::from_str(
        "{databaseConfiguration: {usable_regions: 2, regions: [{datacenters: [{id: dc1, priority: 1}, {id: dc3, satellite: 1}]}, {datacenters: [{id: dc2}, {id: dc3, satellite: 1}]}]}}",
    )
    .unwrap();
    assert_eq!(configured_datacenters(&spec), 3);
    let single: fdb_shared::api::FoundationDBClusterSpec = serde_yaml_ng::from_str(
        "{databaseConfiguration: {usable_regions: 1, regions: [{datacenters: [{id: dc1}, {id: dc3, satellite: 1}]}]}}",
    )
    .unwrap();
    assert_eq!(configured_datacenters(&single), 0);
}
