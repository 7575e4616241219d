//! Choosing coordinators (docs/controller-model.md, "Process counts and roles"): from
//! stateful (or `coordinator` class) process groups, each in a
//! distinct zone, never excluded or marked for removal, higher `coordinatorSelection`
//! priority first.

pub(crate) mod candidates;
pub(crate) mod change;
pub(crate) mod room;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::cluster::CoordinatorSelectionSetting;
use fdb_shared::api::{FoundationDBCluster, ProcessClass};

/// The port of the first process of a pod (4501; 4500 with TLS).
pub(crate) fn first_process_port(tls: bool) -> u16 {
    if tls { 4500 } else { 4501 }
}

/// A process group that could host a coordinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CoordinatorCandidate {
    /// The process group ID.
    pub process_group_id: String,
    /// Its class.
    pub class: ProcessClass,
    /// Its number within the class (for a stable order).
    pub number: u32,
    /// Its zone.
    pub zone: String,
    /// Its datacenter (`locality_dcid`), when it has one.
    pub dc: Option<String>,
    /// The address the connection string names it by.
    pub address: ProcessAddress,
    /// Whether it is a coordinator now (kept in preference, to change as little as
    /// possible).
    pub current: bool,
    /// The `data_hall` locality its processes report (`None` before they report, or
    /// without one).
    pub hall: Option<String>,
}

/// Not enough distinct zones to place the coordinators.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{wanted} coordinators need {wanted} zones, but eligible process groups span only {zones}")]
pub(crate) struct NotEnoughZones {
    /// Coordinators wanted.
    pub wanted: usize,
    /// Distinct zones among the eligible candidates.
    pub zones: usize,
}

/// Too few data halls (or zones in them) to spread the coordinators of a
/// three_data_hall cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{wanted} coordinators need distinct zones and at most {per_hall} per data hall, but the eligible process groups allow only {possible} ({halls} data halls; {without_hall} groups report no data_hall locality)"
)]
pub(crate) struct NotEnoughHalls {
    /// Coordinators wanted.
    pub wanted: usize,
    /// Most coordinators one hall may hold.
    pub per_hall: usize,
    /// How many could be placed.
    pub possible: usize,
    /// Distinct halls among the eligible candidates.
    pub halls: usize,
    /// Eligible candidates without a data hall.
    pub without_hall: usize,
}

/// Too few datacenters (or zones in them) to spread the coordinators of a database
/// with several usable regions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{wanted} coordinators need distinct zones and at most {per_dc} per datacenter ({datacenters} datacenters in the regions), but the eligible process groups do not allow it"
)]
pub(crate) struct NotEnoughDatacenters {
    /// Coordinators wanted.
    pub wanted: usize,
    /// Most coordinators one datacenter may hold.
    pub per_dc: usize,
    /// The datacenters the spread counts.
    pub datacenters: usize,
}

/// Why no coordinators could be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CoordinatorChoiceError {
    /// Not enough zones.
    #[error(transparent)]
    Zones(#[from] NotEnoughZones),
    /// Not enough data halls.
    #[error(transparent)]
    Halls(#[from] NotEnoughHalls),
    /// Not enough datacenters.
    #[error(transparent)]
    Datacenters(#[from] NotEnoughDatacenters),
}

/// The distinct datacenters of the `regions` of a database with several usable
/// regions (main datacenters and satellites), 0 with one usable region: then the
/// coordinators are spread over the datacenters the candidates span, as far as they can
/// be (the Go operator's hard limit per `dcid` also applies only with two regions).
pub(crate) fn configured_datacenters(spec: &fdb_shared::api::FoundationDBClusterSpec) -> usize {
    if spec.usable_regions() <= 1 {
        return 0;
    }
    let ids: BTreeSet<&str> = spec
        .database_configuration
        .regions
        .iter()
        .flat_map(|r| r.datacenters.iter().map(|dc| dc.id.as_str()))
        .filter(|id| !id.is_empty())
        .collect();
    ids.len()
}

/// The most coordinators of `count` one datacenter may hold with `configured`
/// datacenters in the regions ([`configured_datacenters`]) and the candidates': `count`
/// divided by the larger number, rounded up; `None` within one datacenter.
pub(crate) fn dc_limit(
    candidates: &[CoordinatorCandidate],
    count: usize,
    configured: usize,
) -> Option<usize> {
    let dcs: BTreeSet<&str> = candidates.iter().filter_map(|c| c.dc.as_deref()).collect();
    let spread = dcs.len().max(configured);
    (spread > 1).then(|| count.div_ceil(spread))
}

/// Most coordinators one data hall may hold in three_data_hall: a third of them (3 of
/// 9, as the Go operator's hard limit), so losing a hall leaves a majority.
pub(crate) fn coordinators_per_hall(count: usize) -> usize {
    count.div_ceil(3).max(1)
}

/// The class priority, `None` for classes that may not host coordinators.
pub(crate) fn priority(
    settings: &[CoordinatorSelectionSetting],
    class: ProcessClass,
) -> Option<i32> {
    if !class.may_host_coordinators() {
        return None;
    }
    settings
        .iter()
        .find(|s| s.process_class == class)
        .map(|s| s.priority)
}

/// At most this many of `count` coordinators in one datacenter when the candidates span
/// several (`count` divided by the datacenters, rounded up: 3 of 9 across 3), so the
/// loss of one datacenter leaves a majority; `None` within one datacenter.
pub(crate) fn per_dc_limit(candidates: &[CoordinatorCandidate], count: usize) -> Option<usize> {
    let dcs: BTreeSet<&str> = candidates.iter().filter_map(|c| c.dc.as_deref()).collect();
    (dcs.len() > 1).then(|| count.div_ceil(dcs.len()))
}

/// Chooses `count` coordinators in distinct zones (and spread over datacenters,
/// [`per_dc_limit`]): by class priority (higher first), then current coordinators, then
/// class and number. Candidates must already exclude groups that are excluded, under
/// maintenance or marked for removal. While a datacenter is lost the spread cannot be
/// had: distinct zones alone then (coordinators that answer beat a spread that cannot
/// be made); the spread comes back once the datacenter does.
pub(crate) fn select_coordinators(
    candidates: &[CoordinatorCandidate],
    settings: &[CoordinatorSelectionSetting],
    count: usize,
) -> Result<Vec<CoordinatorCandidate>, NotEnoughZones> {
    let limit = per_dc_limit(candidates, count);
    select_within(candidates, settings, count, limit).or_else(|error| match limit {
        Some(_) => select_within(candidates, settings, count, None),
        None => Err(error),
    })
}

fn select_within(
    candidates: &[CoordinatorCandidate],
    settings: &[CoordinatorSelectionSetting],
    count: usize,
    limit: Option<usize>,
) -> Result<Vec<CoordinatorCandidate>, NotEnoughZones> {
    let eligible = ranked(candidates, settings);
    let mut zones = BTreeSet::new();
    let mut per_dc: std::collections::BTreeMap<Option<&str>, usize> = Default::default();
    let mut chosen = Vec::new();
    for (_, candidate) in &eligible {
        if chosen.len() == count {
            break;
        }
        let in_dc = per_dc.entry(candidate.dc.as_deref()).or_insert(0);
        if limit.is_some_and(|limit| *in_dc >= limit) || zones.contains(&candidate.zone) {
            continue;
        }
        zones.insert(candidate.zone.clone());
        *in_dc += 1;
        chosen.push((*candidate).clone());
    }
    if chosen.len() < count {
        let zones: BTreeSet<_> = eligible.iter().map(|(_, c)| &c.zone).collect();
        return Err(NotEnoughZones {
            wanted: count,
            zones: zones.len(),
        });
    }
    Ok(chosen)
}

/// Chooses `count` coordinators as [`select_coordinators`] does, and, with
/// `by_hall` (three_data_hall), only among groups reporting a `data_hall` locality, at
/// most [`coordinators_per_hall`] in one hall, filled evenly (one per hall in turn, as
/// the Go operator raises its per-hall limit step by step).
///
/// With `configured` datacenters (a database with several usable regions,
/// [`configured_datacenters`]), at most [`dc_limit`] in one datacenter, a hard limit:
/// when the datacenters up cannot hold their share (one lost, or its groups marked for
/// removal) no coordinators are chosen rather than a majority in one datacenter, whose
/// loss would then take the database down.
pub(crate) fn select_coordinators_spread(
    candidates: &[CoordinatorCandidate],
    settings: &[CoordinatorSelectionSetting],
    count: usize,
    by_hall: bool,
    configured: usize,
) -> Result<Vec<CoordinatorCandidate>, CoordinatorChoiceError> {
    if !by_hall && configured > 1 {
        let spanned: BTreeSet<&str> = candidates.iter().filter_map(|c| c.dc.as_deref()).collect();
        let datacenters = spanned.len().max(configured);
        let per_dc = count.div_ceil(datacenters);
        return select_within(candidates, settings, count, Some(per_dc)).map_err(|_| {
            NotEnoughDatacenters {
                wanted: count,
                per_dc,
                datacenters,
            }
            .into()
        });
    }
    if !by_hall {
        return Ok(select_coordinators(candidates, settings, count)?);
    }
    let eligible = ranked(candidates, settings);
    let limit = coordinators_per_hall(count);
    let mut zones = BTreeSet::new();
    let mut per_hall: BTreeMap<&str, usize> = BTreeMap::new();
    let mut chosen: Vec<CoordinatorCandidate> = Vec::new();
    for current_limit in 1..=limit {
        for (_, candidate) in &eligible {
            if chosen.len() == count {
                break;
            }
            let Some(hall) = candidate.hall.as_deref() else {
                continue;
            };
            let in_hall = per_hall.get(hall).copied().unwrap_or(0);
            if in_hall >= current_limit || zones.contains(&candidate.zone) {
                continue;
            }
            zones.insert(candidate.zone.clone());
            per_hall.insert(hall, in_hall + 1);
            chosen.push((*candidate).clone());
        }
    }
    if chosen.len() < count {
        let halls: BTreeSet<_> = eligible
            .iter()
            .filter_map(|(_, c)| c.hall.as_ref())
            .collect();
        return Err(NotEnoughHalls {
            wanted: count,
            per_hall: limit,
            possible: chosen.len(),
            halls: halls.len(),
            without_hall: eligible.iter().filter(|(_, c)| c.hall.is_none()).count(),
        }
        .into());
    }
    Ok(chosen)
}

/// The candidates of a class that may host coordinators, best first: by class priority
/// (higher first), then current coordinators, then class and number.
fn ranked<'a>(
    candidates: &'a [CoordinatorCandidate],
    settings: &[CoordinatorSelectionSetting],
) -> Vec<(i32, &'a CoordinatorCandidate)> {
    let mut eligible: Vec<(i32, &CoordinatorCandidate)> = candidates
        .iter()
        .filter_map(|c| priority(settings, c.class).map(|p| (p, c)))
        .collect();
    eligible.sort_by(|(pa, a), (pb, b)| {
        pb.cmp(pa)
            .then(b.current.cmp(&a.current))
            .then(a.class.cmp(&b.class))
            .then(a.number.cmp(&b.number))
            .then(a.process_group_id.cmp(&b.process_group_id))
    });
    eligible
}

/// The reporting processes of the database that are not this cluster's (`ours` names its
/// process groups), as coordinator candidates: with several regions the coordinators
/// spread over every datacenter, so each instance chooses among the whole database, as
/// the Go operator does. Excluded processes, processes under maintenance and those
/// without a zone or instance ID are left out. `dns` writes their addresses with their
/// DNS name locality (`useDNSInClusterFile`).
pub(crate) fn database_candidates(
    db: &fdb_shared::status_json::DatabaseStatus,
    ours: &BTreeSet<String>,
    current: &[String],
    dns: bool,
) -> Vec<CoordinatorCandidate> {
    let mut candidates: Vec<CoordinatorCandidate> = db
        .cluster
        .processes
        .values()
        .filter(|p| !p.excluded && !p.under_maintenance)
        .filter_map(|p| {
            let id = p.locality.instance_id.clone()?;
            if ours.contains(&id) {
                return None;
            }
            let class = p.class_type?;
            let (_, number) = crate::controller::model::pod::parse_any_process_group_id(&id)?;
            let reported = p.address.clone()?;
            let address = match (&p.locality.dns_name, dns) {
                (Some(name), true) => {
                    ProcessAddress::checked(name, reported.port, reported.tls).ok()?
                }
                _ => reported,
            };
            Some(CoordinatorCandidate {
                current: current.contains(&address.to_string()),
                process_group_id: id,
                class,
                number,
                zone: p.locality.zoneid.clone()?,
                dc: p.locality.dcid.clone(),
                address,
                hall: p.locality.data_hall.clone(),
            })
        })
        .collect();
    // One candidate per process group (its first process).
    candidates.sort_by(|a, b| {
        a.process_group_id
            .cmp(&b.process_group_id)
            .then(a.address.port.cmp(&b.address.port))
    });
    candidates.dedup_by(|a, b| a.process_group_id == b.process_group_id);
    candidates
}

/// The address a coordinator on `pod_name` is written with ([`coordinator_host`] and
/// [`address_on_host`]; the candidates call them apart, to skip a host first).
#[cfg(test)]
pub(crate) fn coordinator_address(
    cluster: &FoundationDBCluster,
    pod_name: &str,
    pod_ip: Option<&str>,
) -> Option<ProcessAddress> {
    address_on_host(cluster, &coordinator_host(cluster, pod_name, pod_ip)?)
}

/// The host a coordinator on `pod_name` is written with, not yet checked: its DNS name
/// through the headless Service with `useDNSInClusterFile` (the default), else its pod
/// IP (`None` while the pod has none).
pub(crate) fn coordinator_host<'a>(
    cluster: &FoundationDBCluster,
    pod_name: &str,
    pod_ip: Option<&'a str>,
) -> Option<Cow<'a, str>> {
    match dns_suffix(cluster) {
        Some(suffix) => Some(Cow::Owned(format!("{pod_name}{suffix}"))),
        None => pod_ip.filter(|ip| !ip.is_empty()).map(Cow::Borrowed),
    }
}

/// What follows the pod's name in a [`coordinator_host`] with `useDNSInClusterFile`
/// (`.<cluster>.<namespace>.svc.<domain>`, through the headless Service); `None` when
/// coordinators are written by IP.
pub(crate) fn dns_suffix(cluster: &FoundationDBCluster) -> Option<String> {
    cluster.spec.routing.use_dns_in_cluster_file().then(|| {
        format!(
            ".{}.{}.svc.{}",
            cluster.metadata.name.as_deref().unwrap_or_default(),
            cluster.metadata.namespace.as_deref().unwrap_or_default(),
            cluster.spec.dns_domain()
        )
    })
}

/// The coordinator address on `host` (a [`coordinator_host`]).
pub(crate) fn address_on_host(cluster: &FoundationDBCluster, host: &str) -> Option<ProcessAddress> {
    let tls = cluster.spec.tls_enabled();
    // A host that is not a DNS name (a hostile `routing.dnsDomain`, refused at
    // validation) gives no address rather than a coordinators command it could break.
    ProcessAddress::checked(host, first_process_port(tls), tls).ok()
}

#[cfg(test)]
mod dc_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: &str, class: ProcessClass, number: u32, zone: &str) -> CoordinatorCandidate {
        CoordinatorCandidate {
            process_group_id: id.to_owned(),
            class,
            number,
            zone: zone.to_owned(),
            dc: None,
            address: ProcessAddress::new(format!("10.0.0.{number}"), 4501),
            current: false,
            hall: None,
        }
    }

    fn defaults() -> Vec<CoordinatorSelectionSetting> {
        fdb_shared::api::FoundationDBClusterSpec::default().coordinator_selection()
    }

    #[test]
    fn several_datacenters_get_a_third_of_nine_each() {
        let mut candidates = Vec::new();
        for (dc, count) in [("dc1", 5), ("dc2", 5), ("dc3", 3)] {
            for n in 1..=count {
                let mut c = candidate(
                    &format!("{dc}-log-{n}"),
                    ProcessClass::Log,
                    n,
                    &format!("{dc}-z{n}"),
                );
                c.dc = Some(dc.to_owned());
                candidates.push(c);
            }
        }
        assert_eq!(per_dc_limit(&candidates, 9), Some(3));
        let chosen = select_coordinators(&candidates, &defaults(), 9).unwrap();
        for dc in ["dc1", "dc2", "dc3"] {
            let here = chosen
                .iter()
                .filter(|c| c.dc.as_deref() == Some(dc))
                .count();
            assert_eq!(here, 3, "{dc}: {chosen:?}");
        }
        // Without the third datacenter, 9 cannot be spread: distinct zones alone (5 + 4).
        candidates.retain(|c| c.dc.as_deref() != Some("dc3"));
        let chosen = select_coordinators(&candidates, &defaults(), 9).unwrap();
        assert_eq!(chosen.len(), 9);
        candidates.truncate(8);
        assert!(select_coordinators(&candidates, &defaults(), 9).is_err());
    }

    #[test]
    fn logs_first_in_distinct_zones() {
        let candidates = [
            candidate("storage-1", ProcessClass::Storage, 1, "z1"),
            candidate("log-1", ProcessClass::Log, 1, "z1"),
            candidate("log-2", ProcessClass::Log, 2, "z1"),
            candidate("log-3", ProcessClass::Log, 3, "z2"),
            candidate("storage-2", ProcessClass::Storage, 2, "z3"),
            candidate("stateless-1", ProcessClass::Stateless, 1, "z4"),
        ];
        let chosen = select_coordinators(&candidates, &defaults(), 3).unwrap();
        let ids: Vec<_> = chosen.iter().map(|c| c.process_group_id.as_str()).collect();
        assert_eq!(ids, ["log-1", "log-3", "storage-2"]);
        let err = select_coordinators(&candidates, &defaults(), 4).unwrap_err();
        assert_eq!(
            err,
            NotEnoughZones {
                wanted: 4,
                zones: 3
            }
        );
    }

    #[test]
    fn custom_priorities_and_current_coordinators_win_ties() {
        let settings = vec![
            CoordinatorSelectionSetting {
                process_class: ProcessClass::Storage,
                priority: 5,
            },
            CoordinatorSelectionSetting {
                process_class: ProcessClass::Log,
                priority: 0,
            },
        ];
        let mut current = candidate("storage-2", ProcessClass::Storage, 2, "z2");
        current.current = true;
        let candidates = [
            candidate("log-1", ProcessClass::Log, 1, "z9"),
            candidate("storage-1", ProcessClass::Storage, 1, "z1"),
            current,
        ];
        let chosen = select_coordinators(&candidates, &settings, 2).unwrap();
        let ids: Vec<_> = chosen.iter().map(|c| c.process_group_id.as_str()).collect();
        assert_eq!(ids, ["storage-2", "storage-1"]);
    }

    #[test]
    fn three_data_hall_coordinators_three_per_hall_and_only_with_a_hall() {
        // 12 log groups in 12 zones: 6 in hall a, 3 in b, 2 in c, 1 without a hall.
        let halls = ["a", "a", "a", "a", "a", "a", "b", "b", "b", "c", "c", ""];
        let candidates: Vec<_> = halls
            .iter()
            .enumerate()
            .map(|(i, hall)| {
                let n = u32::try_from(i + 1).unwrap();
                let mut c = candidate(&format!("log-{n}"), ProcessClass::Log, n, &format!("z{n}"));
                c.hall = (!hall.is_empty()).then(|| (*hall).to_owned());
                c
            })
            .collect();
        // Only 2 in hall c: 9 cannot be placed 3 per hall.
        let err = select_coordinators_spread(&candidates, &defaults(), 9, true, 0).unwrap_err();
        assert!(
            err.to_string()
                .contains("allow only 8 (3 data halls; 1 groups"),
            "halls a, b, c exist but c holds two zones: {err}"
        );
        let mut more = candidates.clone();
        let mut extra = candidate("log-13", ProcessClass::Log, 13, "z13");
        extra.hall = Some("c".to_owned());
        more.push(extra);
        let chosen = select_coordinators_spread(&more, &defaults(), 9, true, 0).unwrap();
        let mut per_hall = BTreeMap::new();
        for c in &chosen {
            *per_hall.entry(c.hall.clone().unwrap()).or_insert(0) += 1;
        }
        assert_eq!(
            per_hall,
            BTreeMap::from([("a".into(), 3), ("b".into(), 3), ("c".into(), 3)])
        );
        // Two halls only: named as such.
        let two: Vec<_> = more
            .iter()
            .filter(|c| c.hall.as_deref() != Some("c"))
            .cloned()
            .collect();
        let err = select_coordinators_spread(&two, &defaults(), 9, true, 0).unwrap_err();
        assert!(
            err.to_string().contains("allow only 6 (2 data halls"),
            "{err}"
        );
        // Without by_hall, the zones alone decide (the first 9 by number).
        let plain = select_coordinators_spread(&more, &defaults(), 9, false, 0).unwrap();
        assert_eq!(plain.len(), 9);
        assert_eq!(
            plain
                .iter()
                .filter(|c| c.hall.as_deref() == Some("a"))
                .count(),
            6
        );
    }

    #[test]
    fn dns_or_ip_addresses() {
        let mut cluster: FoundationDBCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample", "namespace": "prod"},
            "spec": {"version": "7.1.57"}
        }))
        .unwrap();
        let address = coordinator_address(&cluster, "sample-log-1", None).unwrap();
        assert_eq!(
            address.to_string(),
            "sample-log-1.sample.prod.svc.cluster.local:4501"
        );
        cluster.spec.routing.use_dns_in_cluster_file = Some(false);
        assert_eq!(coordinator_address(&cluster, "sample-log-1", None), None);
        let address = coordinator_address(&cluster, "sample-log-1", Some("10.1.2.3")).unwrap();
        assert_eq!(address.to_string(), "10.1.2.3:4501");
    }
}
