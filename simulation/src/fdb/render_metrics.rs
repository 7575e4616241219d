//! The metrics sections of `status json` that FoundationDB always reports for a process
//! and a machine (`processStatusFetcher` and `machineStatusFetcher` in
//! fdbserver/Status.actor.cpp): CPU, disk, memory and network of a quiet database, and
//! the disk's size and free space from the replicas it holds.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::processes::{SimProcess, locality_of};
use super::shards::GIB;
use super::state::State;

/// Bytes of memory each process may use (fdbserver's default `--memory` of 8 GiB).
const MEMORY_LIMIT_BYTES: i64 = 8 * 1024 * 1024 * 1024;

/// The size of a process's data volume: room for four times the data a storage
/// process starts with, at least 16 GiB.
pub(crate) fn disk_total_bytes(state: &State) -> i64 {
    (state.settings.storage_gib * 4.0 * GIB)
        .max(16.0 * GIB)
        .round() as i64
}

/// Bytes the process's disk holds: its replicas.
fn disk_used_bytes(state: &State, process: &SimProcess) -> i64 {
    (state.held(&process.disk) as f64 * state.shard_bytes()).round() as i64
}

fn rate() -> Value {
    json!({"hz": 0.0})
}

/// `cpu`, `disk`, `memory` and `network` of one process.
pub(crate) fn process_metrics(state: &State, process: &SimProcess) -> Map<String, Value> {
    let total = disk_total_bytes(state);
    let free = (total - disk_used_bytes(state, process)).max(0);
    let counter = json!({"hz": 0.0, "counter": 0, "sectors": 0});
    let mut metrics = Map::new();
    metrics.insert("cpu".to_owned(), json!({"usage_cores": 0.05}));
    metrics.insert(
        "disk".to_owned(),
        json!({
            "busy": 0.01,
            "free_bytes": free,
            "total_bytes": total,
            "reads": counter,
            "writes": counter,
        }),
    );
    metrics.insert(
        "memory".to_owned(),
        json!({
            "available_bytes": MEMORY_LIMIT_BYTES,
            "limit_bytes": MEMORY_LIMIT_BYTES,
            "unused_allocated_memory": 0,
            "used_bytes": 512 * 1024 * 1024,
            "rss_bytes": 512 * 1024 * 1024,
        }),
    );
    metrics.insert(
        "network".to_owned(),
        json!({
            "current_connections": state.processes.values().filter(|p| p.running).count(),
            "connections_established": rate(),
            "connections_closed": rate(),
            "connection_errors": rate(),
            "megabits_sent": rate(),
            "megabits_received": rate(),
            "tls_policy_failures": rate(),
        }),
    );
    metrics
}

/// `cluster.machines`: one entry per `machine_id` of the member processes.
pub(crate) fn machines<'a>(state: &State, members: impl Iterator<Item = &'a SimProcess>) -> Value {
    let mut by_machine: BTreeMap<String, Vec<&SimProcess>> = BTreeMap::new();
    for process in members {
        let machine = process
            .launch
            .locality
            .get("machineid")
            .cloned()
            .unwrap_or_else(|| process.launch.address.host.clone());
        by_machine.entry(machine).or_default().push(process);
    }
    let entries: Map<String, Value> = by_machine
        .into_iter()
        .filter_map(|(machine, processes)| {
            let first = processes.first()?;
            let locality =
                serde_json::to_value(locality_of(&first.launch.locality, &first.process_id))
                    .unwrap_or(Value::Null);
            let mut entry = json!({
                "address": first.launch.address.host.clone(),
                "machine_id": machine,
                "locality": locality,
                "excluded": processes.iter().all(|p| state.is_excluded(p)),
                "contributing_workers": processes.len(),
                "cpu": {"logical_core_utilization": 0.05},
                "memory": {
                    "free_bytes": MEMORY_LIMIT_BYTES,
                    "committed_bytes": 512 * 1024 * 1024,
                    "total_bytes": 2 * MEMORY_LIMIT_BYTES,
                },
                "network": {
                    "megabits_sent": rate(),
                    "megabits_received": rate(),
                    "tcp_segments_retransmitted": rate(),
                },
            });
            if let Some(dc) = first.launch.locality.get("dcid") {
                entry["datacenter_id"] = json!(dc);
            }
            Some((machine, entry))
        })
        .collect();
    Value::Object(entries)
}
