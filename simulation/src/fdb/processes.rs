//! Simulated fdbserver processes as the simulated fdbmonitor starts them.

use std::collections::BTreeMap;

use fdb_shared::FdbVersion;
use fdb_shared::address::ProcessAddress;
use fdb_shared::api::ProcessClass;
use fdb_shared::status_json::{ProcessLocality, ProcessStatus};

use fdb_operator::fdb::ExclusionTarget;

/// Names a disk (`disks.rs`): the launch's data identity (or its address when it has
/// none). Here, beside the launch that mounts it, so that disks build on processes.
pub(crate) type DiskKey = String;

/// What the simulated fdbmonitor starts: one fdbserver process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessLaunch {
    /// The public address.
    pub address: ProcessAddress,
    /// The other addresses it listens on (`public_address` lists them after the first,
    /// as while TLS is turned on or off): coordinators and clients reach it there too.
    pub other_addresses: Vec<ProcessAddress>,
    /// The command line (as [`fdb_shared::monitor_conf::parse`] derives it).
    pub command_line: String,
    /// The process class.
    pub class: ProcessClass,
    /// Localities without the `locality_` prefix: `instance_id`, `zoneid`, `machineid`,
    /// `dcid`, `data_hall`, `dns_name`, `process_id`.
    pub locality: BTreeMap<String, String>,
    /// The version of the binary the command points at.
    pub version: FdbVersion,
    /// The cluster file the process started with.
    pub cluster_file_contents: String,
    /// The pod running the process.
    pub pod: String,
    /// Which disk holds the process's data: `pvc:<namespace>/<claim>@<pvc uid>/<path>`
    /// (survives pod recreation, even at a new IP) or `emptyDir:<pod uid>/<volume>/<path>`
    /// (gone with the pod). Two launches with the same identity see the same data.
    pub data_identity: String,
    /// The content of `coordination-0.fdq` in the data directory when the process
    /// started, if there was one (`coordinated_state.rs`).
    pub coordination_file: Option<String>,
}

/// A process the simulated database knows: running, or stopped with its disk kept.
/// Its shard replicas belong to its disk (`disks.rs`), not to the process.
#[derive(Debug, Clone)]
pub(crate) struct SimProcess {
    pub launch: ProcessLaunch,
    /// FoundationDB's process ID (kept across restarts, like the one in the data dir).
    pub process_id: String,
    /// When the process last started (unix seconds).
    pub started_unix: i64,
    /// Whether the process is running.
    pub running: bool,
    /// The disk it mounts.
    pub disk: DiskKey,
}

impl SimProcess {
    pub fn zone(&self) -> String {
        zone_of(&self.launch)
    }

    pub fn instance_id(&self) -> Option<&str> {
        self.launch.locality.get("instance_id").map(String::as_str)
    }

    pub fn is_matched_by(&self, target: &ExclusionTarget) -> bool {
        target.matches(&matching_stub(&self.launch, &self.process_id))
    }

    /// Whether this process answers to `address`: one of its addresses (the public one or
    /// another it listens on), or its DNS name, with the same port and TLS flag
    /// (connection strings may use DNS names; a TLS peer cannot talk to a plain listener).
    pub fn answers_to(&self, address: &ProcessAddress) -> bool {
        let dns_name = self.launch.locality.get("dns_name");
        std::iter::once(&self.launch.address)
            .chain(&self.launch.other_addresses)
            .any(|own| {
                own.port == address.port
                    && own.tls == address.tls
                    && (own.host == address.host || dns_name == Some(&address.host))
            })
    }
}

/// The zone (`zoneid` locality) of a process, its host when it has none.
pub(crate) fn zone_of(launch: &ProcessLaunch) -> String {
    launch
        .locality
        .get("zoneid")
        .cloned()
        .unwrap_or_else(|| launch.address.host.clone())
}

/// A status entry with just the address and localities, for matching exclusion targets
/// exactly as the operator does against `status json`.
pub(crate) fn matching_stub(launch: &ProcessLaunch, process_id: &str) -> ProcessStatus {
    ProcessStatus {
        address: Some(launch.address.clone()),
        locality: locality_of(&launch.locality, process_id),
        ..ProcessStatus::default()
    }
}

/// The `locality` object of a process in `status json`.
pub(crate) fn locality_of(
    locality: &BTreeMap<String, String>,
    process_id: &str,
) -> ProcessLocality {
    let get = |key: &str| locality.get(key).cloned();
    let known = [
        "instance_id",
        "zoneid",
        "machineid",
        "dcid",
        "data_hall",
        "dns_name",
        "process_id",
    ];
    ProcessLocality {
        instance_id: get("instance_id"),
        zoneid: get("zoneid"),
        machineid: get("machineid"),
        dcid: get("dcid"),
        data_hall: get("data_hall"),
        dns_name: get("dns_name"),
        process_id: get("process_id"),
        processid: Some(process_id.to_owned()),
        other: locality
            .iter()
            .filter(|(key, _)| !known.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), serde_json::Value::String(value.clone())))
            .collect(),
    }
}

/// FoundationDB's protocol version of a release, in status json's hex form: 7.1 is
/// `fdb00b071010000` (`currentProtocolVersionValue`, flow/ProtocolVersion.h at
/// release-7.1), 7.3 `fdb00b073000000` and 7.4 `fdb00b074000000`
/// (`FDB_PV_DEFAULT_VERSION`, flow/ProtocolVersions.cmake); a release candidate gets a
/// protocol of its own.
pub(crate) fn protocol_hex(version: &FdbVersion) -> String {
    let revision = match (version.major, version.minor, version.release_candidate) {
        (_, _, Some(rc)) => rc % 10 + 2,
        (7, 1, None) => 1,
        _ => 0,
    };
    format!(
        "fdb00b0{}{}0{}0000",
        version.major % 10,
        version.minor % 10,
        revision
    )
}
