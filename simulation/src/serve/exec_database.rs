//! Which database a served container's commands reach (`fdbcli`, `pkill fdbserver`):
//! the one its cluster file names, as a real container's fdbcli connects through
//! `FDB_CLUSTER_FILE` (the operator sets it on the main container,
//! `operator/src/controller/model/pod/env.rs`). In a world with a fleet each member's
//! pods reach their own database; a container whose cluster file cannot be read, or
//! names no fleet member, reaches the first cluster's (the rule the world's fdbmonitors
//! follow, `runner/databases.rs`).

use std::sync::Arc;

use fdb_operator::fdb::AdminClient;
use fdb_shared::connection_string::ConnectionString;
use serde_json::Value;

use crate::fdb::SimulatedFdb;
use crate::world::container_files::ContainerFiles;

/// Where a container's fdbcli finds its cluster file when `FDB_CLUSTER_FILE` is unset.
const DEFAULT_CLUSTER_FILE: &str = "/var/dynamic-conf/fdb.cluster";

/// A fleet member's database, as the served containers of that cluster reach it.
#[derive(Clone)]
pub struct ExecDatabase {
    /// The description of its connection string (what its pods' cluster files name).
    pub description: String,
    /// The admin interface its commands go through (recording them as the user's).
    pub admin: Arc<dyn AdminClient>,
    /// The database.
    pub fdb: SimulatedFdb,
}

impl std::fmt::Debug for ExecDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecDatabase")
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

/// The fleet member's database a pod reaches, if any (`None`: the first cluster's).
pub(super) fn member_database<'a>(
    fleet: &'a [ExecDatabase],
    files: &ContainerFiles,
    pod: &Value,
) -> Option<&'a ExecDatabase> {
    if fleet.is_empty() {
        return None;
    }
    let description = cluster_file_description(files, pod)?;
    fleet
        .iter()
        .find(|database| database.description == description)
}

/// The description of the connection string in the pod's cluster file
/// (`FDB_CLUSTER_FILE` of its containers, else fdbcli's default place), as its main
/// container reads it.
fn cluster_file_description(files: &ContainerFiles, pod: &Value) -> Option<String> {
    let uid = pod.pointer("/metadata/uid").and_then(Value::as_str)?;
    let path = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|container| container.get("env").and_then(Value::as_array))
        .flatten()
        .find(|var| var.get("name").and_then(Value::as_str) == Some("FDB_CLUSTER_FILE"))
        .and_then(|var| var.get("value").and_then(Value::as_str))
        .unwrap_or(DEFAULT_CLUSTER_FILE);
    let text = files.read(uid, path).ok().flatten()?;
    text.trim()
        .parse::<ConnectionString>()
        .ok()
        .map(|connection| connection.description)
}
