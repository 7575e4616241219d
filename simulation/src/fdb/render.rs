//! `status json` rendered from the simulated state in FoundationDB's format (same keys
//! and nesting as the real captures), so the operator parses it with the same model.

use serde_json::{Map, Value, json};

use fdb_shared::api::ProcessClass;

use super::availability::{Health, assess, fault_tolerance};
use super::processes::{SimProcess, locality_of, protocol_hex};
use super::records::Recovery;
use super::render_configuration::render_configuration;
use super::render_metrics::{disk_total_bytes, machines, process_metrics};
use super::state::State;

/// The roles a process plays right now.
pub(crate) fn roles_of(state: &State, process: &SimProcess) -> Vec<&'static str> {
    let mut roles = Vec::new();
    if state.is_coordinator(process) {
        roles.push("coordinator");
    }
    if state.configuration.is_some()
        && process.launch.class == ProcessClass::Storage
        && (state.held(&process.disk) > 0 || !state.is_excluded(process))
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
            if role == "storage" && !state.metrics_missing_of(process) {
                let bytes = (state.held(&process.disk) as f64 * state.shard_bytes()).round() as i64;
                entry["stored_bytes"] = json!(bytes);
                entry["kvstore_used_bytes"] = json!(bytes);
                // The storage server's view of its volume (fdbserver/Status.actor.cpp
                // reports the StorageMetrics event's KvstoreBytes*), which fdbcli's
                // `exclude` sums up for its free-space check (`fdb/exclude_check.rs`).
                let total = disk_total_bytes(state);
                let free = (total - bytes).max(0);
                entry["kvstore_free_bytes"] = json!(free);
                entry["kvstore_available_bytes"] = json!(free);
                entry["kvstore_total_bytes"] = json!(total);
                // A read costs about one I/O: a slow disk shows in the read latencies.
                let seconds = io_latency_ms(state, process).unwrap_or(1) as f64 / 1000.0;
                entry["read_latency_statistics"] =
                    json!({"count": 100, "median": seconds, "p99": seconds * 1.5});
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
        "messages": process_messages(state, process),
        "roles": roles,
        "run_loop_busy": 0.05,
        "uptime_seconds": (now - process.started_unix).max(0) as f64,
        "version": process.launch.version.to_string(),
    });
    if let Value::Object(map) = &mut entry {
        map.extend(process_metrics(state, process));
    }
    if under_maintenance {
        entry["under_maintenance"] = json!(true);
    }
    // FoundationDB marks a process whose disk is slow as degraded.
    if io_latency_ms(state, process).is_some() {
        entry["degraded"] = json!(true);
    }
    entry
}

/// The I/O latency of the process's disk under the `ioLatency` fault.
fn io_latency_ms(state: &State, process: &SimProcess) -> Option<u64> {
    process
        .instance_id()
        .and_then(|id| state.io_latency.get(id).copied())
}

/// `io_error` for the groups under the `ioError` fault.
fn process_messages(state: &State, process: &SimProcess) -> Value {
    let io_error = process
        .instance_id()
        .is_some_and(|id| state.io_errors.contains(id));
    if io_error {
        json!([{
            "name": "io_error",
            "description": "Disk i/o operation failed.",
            "raw_log_message": "\"Severity\"=\"40\", \"Type\"=\"IOError\"",
        }])
    } else {
        json!([])
    }
}

/// A small deterministic hash for role IDs.
fn fxhash(text: &str, salt: usize) -> u64 {
    text.bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64 ^ salt as u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
}

fn render_clients(state: &State) -> Value {
    let mut by_version: std::collections::BTreeMap<String, Vec<&fdb_operator::fdb::ClientInfo>> =
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

/// `cluster.logs`: the current log generation and its interfaces.
fn render_logs(state: &State) -> Vec<Value> {
    let replicas = state.replicas();
    state
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
        .collect()
}

/// `cluster.qos`: an unsaturated database.
fn render_qos() -> Value {
    json!({
        "worst_queue_bytes_log_server": 0,
        "worst_queue_bytes_storage_server": 0,
        "limiting_queue_bytes_storage_server": 0,
        "worst_data_lag_storage_server": {"seconds": 0.0, "versions": 0},
        "limiting_data_lag_storage_server": {"seconds": 0.0, "versions": 0},
        "worst_durability_lag_storage_server": {"seconds": 5.0, "versions": 5_000_000},
        "limiting_durability_lag_storage_server": {"seconds": 5.0, "versions": 5_000_000},
        "performance_limited_by": {"name": "workload", "description": "The database is not being saturated by the workload."},
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
    let mut members = Vec::new();
    for process in state.processes.values().filter(|p| p.running) {
        if state.is_member(process, version.as_ref()) {
            if state.hidden_from_status(process) {
                // The cluster controller lost it: it serves, status does not list it.
                members.push(process);
                continue;
            }
            processes.insert(
                process.process_id.clone(),
                render_process(state, process, now),
            );
            members.push(process);
        } else {
            incompatible.push(json!(process.launch.address.to_string()));
        }
    }
    let (tolerance_data, tolerance_availability) = fault_tolerance(state, &health);
    let mut messages = Vec::new();
    if !health.configured {
        messages.push(json!({"name": "unreadable_configuration", "description": "Unable to read database configuration."}));
    }
    let logs = render_logs(state);
    let data = render_data(state, &health);
    let mut cluster = json!({
        "processes": processes,
        "data": data,
        "full_replication": health.full_replication,
        "logs": logs,
        "qos": render_qos(),
        "fault_tolerance": {
            "max_zone_failures_without_losing_availability": tolerance_availability,
            "max_zone_failures_without_losing_data": tolerance_data,
        },
        "recovery_state": render_recovery_state(state, now),
        "bounce_impact": {"can_clean_bounce": health.available},
        "messages": messages,
        "clients": render_clients(state),
        "incompatible_connections": incompatible,
        "connection_string": state.connection_string.as_ref().map(ToString::to_string),
        "layers": {"_valid": true, "backup": state.backups.layer_json()},
        "generation": state.generation,
        "protocol_version": version.as_ref().map(protocol_hex),
        "database_available": health.available,
        "degraded_processes": state
            .processes
            .values()
            .filter(|p| io_latency_ms(state, p).is_some())
            .count(),
        "machines": machines(state, members.iter().copied()),
        "datacenter_lag": {"seconds": 0.0, "versions": 0},
        "active_tss_count": 0,
        "cluster_controller_timestamp": now,
    });
    let configuration = render_configuration(state, version.as_ref());
    if let Value::Object(map) = &mut cluster {
        if !configuration.is_null() {
            map.insert("configuration".to_owned(), configuration);
        }
        // Read through a transaction: only while the database is available
        // (`lockedStatusFetcher` in fdbserver/Status.actor.cpp). The operator's lock key
        // is not FoundationDB's `lock` of the database.
        if health.available {
            map.insert("database_lock_state".to_owned(), json!({"locked": false}));
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

/// `cluster.data`: the state of the shards and their movement.
fn render_data(state: &State, health: &Health) -> Value {
    let shard_bytes = state.shard_bytes();
    let (shards, live_shards, replicas) = state.data.as_ref().map_or((0, 0, 0), |data| {
        let live = data.shards.iter().filter(|s| !s.lost).count();
        (data.shards.len(), live, data.total_replicas())
    });
    let data_state = json!({
        "healthy": health.data.healthy,
        "name": health.data.name,
        "description": health.data.description,
        "min_replicas_remaining": health.data.min_replicas_remaining,
    });
    let in_flight = health.in_flight_bytes.round() as i64;
    json!({
        "state": data_state,
        "team_trackers": [{
            "primary": true,
            "in_flight_bytes": in_flight,
            "unhealthy_servers": state.summary.silent_disks,
            "state": {
                "healthy": health.teams.healthy,
                "name": health.teams.name,
                "description": health.teams.description,
                "min_replicas_remaining": health.teams.min_replicas_remaining,
            },
        }],
        "moving_data": {
            "in_flight_bytes": in_flight,
            "in_queue_bytes": health.in_queue_bytes.round() as i64,
            "highest_priority": health.data.highest_priority,
            "total_written_bytes": state.movement.moved_bytes.round() as i64,
        },
        "total_kv_size_bytes": (live_shards as f64 * shard_bytes).round() as i64,
        "total_disk_used_bytes": (replicas as f64 * shard_bytes).round() as i64,
        "partitions_count": shards,
        "average_partition_size_bytes": shard_bytes.round() as i64,
    })
}

/// `cluster.recovery_state`.
fn render_recovery_state(state: &State, now: i64) -> Value {
    let (name, description) = match &state.recovery {
        Recovery::Recovered => ("fully_recovered", "Recovery complete."),
        Recovery::Recovering { .. } => (
            "initializing_transaction_servers",
            "Recovery is in progress: initializing the new transaction servers.",
        ),
        Recovery::Waiting { .. } => (
            "recruiting_transaction_servers",
            "Recruiting new transaction servers.",
        ),
        Recovery::Down => (
            "configuration_missing",
            "There appears to be no database configuration.",
        ),
    };
    let since = if state.recovery == Recovery::Recovered {
        (now - state.last_recovered_unix).max(0) as f64
    } else {
        0.0
    };
    json!({
        "name": name,
        "description": description,
        "seconds_since_last_recovered": since,
        "active_generations": 1,
    })
}
