//! The process configuration of unified-image pods: the JSON `fdb-kubernetes-monitor`
//! reads from the ConfigMap (key `fdbmonitor-conf-<class>-json`, mounted as
//! `config.json`), and writes back, as it accepted it, into the pod annotation
//! `foundationdb.org/launcher-current-configuration`.
//!
//! The shape is the monitor's (`version`, `runServers`, `arguments`; each argument a
//! `type` of `Literal`, `Concatenate`, `Environment`, `ProcessNumber` or `IPList`): the
//! user's values stay typed values inside JSON, never text spliced into a command.
//! Unlike fdbmonitor, the monitor never sorts arguments: the command line it starts is the
//! binary followed by the arguments in order.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::render::{
    CLUSTER_FILE_PATH, DATA_DIR, LOG_DIR, MonitorConfParams, SEED_CLUSTER_FILE_PATH, process_port,
    split_custom_parameter,
};
use crate::api::ProcessClass;

/// The annotation the monitor writes with the configuration it runs (the JSON it read).
pub const CURRENT_CONFIGURATION_ANNOTATION: &str =
    "foundationdb.org/launcher-current-configuration";
/// The annotation the monitor writes with the environment its arguments use (a JSON
/// object of strings, including `BINARY_DIR`).
pub const ENVIRONMENT_ANNOTATION: &str = "foundationdb.org/launcher-environment";
/// The annotation the operator sets (a Unix timestamp) to make a monitor read its
/// configuration file again when it still runs an older one.
pub const OUTDATED_CONFIG_MAP_ANNOTATION: &str = "foundationdb.org/outdated-config-map-seen";
/// Where the sidecar-mode container copies the binaries of other versions; the monitor
/// runs `<this>/<version>/fdbserver` for a version not protocol compatible with its own.
pub const SHARED_BINARIES_DIR: &str = "/var/fdb/shared-binaries/bin";
/// The binary directory of the monitor's own image.
pub const IMAGE_BINARY_DIR: &str = "/usr/bin";

/// How an argument's text is produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArgumentType {
    /// `value` as is.
    Literal,
    /// The `values`, each generated, concatenated.
    Concatenate,
    /// The environment variable named by `source`.
    Environment,
    /// The process number, times `multiplier` (when not 0), plus `offset`.
    ProcessNumber,
    /// The first address of family `ipFamily` in the comma-separated list in `source`.
    IPList,
}

/// One argument of the process command line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Argument {
    /// How the text is produced (absent: literal).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub argument_type: Option<ArgumentType>,
    /// The literal text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// The parts of a concatenation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<Argument>,
    /// The environment variable of an `Environment` or `IPList` argument.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// Multiplier of the process number.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub multiplier: i64,
    /// Offset added to the process number.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offset: i64,
    /// The address family (4 or 6) of an `IPList` argument.
    #[serde(rename = "ipFamily", default, skip_serializing_if = "is_zero")]
    pub ip_family: i64,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

/// What the monitor runs: the version, whether servers run at all, and the arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessConfiguration {
    /// The FoundationDB version the processes run.
    pub version: String,
    /// `false` keeps the servers stopped (before the cluster file is known).
    #[serde(
        rename = "runServers",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub run_servers: Option<bool>,
    /// The arguments, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<Argument>,
}

/// Why an argument cannot be generated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentError {
    /// The environment has no such variable.
    #[error("missing environment variable {0}")]
    MissingEnvironment(String),
    /// No address of the family is in the list.
    #[error("no IPv{family} address in {source_name}")]
    NoAddressOfFamily {
        /// The family asked for.
        family: i64,
        /// The variable holding the list.
        source_name: String,
    },
    /// The family is neither 4 nor 6.
    #[error("unsupported IP family {0}")]
    UnsupportedFamily(i64),
}

impl Argument {
    /// A literal argument.
    pub fn literal(value: impl Into<String>) -> Self {
        Self {
            value: value.into(),
            ..Self::default()
        }
    }

    /// The value of environment variable `name`.
    pub fn environment(name: &str) -> Self {
        Self {
            argument_type: Some(ArgumentType::Environment),
            source: name.to_owned(),
            ..Self::default()
        }
    }

    /// The first address of `family` (4 or 6) in the comma-separated list in
    /// environment variable `name`; without a family, the variable's value.
    pub fn address_from(name: &str, family: Option<i32>) -> Self {
        match family {
            Some(family) => Self {
                argument_type: Some(ArgumentType::IPList),
                source: name.to_owned(),
                ip_family: family.into(),
                ..Self::default()
            },
            None => Self::environment(name),
        }
    }

    /// The process number times `multiplier` plus `offset`.
    pub fn process_number(multiplier: i64, offset: i64) -> Self {
        Self {
            argument_type: Some(ArgumentType::ProcessNumber),
            multiplier,
            offset,
            ..Self::default()
        }
    }

    /// The concatenation of `values`.
    pub fn concatenate(values: Vec<Argument>) -> Self {
        Self {
            argument_type: Some(ArgumentType::Concatenate),
            values,
            ..Self::default()
        }
    }

    /// The argument's text for process `number` with `env`.
    pub fn generate(
        &self,
        number: u32,
        env: &BTreeMap<String, String>,
    ) -> Result<String, ArgumentError> {
        match self.argument_type {
            None | Some(ArgumentType::Literal) => Ok(self.value.clone()),
            Some(ArgumentType::Concatenate) => self
                .values
                .iter()
                .map(|part| part.generate(number, env))
                .collect(),
            Some(ArgumentType::ProcessNumber) => {
                let mut value = i64::from(number);
                if self.multiplier != 0 {
                    value = value.saturating_mul(self.multiplier);
                }
                Ok(value.saturating_add(self.offset).to_string())
            }
            Some(ArgumentType::Environment) => env
                .get(&self.source)
                .cloned()
                .ok_or_else(|| ArgumentError::MissingEnvironment(self.source.clone())),
            Some(ArgumentType::IPList) => {
                let list = env
                    .get(&self.source)
                    .ok_or_else(|| ArgumentError::MissingEnvironment(self.source.clone()))?;
                let wanted_v4 = match self.ip_family {
                    4 => true,
                    6 => false,
                    other => return Err(ArgumentError::UnsupportedFamily(other)),
                };
                list.split(',')
                    .filter_map(|text| text.trim().parse::<std::net::IpAddr>().ok())
                    .find(|ip| ip.is_ipv4() == wanted_v4)
                    .map(|ip| ip.to_string())
                    .ok_or_else(|| ArgumentError::NoAddressOfFamily {
                        family: self.ip_family,
                        source_name: self.source.clone(),
                    })
            }
        }
    }

    /// The environment variables the argument reads, added to `names`.
    pub fn environment_names(&self, names: &mut Vec<String>) {
        match self.argument_type {
            Some(ArgumentType::Environment | ArgumentType::IPList)
                if !names.contains(&self.source) =>
            {
                names.push(self.source.clone());
            }
            Some(ArgumentType::Concatenate) => {
                for part in &self.values {
                    part.environment_names(names);
                }
            }
            _ => {}
        }
    }
}

impl ProcessConfiguration {
    /// Whether servers run (`runServers` absent means yes).
    pub fn runs_servers(&self) -> bool {
        self.run_servers.unwrap_or(true)
    }

    /// The arguments of process `number` (1-based) with `env`, in order.
    pub fn generate_arguments(
        &self,
        number: u32,
        env: &BTreeMap<String, String>,
    ) -> Result<Vec<String>, ArgumentError> {
        self.arguments
            .iter()
            .map(|argument| argument.generate(number, env))
            .collect()
    }

    /// The command line of process `number`: `<BINARY_DIR>/fdbserver` then the arguments,
    /// as the monitor starts it (the binary directory from `env`'s `BINARY_DIR`).
    pub fn command_line(
        &self,
        number: u32,
        env: &BTreeMap<String, String>,
    ) -> Result<String, ArgumentError> {
        let dir = env
            .get("BINARY_DIR")
            .ok_or_else(|| ArgumentError::MissingEnvironment("BINARY_DIR".into()))?;
        let mut line = format!("{dir}/fdbserver");
        for argument in self.generate_arguments(number, env)? {
            line.push(' ');
            line.push_str(&argument);
        }
        Ok(line)
    }

    /// The environment variables the arguments read, in first-use order.
    pub fn environment_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for argument in &self.arguments {
            argument.environment_names(&mut names);
        }
        names
    }
}

/// The ConfigMap key of a class's process configuration (the same for every density:
/// the monitor's `--process-count` says how many processes a pod runs).
pub fn process_config_key(process_class: ProcessClass) -> String {
    format!("fdbmonitor-conf-{process_class}-json")
}

/// The class of a process configuration key, if `key` is one.
pub fn class_of_process_config_key(key: &str) -> Option<ProcessClass> {
    key.strip_prefix("fdbmonitor-conf-")?
        .strip_suffix("-json")?
        .parse()
        .ok()
}

/// `--<name>=[$<variable>]:<port of the process>[:tls]`: the address of each process,
/// bracketed as the unified image writes it; with [`MonitorConfParams::dual_listen`],
/// its TLS and its non-TLS address, TLS first, separated by a comma.
fn address_argument(name: &str, variable: &str, params: &MonitorConfParams<'_>) -> Argument {
    // `prefix` opens the bracket; without dual_listen the parts are exactly those the Go
    // operator writes (a change would bounce every unified pod after a take-over).
    let one = |prefix: String, tls: bool| {
        let first_port = i64::from(process_port(1, tls));
        let mut parts = vec![
            Argument::literal(prefix),
            // With `routing.podIPFamily` the variable holds the pod's IP list
            // (`status.podIPs`); the Go operator's `buildIPArgument`,
            // `internal/monitor_conf.go`, picks the family's address the same way.
            Argument::address_from(variable, params.ip_family),
            Argument::literal("]:"),
            Argument::process_number(2, first_port - 2),
        ];
        if tls {
            parts.push(Argument::literal(":tls"));
        }
        parts
    };
    let mut parts = one(format!("--{name}=["), params.tls || params.dual_listen);
    if params.dual_listen {
        parts.extend(one(",[".to_owned(), false));
    }
    Argument::concatenate(parts)
}

fn locality_from(name: &str, variable: &str) -> Argument {
    Argument::concatenate(vec![
        Argument::literal(format!("--locality_{name}=")),
        Argument::environment(variable),
    ])
}

/// A custom parameter `key=value`: a value `$NAME` reads that environment variable,
/// anything else is literal.
fn custom_argument(key: &str, value: &str, ip_family: Option<i32>) -> Argument {
    let value = match value.strip_prefix('$') {
        // The address variables hold the IP list with a family, as in `address_argument`.
        Some(name @ ("FDB_PUBLIC_IP" | "FDB_POD_IP")) => Argument::address_from(name, ip_family),
        Some(name) if !name.is_empty() => Argument::environment(name),
        _ => Argument::literal(value),
    };
    Argument::concatenate(vec![Argument::literal(format!("--{key}=")), value])
}

/// The process configuration of one class, as the operator puts it in the ConfigMap:
/// `version` the cluster's `spec.version`, servers stopped until the cluster file is
/// known (`has_connection_string`). Every process gets its own data directory
/// (`/var/fdb/data/<N>`) and a `locality_process_id`, whatever the density.
pub fn build_process_configuration(
    params: &MonitorConfParams<'_>,
    version: &str,
    has_connection_string: bool,
) -> ProcessConfiguration {
    let mut arguments = vec![
        Argument::literal(format!("--cluster_file={CLUSTER_FILE_PATH}")),
        Argument::literal(format!("--seed_cluster_file={SEED_CLUSTER_FILE_PATH}")),
        address_argument("public_address", "FDB_PUBLIC_IP", params),
        Argument::literal(format!("--class={}", params.process_class)),
        Argument::literal(format!("--logdir={LOG_DIR}")),
        Argument::literal(format!("--loggroup={}", params.log_group)),
        Argument::concatenate(vec![
            Argument::literal(format!("--datadir={DATA_DIR}/")),
            Argument::process_number(0, 0),
        ]),
        Argument::concatenate(vec![
            Argument::literal("--locality_process_id="),
            Argument::environment("FDB_INSTANCE_ID"),
            Argument::literal("-"),
            Argument::process_number(0, 0),
        ]),
        locality_from("instance_id", "FDB_INSTANCE_ID"),
        locality_from("machineid", "FDB_MACHINE_ID"),
        locality_from("zoneid", "FDB_ZONE_ID"),
    ];
    if params.explicit_listen_address {
        arguments.push(address_argument("listen_address", "FDB_POD_IP", params));
    }
    if let Some(rules) = params
        .peer_verification_rules
        .filter(|rules| params.tls && !rules.is_empty())
    {
        arguments.push(Argument::literal(format!("--tls_verify_peers={rules}")));
    }
    let mut has_dcid = false;
    let mut has_data_hall = false;
    for parameter in params.custom_parameters {
        if let Some((key, value)) = split_custom_parameter(parameter) {
            has_dcid |= key == "locality_dcid";
            has_data_hall |= key == "locality_data_hall";
            arguments.push(custom_argument(key, value, params.ip_family));
        }
    }
    if let Some(dc) = params.data_center.filter(|_| !has_dcid) {
        arguments.push(Argument::literal(format!("--locality_dcid={dc}")));
    }
    if let Some(hall) = params.data_hall.filter(|_| !has_data_hall) {
        arguments.push(Argument::literal(format!("--locality_data_hall={hall}")));
    }
    if params.dns_locality {
        arguments.push(locality_from("dns_name", "FDB_DNS_NAME"));
    }
    ProcessConfiguration {
        version: version.to_owned(),
        run_servers: (!has_connection_string).then_some(false),
        arguments,
    }
}

#[cfg(test)]
#[path = "process_config_tests.rs"]
mod tests;
