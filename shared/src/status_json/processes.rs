//! `cluster.processes{}`: one entry per fdbserver process, keyed by process ID.

use std::collections::BTreeMap;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

use super::lenient_shapes::LenientString;
use super::{lenient, lenient_shapes};
use crate::address::ProcessAddress;
use crate::api::ProcessClass;
use crate::version::FdbVersion;

/// One process.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ProcessStatus {
    /// The process's public address.
    #[serde(default, deserialize_with = "lenient::from_str")]
    pub address: Option<ProcessAddress>,
    /// The process class; `None` when missing or unknown to this operator.
    #[serde(default, deserialize_with = "lenient::from_str")]
    pub class_type: Option<ProcessClass>,
    /// Where the class came from (`command_line`, `set_class`, ...).
    #[serde(default, deserialize_with = "lenient_shapes::string")]
    pub class_source: Option<String>,
    /// The full command line (`/usr/bin/fdbserver --class=storage ...`).
    #[serde(default, deserialize_with = "lenient_shapes::string")]
    pub command_line: Option<String>,
    /// Whether the process is excluded.
    #[serde(default, deserialize_with = "lenient_shapes::flag")]
    pub excluded: bool,
    /// Whether the process is in the current maintenance zone.
    #[serde(default, deserialize_with = "lenient_shapes::flag")]
    pub under_maintenance: bool,
    /// The process's localities.
    #[serde(default, deserialize_with = "lenient_shapes::object")]
    pub locality: ProcessLocality,
    /// The fdbserver version; `None` when missing or unparsable.
    #[serde(default, deserialize_with = "lenient::from_str")]
    pub version: Option<FdbVersion>,
    /// Seconds since the process started.
    #[serde(default, deserialize_with = "lenient_shapes::real")]
    pub uptime_seconds: Option<f64>,
    /// Share of time the run loop was busy (0..1).
    #[serde(default, deserialize_with = "lenient_shapes::real")]
    pub run_loop_busy: Option<f64>,
    /// The fault domain (zone).
    #[serde(default, deserialize_with = "lenient_shapes::string")]
    pub fault_domain: Option<String>,
    /// Roles the process plays.
    #[serde(default, deserialize_with = "lenient_shapes::objects")]
    pub roles: Vec<ProcessRole>,
    /// Messages about the process (e.g. `io_error`, `file_open_error`).
    #[serde(default, deserialize_with = "lenient_shapes::objects")]
    pub messages: Vec<ProcessMessage>,
}

impl ProcessStatus {
    /// Whether the process plays the role (`storage`, `log`, `master`, ...).
    pub fn has_role(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r.role == role)
    }

    /// Whether a message of that name is reported for the process.
    pub fn has_message(&self, name: &str) -> bool {
        self.messages.iter().any(|m| m.name == name)
    }

    /// Whether the status has only the address (an unreachable process: no command
    /// line, no version, no localities).
    pub fn is_unreachable_stub(&self) -> bool {
        self.command_line.is_none() && self.version.is_none() && self.uptime_seconds.is_none()
    }
}

/// `locality` of a process. The known keys are typed; others are kept. A known key with
/// a value that is not a string is `None`.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ProcessLocality {
    /// `locality_instance_id`: the operator's process group ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// `locality_zoneid`: the fault domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zoneid: Option<String>,
    /// `locality_machineid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machineid: Option<String>,
    /// `locality_dcid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dcid: Option<String>,
    /// `locality_data_hall`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_hall: Option<String>,
    /// `locality_dns_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_name: Option<String>,
    /// `locality_process_id` (set with several servers per pod).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_id: Option<String>,
    /// FoundationDB's own process ID (the key of `cluster.processes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processid: Option<String>,
    /// Any other locality.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

impl<'de> Deserialize<'de> for ProcessLocality {
    /// Read key by key in one go (a derived `flatten` would buffer every locality first).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = ProcessLocality;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("the localities of a process")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ProcessLocality, A::Error> {
                let mut locality = ProcessLocality::default();
                while let Some(key) = map.next_key::<String>()? {
                    let known = match key.as_str() {
                        "instance_id" => &mut locality.instance_id,
                        "zoneid" => &mut locality.zoneid,
                        "machineid" => &mut locality.machineid,
                        "dcid" => &mut locality.dcid,
                        "data_hall" => &mut locality.data_hall,
                        "dns_name" => &mut locality.dns_name,
                        "process_id" => &mut locality.process_id,
                        "processid" => &mut locality.processid,
                        _ => {
                            let value = map.next_value::<serde_json::Value>()?;
                            locality.other.insert(key, value);
                            continue;
                        }
                    };
                    *known = map.next_value::<LenientString>()?.0;
                }
                Ok(locality)
            }
        }
        deserializer.deserialize_map(Keys)
    }
}

/// One entry of a process's `roles[]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ProcessRole {
    /// The role name (`storage`, `log`, `master`, `cluster_controller`, `commit_proxy`,
    /// `grv_proxy`, `resolver`, `ratekeeper`, `data_distributor`, `coordinator`, ...).
    #[serde(default, deserialize_with = "lenient_shapes::text")]
    pub role: String,
    /// The role's ID.
    #[serde(
        default,
        deserialize_with = "lenient_shapes::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<String>,
    /// Bytes stored (storage roles).
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub stored_bytes: Option<i64>,
    /// Bytes used in the key-value store (storage and log roles).
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub kvstore_used_bytes: Option<i64>,
}

/// One entry of a process's `messages[]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ProcessMessage {
    /// Machine-readable name.
    #[serde(default, deserialize_with = "lenient_shapes::text")]
    pub name: String,
    /// Human-readable description.
    #[serde(
        default,
        deserialize_with = "lenient_shapes::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
}
