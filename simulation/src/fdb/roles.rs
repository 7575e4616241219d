//! Recruitment of the transaction system (master, cluster controller, logs, proxies,
//! resolvers, ratekeeper, data distributor); `recovery.rs` decides when.

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::ProcessClass;

use super::processes::SimProcess;
use super::records::{RoleAssignment, TransactionSystem};
use super::regions::{self, dc_of};
use super::state::State;

/// Log replicas of three_data_hall (FoundationDB's `log_replicas` in that mode).
const HALL_LOG_REPLICAS: usize = 4;

/// The `data_hall` locality of a process.
fn hall_of(process: &SimProcess) -> Option<&String> {
    process.launch.locality.get("data_hall")
}

/// Stateless role counts from the configuration (FoundationDB's defaults otherwise).
fn stateless_roles(state: &State) -> Vec<&'static str> {
    let configuration = state.configuration.clone().unwrap_or_default();
    let positive = |value: Option<i32>, default: usize| {
        value
            .filter(|v| *v > 0)
            .map_or(default, |v| usize::try_from(v).unwrap_or(default))
    };
    let commit_proxies = positive(configuration.commit_proxies, 2);
    let grv_proxies = positive(configuration.grv_proxies, 1);
    let resolvers = positive(configuration.resolvers, 1);
    let mut roles = vec!["cluster_controller", "master"];
    roles.extend(std::iter::repeat_n("commit_proxy", commit_proxies));
    roles.extend(std::iter::repeat_n("grv_proxy", grv_proxies));
    roles.extend(std::iter::repeat_n("resolver", resolvers));
    roles.extend(["ratekeeper", "data_distributor"]);
    roles
}

/// How well a process class fits a role: lower is better; `None` cannot host it.
fn fitness(role: &str, class: ProcessClass) -> Option<u8> {
    use ProcessClass as C;
    let dedicated = match role {
        "cluster_controller" => C::ClusterController,
        "master" => C::Master,
        "commit_proxy" => C::CommitProxy,
        "grv_proxy" => C::GrvProxy,
        "resolver" => C::Resolution,
        "ratekeeper" => C::Ratekeeper,
        "data_distributor" => C::DataDistributor,
        "log" => {
            return match class {
                C::Log => Some(0),
                C::Transaction => Some(1),
                C::Unset => Some(2),
                _ => None,
            };
        }
        _ => return None,
    };
    Some(match class {
        c if c == dedicated => 0,
        C::Proxy if matches!(role, "commit_proxy" | "grv_proxy") => 0,
        C::Stateless => 1,
        C::Unset => 2,
        C::Transaction | C::Log => 3,
        C::Storage => 4,
        _ => return None,
    })
}

/// The datacenter a recruitment now would make the primary (the main datacenter of the
/// highest priority whose live processes can hold the logs), `None` without regions.
pub(crate) fn preferred_primary(state: &State) -> Option<String> {
    let all: Vec<&SimProcess> = state.eligible();
    regions::layout(state, |dc| log_zones_in(&all, Some(dc)) >= state.replicas()).map(|l| l.primary)
}

/// Recruits a transaction system from the eligible processes; `None` when not enough
/// logs in distinct zones (in three_data_hall: in two zones of each of two data halls,
/// processes without a `data_hall` locality left out) or no host for a stateless role.
pub(crate) fn recruit(state: &State) -> Option<TransactionSystem> {
    let all: Vec<&SimProcess> = state.eligible();
    // With regions, the primary datacenter hosts the logs and the stateless roles.
    let layout = regions::layout(state, |dc| log_zones_in(&all, Some(dc)) >= state.replicas());
    let eligible: Vec<&SimProcess> = all
        .iter()
        .copied()
        .filter(|p| {
            layout
                .as_ref()
                .is_none_or(|l| dc_of(p) == Some(l.primary.as_str()))
        })
        .collect();
    let mut load: BTreeMap<&ProcessAddress, usize> = BTreeMap::new();
    let mut members = Vec::new();

    let by_hall = state.by_data_hall();
    let configured_logs = state
        .configuration
        .as_ref()
        .and_then(|c| c.logs)
        .filter(|v| *v > 0)
        .map_or(3, |v| usize::try_from(v).unwrap_or(3));
    // three_data_hall's log policy: 4 replicas, 2 zones in each of 2 data halls.
    let wanted_logs = if by_hall {
        configured_logs.max(HALL_LOG_REPLICAS)
    } else {
        configured_logs
    };
    let chosen = choose_logs(state, &eligible, by_hall, wanted_logs)?;
    for p in chosen {
        *load.entry(&p.launch.address).or_insert(0) += 1;
        members.push(RoleAssignment {
            role: "log",
            address: p.launch.address.clone(),
            started_unix: p.started_unix,
        });
    }

    for role in stateless_roles(state) {
        let host = eligible
            .iter()
            .filter_map(|p| fitness(role, p.launch.class).map(|f| (f, p)))
            .min_by_key(|(f, p)| {
                (
                    *f,
                    load.get(&p.launch.address).copied().unwrap_or(0),
                    p.launch.address.clone(),
                )
            })
            .map(|(_, p)| *p)?;
        *load.entry(&host.launch.address).or_insert(0) += 1;
        members.push(RoleAssignment {
            role,
            address: host.launch.address.clone(),
            started_unix: host.started_unix,
        });
    }
    if let Some(layout) = &layout {
        region_roles(state, &all, layout, wanted_logs, &mut members);
    }
    Some(TransactionSystem { members })
}

/// The logs: distinct zones first (in three_data_hall, two zones in each of two halls
/// first), then filled up; `None` when the policy cannot be met.
fn choose_logs<'a>(
    state: &State,
    eligible: &[&'a SimProcess],
    by_hall: bool,
    wanted_logs: usize,
) -> Option<Vec<&'a SimProcess>> {
    let mut log_candidates: Vec<&SimProcess> = eligible
        .iter()
        .copied()
        .filter(|p| fitness("log", p.launch.class).is_some())
        // A process without a data hall cannot be part of a three_data_hall log team.
        .filter(|p| !by_hall || hall_of(p).is_some())
        .collect();
    log_candidates.sort_by_key(|p| (fitness("log", p.launch.class), p.launch.address.clone()));
    let mut used_zones = BTreeSet::new();
    let mut chosen: Vec<&SimProcess> = Vec::new();
    if by_hall {
        for p in hall_pairs(&log_candidates) {
            used_zones.insert(p.zone());
            chosen.push(p);
        }
    }
    // Distinct zones first, then fill up.
    for p in &log_candidates {
        if chosen.len() < wanted_logs
            && !chosen.iter().any(|c| c.launch.address == p.launch.address)
            && used_zones.insert(p.zone())
        {
            chosen.push(p);
        }
    }
    for p in &log_candidates {
        if chosen.len() < wanted_logs
            && !chosen.iter().any(|c| c.launch.address == p.launch.address)
        {
            chosen.push(p);
        }
    }
    let satisfied = if by_hall {
        // At least two halls with logs in two distinct zones each.
        let mut zones_per_hall: BTreeMap<&String, BTreeSet<String>> = BTreeMap::new();
        for p in &chosen {
            if let Some(hall) = hall_of(p) {
                zones_per_hall.entry(hall).or_default().insert(p.zone());
            }
        }
        zones_per_hall
            .values()
            .filter(|zones| zones.len() >= 2)
            .count()
            >= 2
    } else {
        used_zones.len() >= state.replicas()
    };
    satisfied.then_some(chosen)
}

/// three_data_hall's core: the two best halls with logs in two zones each.
fn hall_pairs<'a>(log_candidates: &[&'a SimProcess]) -> Vec<&'a SimProcess> {
    let mut per_hall: BTreeMap<&String, Vec<&SimProcess>> = BTreeMap::new();
    for p in log_candidates {
        if let Some(hall) = hall_of(p) {
            per_hall.entry(hall).or_default().push(p);
        }
    }
    let mut pairs: Vec<Vec<&SimProcess>> = per_hall
        .into_values()
        .filter_map(|members| {
            let mut zones = BTreeSet::new();
            let pair: Vec<&SimProcess> = members
                .into_iter()
                .filter(|p| zones.insert(p.zone()))
                .take(2)
                .collect();
            (pair.len() == 2).then_some(pair)
        })
        .collect();
    pairs.sort_by_key(|pair| {
        pair.iter()
            .map(|p| fitness("log", p.launch.class).unwrap_or(u8::MAX))
            .max()
    });
    pairs.into_iter().take(2).flatten().collect()
}

/// Distinct zones of the eligible log-capable processes (in datacenter `dc`, when set).
fn log_zones_in(eligible: &[&SimProcess], dc: Option<&str>) -> usize {
    eligible
        .iter()
        .filter(|p| regions::log_capable(p.launch.class) && (dc.is_none() || dc_of(p) == dc))
        .map(|p| p.zone())
        .collect::<BTreeSet<_>>()
        .len()
}

/// The roles outside the primary datacenter: logs in the satellites, and with two usable
/// regions logs and log routers in the remote datacenter (the routers by their own
/// fitness, beside the remote logs when needed: [`routers_in`]). A datacenter without
/// processes for them gets none (the database runs degraded rather than stopping).
fn region_roles(
    state: &State,
    eligible: &[&SimProcess],
    layout: &regions::Layout,
    wanted_logs: usize,
    members: &mut Vec<RoleAssignment>,
) {
    let configuration = state.configuration.clone().unwrap_or_default();
    // Logs: one a process, on log-capable classes.
    let mut pick = |dcs: &[String], wanted: usize| {
        let mut hosts: Vec<&SimProcess> = eligible
            .iter()
            .copied()
            .filter(|p| dc_of(p).is_some_and(|dc| dcs.iter().any(|d| d == dc)))
            .filter(|p| regions::log_capable(p.launch.class))
            .filter(|p| !members.iter().any(|m| m.address == p.launch.address))
            .collect();
        // The preferred datacenter first, then log classes, then distinct zones.
        hosts.sort_by_key(|p| {
            (
                dcs.iter().position(|d| Some(d.as_str()) == dc_of(p)),
                fitness("log", p.launch.class),
                p.launch.address.clone(),
            )
        });
        let mut zones = BTreeSet::new();
        let (first, rest): (Vec<&SimProcess>, Vec<&SimProcess>) =
            hosts.into_iter().partition(|p| zones.insert(p.zone()));
        for p in first.into_iter().chain(rest).take(wanted) {
            members.push(RoleAssignment {
                role: "log",
                address: p.launch.address.clone(),
                started_unix: p.started_unix,
            });
        }
    };
    pick(&layout.satellites, layout.satellite_logs);
    if let Some(remote) = &layout.remote {
        let remote_logs = regions::count(configuration.remote_logs, wanted_logs);
        let routers = regions::count(configuration.log_routers, remote_logs);
        pick(std::slice::from_ref(remote), remote_logs);
        for p in routers_in(eligible, remote, routers, members) {
            members.push(RoleAssignment {
                role: "router",
                address: p.launch.address.clone(),
                started_unix: p.started_unix,
            });
        }
    }
}

/// How well a process class fits a log router, as FoundationDB's
/// `ProcessClass::machineClassFitness(LogRouter)` (fdbrpc/Locality.cpp): `router` best,
/// `stateless` good, unset, `transaction` okay, every other class (`log` and `storage`
/// alike) worst; `None` for the classes never assigned (coordinator, tester).
fn router_fitness(class: ProcessClass) -> Option<u8> {
    use ProcessClass as C;
    match class {
        C::Router => Some(0),
        C::Stateless => Some(1),
        C::Unset => Some(2),
        C::Transaction => Some(3),
        C::Coordinator | C::Test | C::Tester => None,
        _ => Some(4),
    }
}

/// The log routers of datacenter `dc`, as the cluster controller's
/// `getWorkersForRoleInDatacenter`: the processes grouped by fitness, then by how many
/// roles this recruitment gave them already (the remote logs), the groups taken in that
/// order; a process may hold a router beside other roles (FoundationDB colocates them
/// when there are fewer processes than routers). Within a group FoundationDB picks at
/// random; here by address.
fn routers_in<'a>(
    eligible: &[&'a SimProcess],
    dc: &str,
    wanted: usize,
    members: &[RoleAssignment],
) -> Vec<&'a SimProcess> {
    let roles_of = |p: &SimProcess| {
        members
            .iter()
            .filter(|m| m.address == p.launch.address)
            .count()
    };
    let mut hosts: Vec<(u8, usize, &SimProcess)> = eligible
        .iter()
        .copied()
        .filter(|p| dc_of(p) == Some(dc))
        .filter_map(|p| router_fitness(p.launch.class).map(|f| (f, roles_of(p), p)))
        .collect();
    hosts.sort_by_key(|(fitness, roles, p)| (*fitness, *roles, p.launch.address.clone()));
    hosts.into_iter().map(|(_, _, p)| p).take(wanted).collect()
}
