//! `status json` rendered from the simulated state in FoundationDB's format (same keys
//! and nesting as the real captures), so the operator parses it with the same model.

use serde_json::{Map, Value, json};

use fdb_shared::api::ProcessClass;

use super::availability::{Health, assess};
use super::processes::{SimProcess, locality_of, protocol_hex};
use super::state::State;
use crate::fdb::ExclusionTarget;

/// The roles a process plays right now.
pub(crate) fn roles_of(state: &State, process: &SimProcess) -> Vec<&'static str> {
    let mut roles = Vec::new();
    if state.is_coordinator(process) {
        roles.push("coordinator");
    }
    if state.configuration.is_some()
        && process.launch.class == ProcessClass::Storage
        && (process.data_bytes > 0.0 || !state.is_excluded(process))
    {
        roles.push("storage");
    }
    if let Some(system) = &state.transaction_system {
        roles.extend(system.roles_of(&process.launch.address));
    }
    roles
}

fn render_process(state: &State, process: &SimProcess, now: i64) -> Value {
    let roles: Vec<Value> = roles_of(state, process)
        .into_iter()
        .enumerate()
        .map(|(index, role)| {
            let mut entry = json!({
                "role": role,
                "id": format!("{:016x}", fxhash(&process.process_id, index)),
            });
            if role == "storage" {
                let bytes = process.data_bytes.round() as i64;
                entry["stored_bytes"] = json!(bytes);
                entry["kvstore_used_bytes"] = json!(bytes);
            }
            entry
        })
        .collect();
    let zone = process.zone();
    let under_maintenance = state
        .maintenance
        .as_ref()
        .is_some_and(|(maintenance_zone, _)| *maintenance_zone == zone);
    let mut entry = json!({
        "address": process.launch.address.to_string(),
        "class_source": "command_line",
        "class_type": process.launch.class.as_str(),
        "command_line": process.launch.command_line,
        "excluded": state.is_excluded(process),
        "fault_domain": zone,
        "locality": serde_json::to_value(locality_of(&process.launch.locality, &process.process_id))
            .unwrap_or(Value::Null),
        "machine_id": process.launch.locality.get("machineid").cloned().unwrap_or_default(),
        "messages": [],
        "roles": roles,
        "run_loop_busy": 0.05,
        "uptime_seconds": (now - process.started_unix).max(0) as f64,
        "version": process.launch.version.to_string(),
    });
    if under_maintenance {
        entry["under_maintenance"] = json!(true);
    }
    entry
}

/// A small deterministic hash for role IDs.
fn fxhash(text: &str, salt: usize) -> u64 {
    text.bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64 ^ salt as u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
}

fn render_configuration(state: &State) -> Value {
    let Some(configuration) = &state.configuration else {
        return Value::Null;
    };
    let mut value = serde_json::to_value(configuration).unwrap_or_else(|_| json!({}));
    let excluded: Vec<Value> = state
        .exclusions
        .iter()
        .map(|target| match target {
            ExclusionTarget::Locality(locality) => json!({ "locality": locality }),
            other => json!({ "address": other.to_string() }),
        })
        .collect();
    if let Value::Object(map) = &mut value {
        map.insert("excluded_servers".to_owned(), Value::Array(excluded));
        let coordinators = state
            .connection_string
            .as_ref()
            .map_or(0, |c| c.coordinators.len());
        map.insert("coordinators_count".to_owned(), json!(coordinators));
    }
    value
}

fn render_clients(state: &State) -> Value {
    let mut by_version: std::collections::BTreeMap<String, Vec<&crate::fdb::ClientInfo>> =
        std::collections::BTreeMap::new();
    for client in &state.clients {
        by_version
            .entry(client.version.to_string())
            .or_default()
            .push(client);
    }
    let supported: Vec<Value> = by_version
        .into_iter()
        .map(|(version, clients)| {
            let connected: Vec<Value> = clients
                .iter()
                .map(|c| json!({"address": c.address, "log_group": c.log_group}))
                .collect();
            json!({
                "client_version": version,
                "protocol_version": clients.first().map(|c| c.protocol_version.clone().unwrap_or_else(|| protocol_hex(&c.version))),
                "source_version": "0000000000000000000000000000000000000000",
                "count": connected.len(),
                "connected_clients": connected.clone(),
                "max_protocol_clients": connected,
            })
        })
        .collect();
    let distinct: std::collections::BTreeSet<&str> =
        state.clients.iter().map(|c| c.address.as_str()).collect();
    json!({ "count": distinct.len(), "supported_versions": supported })
}

fn render_client_section(state: &State, health: &Health, now: i64) -> Value {
    let coordinators: Vec<Value> = match &state.connection_string {
        Some(connection) => connection
            .coordinators
            .iter()
            .zip(state.coordinator_processes())
            .map(|(address, process)| {
                let mut entry =
                    json!({"address": address.to_string(), "reachable": process.is_some()});
                if let Some(process) = process {
                    entry["protocol"] =
                        json!(format!("0{}", protocol_hex(&process.launch.version)));
                }
                entry
            })
            .collect(),
        None => Vec::new(),
    };
    let mut messages = Vec::new();
    if !health.quorum {
        messages.push(json!({
            "name": "quorum_not_reachable",
            "description": "Unable to reach a quorum of coordinators."
        }));
    }
    json!({
        "cluster_file": {"path": "/var/dynamic-conf/fdb.cluster", "up_to_date": true},
        "coordinators": {"coordinators": coordinators, "quorum_reachable": health.quorum},
        "database_status": {"available": health.available, "healthy": health.healthy},
        "messages": messages,
        "timestamp": now,
    })
}

/// Renders the whole document.
pub(crate) fn render(state: &State, now: i64) -> Value {
    let health = assess(state);
    let client = render_client_section(state, &health, now);
    if !health.quorum {
        return json!({ "client": client, "cluster": { "messages": [], "database_available": false } });
    }
    let version = state.cluster_version();
    let mut processes = Map::new();
    let mut incompatible = Vec::new();
    for process in state.processes.values().filter(|p| p.running) {
        if state.is_member(process, version.as_ref()) {
            processes.insert(
                process.process_id.clone(),
                render_process(state, process, now),
            );
        } else {
            incompatible.push(json!(process.launch.address.to_string()));
        }
    }
    let replicas = state.replicas();
    let tolerance = if health.available {
        (health.min_replicas_remaining.saturating_sub(1)) as i64
    } else {
        0
    };
    let mut messages = Vec::new();
    if !health.configured {
        messages.push(json!({"name": "unreadable_configuration", "description": "Unable to read database configuration."}));
    }
    let logs: Vec<Value> = state
        .transaction_system
        .iter()
        .map(|system| {
            let interfaces: Vec<Value> = system
                .logs()
                .iter()
                .map(|address| json!({"address": address.to_string(), "healthy": true, "id": format!("{:016x}", fxhash(&address.to_string(), 7))}))
                .collect();
            json!({
                "current": true,
                "epoch": state.generation,
                "begin_version": 0,
                "log_fault_tolerance": replicas.saturating_sub(1),
                "log_replication_factor": replicas,
                "log_write_anti_quorum": 0,
                "possibly_losing_data": false,
                "log_interfaces": interfaces,
            })
        })
        .collect();
    let moving = health.moving_bytes.round() as i64;
    let data_state = json!({
        "healthy": health.healthy,
        "name": health.data_state,
        "min_replicas_remaining": health.min_replicas_remaining,
    });
    let total_bytes: f64 = state.processes.values().map(|p| p.data_bytes).sum();
    let mut cluster = json!({
        "processes": processes,
        "data": {
            "state": data_state.clone(),
            "team_trackers": [{"primary": true, "in_flight_bytes": moving, "unhealthy_servers": health.failed_storage_zones, "state": data_state}],
            "moving_data": {"in_flight_bytes": moving, "in_queue_bytes": 0, "highest_priority": if moving > 0 { 700 } else { 0 }, "total_written_bytes": 0},
            "total_kv_size_bytes": (total_bytes / replicas as f64).round() as i64,
            "total_disk_used_bytes": total_bytes.round() as i64,
            "partitions_count": 1,
        },
        "full_replication": health.full_replication,
        "logs": logs,
        "qos": {
            "worst_queue_bytes_log_server": 0,
            "worst_queue_bytes_storage_server": 0,
            "limiting_queue_bytes_storage_server": 0,
            "worst_data_lag_storage_server": {"seconds": 0.0, "versions": 0},
            "limiting_data_lag_storage_server": {"seconds": 0.0, "versions": 0},
            "worst_durability_lag_storage_server": {"seconds": 5.0, "versions": 5_000_000},
            "limiting_durability_lag_storage_server": {"seconds": 5.0, "versions": 5_000_000},
            "performance_limited_by": {"name": "workload", "description": "The database is not being saturated by the workload."},
        },
        "fault_tolerance": {
            "max_zone_failures_without_losing_availability": tolerance,
            "max_zone_failures_without_losing_data": tolerance,
        },
        "recovery_state": {
            "name": if health.recruited { "fully_recovered" } else { "recruiting_transaction_servers" },
            "description": if health.recruited { "Recovery complete." } else { "Recruiting new transaction servers." },
            "seconds_since_last_recovered": (now - state.last_recovery_unix).max(0) as f64,
            "active_generations": 1,
        },
        "bounce_impact": {"can_clean_bounce": health.available},
        "messages": messages,
        "clients": render_clients(state),
        "incompatible_connections": incompatible,
        "connection_string": state.connection_string.as_ref().map(ToString::to_string),
        "layers": {"_valid": true},
        "generation": state.generation,
        "protocol_version": version.as_ref().map(protocol_hex),
        "database_available": health.available,
    });
    let configuration = render_configuration(state);
    if let Value::Object(map) = &mut cluster {
        if !configuration.is_null() {
            map.insert("configuration".to_owned(), configuration);
        }
        if let Some((zone, until)) = &state.maintenance {
            map.insert("maintenance_zone".to_owned(), json!(zone));
            map.insert(
                "maintenance_seconds_remaining".to_owned(),
                json!((until - now).max(0) as f64),
            );
        }
    }
    json!({ "client": client, "cluster": cluster })
}
