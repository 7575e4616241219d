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

use super::exec::SimulatedExec;
use crate::fdb::SimulatedFdb;

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

impl SimulatedExec {
    /// The admin interface and database `pod`'s containers reach.
    pub(super) fn database_of(&self, pod: &Value) -> (&Arc<dyn AdminClient>, &SimulatedFdb) {
        let description = (!self.fleet.is_empty())
            .then(|| self.cluster_file_description(pod))
            .flatten();
        self.fleet
            .iter()
            .find(|database| description.as_deref() == Some(database.description.as_str()))
            .map_or((&self.admin, &self.fdb), |database| {
                (&database.admin, &database.fdb)
            })
    }

    /// The description of the connection string in the pod's cluster file
    /// (`FDB_CLUSTER_FILE` of its containers, else fdbcli's default place), as its main
    /// container reads it.
    fn cluster_file_description(&self, pod: &Value) -> Option<String> {
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
        let text = self.container_files.read(uid, path).ok().flatten()?;
        text.trim()
            .parse::<ConnectionString>()
            .ok()
            .map(|connection| connection.description)
    }
}
