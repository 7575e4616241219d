//! Generation of the fdbmonitor conf template the operator puts in the ConfigMap.
//!
//! The template still holds `$VARIABLES` (`$FDB_PUBLIC_IP`, `$BINARY_DIR`, ...); the sidecar
//! substitutes them per pod. The operator renders the same template and substitutes the
//! sidecar's reported values to know what each pod's conf must hash to.

use std::fmt::Write as _;

use super::safe_text::{ConfTextProblem, conf_value_problem, is_conf_key};
use crate::api::ProcessClass;
use crate::api::cluster::{FoundationDBClusterSpec, GENERAL_PROCESS_SETTINGS};

/// A key or value that cannot be written into the monitor conf: rendering refuses it
/// rather than let it add lines or sections (validation refuses such specs first; this
/// is the last line of defence).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The key does not follow the conf key grammar ([`is_conf_key`]).
    #[error(
        "monitor conf key {key:?} is not a valid key (an ASCII letter, then letters, digits, `_` or `-`)"
    )]
    InvalidKey {
        /// The key.
        key: String,
    },
    /// The value of `key` cannot be written on one line.
    #[error("monitor conf value of {key}: {problem}")]
    UnsafeValue {
        /// The key whose value is refused.
        key: String,
        /// What is wrong with the value.
        problem: ConfTextProblem,
    },
}

/// Where the main container reads the cluster file that fdbserver keeps up to date.
pub const CLUSTER_FILE_PATH: &str = "/var/fdb/data/fdb.cluster";
/// The cluster file the sidecar copies from the ConfigMap (the seed).
pub const SEED_CLUSTER_FILE_PATH: &str = "/var/dynamic-conf/fdb.cluster";
/// Where fdbserver writes its trace logs.
pub const LOG_DIR: &str = "/var/log/fdb-trace-logs";
/// The data directory of the first (or only) process of a pod.
pub const DATA_DIR: &str = "/var/fdb/data";

/// Everything that shapes one process class's monitor conf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorConfParams<'a> {
    /// The class of the processes.
    pub process_class: ProcessClass,
    /// How many fdbserver processes share the pod (storage/log servers per pod); at least 1.
    pub servers_per_pod: u32,
    /// The trace log group (`spec.logGroup`, default the cluster name).
    pub log_group: &'a str,
    /// Whether processes listen with TLS.
    pub tls: bool,
    /// Whether the processes listen on both a TLS and a non-TLS address, the TLS one
    /// first (FoundationDB makes it the public one): while TLS is turned on or off, when
    /// the cluster's `status.requiredAddresses` holds both, so the coordinators stay
    /// reachable on their old addresses until they move to the new ones.
    pub dual_listen: bool,
    /// `tls_verify_peers` rules, when TLS is on and rules are set.
    pub peer_verification_rules: Option<&'a str>,
    /// Whether to set `listen_address` to the pod IP explicitly (the default).
    pub explicit_listen_address: bool,
    /// Whether to set `locality_dns_name = $FDB_DNS_NAME`.
    pub dns_locality: bool,
    /// `locality_dcid`, when the cluster has a data center.
    pub data_center: Option<&'a str>,
    /// `locality_data_hall`, when the cluster has a data hall.
    pub data_hall: Option<&'a str>,
    /// Custom parameters (`knob_x=y`) for this class, after the general ones.
    pub custom_parameters: &'a [String],
    /// `routing.podIPFamily` (4 or 6): the unified image's monitor picks the address of
    /// this family from the pod's IP list (`IPList` arguments).
    pub ip_family: Option<i32>,
}

impl<'a> MonitorConfParams<'a> {
    /// What the operator renders for `class` at `servers_per_pod` from the spec of the
    /// cluster named `cluster_name`; the one place that maps spec fields to the conf.
    pub fn for_spec(
        spec: &'a FoundationDBClusterSpec,
        cluster_name: &'a str,
        process_class: ProcessClass,
        servers_per_pod: u32,
    ) -> Self {
        Self {
            process_class,
            servers_per_pod,
            log_group: spec.log_group(cluster_name),
            tls: spec.tls_enabled(),
            dual_listen: false,
            peer_verification_rules: spec.main_container.peer_verification_rules.as_deref(),
            explicit_listen_address: spec.use_explicit_listen_address(),
            dns_locality: spec.routing.define_dns_locality_fields(),
            data_center: spec.data_center.as_deref().filter(|dc| !dc.is_empty()),
            data_hall: spec.data_hall.as_deref().filter(|hall| !hall.is_empty()),
            custom_parameters: class_custom_parameters(spec, process_class),
            ip_family: spec.routing.chosen_pod_ip_family(),
        }
    }
}

/// The custom parameters of a class: `processes.<class>.customParameters` when the class
/// sets any, else `processes.general.customParameters`.
pub fn class_custom_parameters(spec: &FoundationDBClusterSpec, class: ProcessClass) -> &[String] {
    // Like the Go operator's process settings: the first of the class's and the general
    // settings that sets the list wins as a whole; lists are not merged, so a manifest
    // written for the Go operator renders the same command lines (and causes no bounce).
    [class.as_str(), GENERAL_PROCESS_SETTINGS]
        .into_iter()
        .filter_map(|name| spec.processes.get(name))
        .map(|settings| settings.custom_parameters.as_slice())
        .find(|parameters| !parameters.is_empty())
        .unwrap_or_default()
}

/// How many fdbserver processes a pod of `class` runs according to the spec:
/// `storageServersPerPod` for storage, `logServersPerPod` for log classes, else 1.
pub fn spec_servers_per_pod(spec: &FoundationDBClusterSpec, class: ProcessClass) -> u32 {
    let configured = match class {
        ProcessClass::Storage => spec.storage_servers_per_pod(),
        class if class.is_log_process() => spec.log_servers_per_pod(),
        _ => 1,
    };
    u32::try_from(configured).unwrap_or(1).max(1)
}

/// The ConfigMap key holding a class's monitor conf: `fdbmonitor-conf-<class>`, with a
/// `-density-<N>` suffix when N servers share a pod.
pub fn monitor_conf_key(process_class: ProcessClass, servers_per_pod: u32) -> String {
    if servers_per_pod > 1 {
        format!("fdbmonitor-conf-{process_class}-density-{servers_per_pod}")
    } else {
        format!("fdbmonitor-conf-{process_class}")
    }
}

/// The number of servers a pod mounting the monitor conf `key` runs: `N` for
/// `fdbmonitor-conf-<class>-density-<N>`, 1 for `fdbmonitor-conf-<class>`; `None` for
/// any other key (a unified pod's `fdbmonitor-conf-<class>-json` says nothing of its
/// density: its monitor's `--process-count` does).
pub fn servers_per_pod_of_key(key: &str) -> Option<u32> {
    let rest = key.strip_prefix("fdbmonitor-conf-")?;
    if rest.ends_with("-json") {
        return None;
    }
    match rest.rsplit_once("-density-") {
        Some((_, count)) => count.parse().ok().filter(|n| *n > 0),
        None => Some(1),
    }
}

/// The port of the `index`-th process of a pod (1-based): 4501, 4503, ... without TLS and
/// 4500, 4502, ... with TLS.
pub fn process_port(index: u32, tls: bool) -> u32 {
    let base = if tls { 4498 } else { 4499 };
    base + 2 * index.max(1)
}

/// The address list of the `index`-th process at `host` (a `$VARIABLE`): its TLS or
/// non-TLS address, or both, TLS first, while [`MonitorConfParams::dual_listen`].
fn listen_addresses(host: &str, index: u32, params: &MonitorConfParams<'_>) -> String {
    let tls = format!("{host}:{}:tls", process_port(index, true));
    let plain = format!("{host}:{}", process_port(index, false));
    match (params.dual_listen, params.tls) {
        (true, _) => format!("{tls},{plain}"),
        (false, true) => tls,
        (false, false) => plain,
    }
}

/// Splits a custom parameter `key=value` (spaces around `=` allowed) into its parts.
pub fn split_custom_parameter(parameter: &str) -> Option<(&str, &str)> {
    let (key, value) = parameter.split_once('=')?;
    let key = key.trim();
    (!key.is_empty()).then_some((key, value.trim()))
}

/// Renders the monitor conf template of one process class; refuses any key or value that
/// could end its line (see [`super::safe_text`]).
pub fn render_monitor_conf(params: &MonitorConfParams<'_>) -> Result<String, RenderError> {
    let mut conf =
        String::from("[general]\nkill_on_configuration_change = false\nrestart_delay = 60\n");
    for index in 1..=params.servers_per_pod.max(1) {
        render_process_section(&mut conf, params, index)?;
    }
    Ok(conf)
}

/// Appends `key = value` after checking both.
fn push_line(conf: &mut String, key: &str, value: &str) -> Result<(), RenderError> {
    if !is_conf_key(key) {
        return Err(RenderError::InvalidKey {
            key: key.to_owned(),
        });
    }
    if let Some(problem) = conf_value_problem(value) {
        return Err(RenderError::UnsafeValue {
            key: key.to_owned(),
            problem,
        });
    }
    // `write!` into a String cannot fail.
    let _ = writeln!(conf, "{key} = {value}");
    Ok(())
}

fn render_process_section(
    conf: &mut String,
    params: &MonitorConfParams<'_>,
    index: u32,
) -> Result<(), RenderError> {
    let addresses = |variable: &str| listen_addresses(variable, index, params);
    let several = params.servers_per_pod > 1;
    let data_dir = if several {
        format!("{DATA_DIR}/{index}")
    } else {
        DATA_DIR.to_owned()
    };
    // `write!` into a String cannot fail; the result is ignored on purpose.
    let _ = writeln!(conf, "[fdbserver.{index}]");
    let mut line = |key: &str, value: &str| push_line(conf, key, value);
    line("command", "$BINARY_DIR/fdbserver")?;
    line("cluster_file", CLUSTER_FILE_PATH)?;
    line("seed_cluster_file", SEED_CLUSTER_FILE_PATH)?;
    line("public_address", &addresses("$FDB_PUBLIC_IP"))?;
    line("class", params.process_class.as_str())?;
    line("logdir", LOG_DIR)?;
    line("loggroup", params.log_group)?;
    line("datadir", &data_dir)?;
    line("locality_instance_id", "$FDB_INSTANCE_ID")?;
    line("locality_machineid", "$FDB_MACHINE_ID")?;
    line("locality_zoneid", "$FDB_ZONE_ID")?;
    if several {
        line("locality_process_id", &format!("$FDB_INSTANCE_ID-{index}"))?;
    }
    if params.explicit_listen_address {
        line("listen_address", &addresses("$FDB_POD_IP"))?;
    }
    if let Some(dc) = params.data_center {
        line("locality_dcid", dc)?;
    }
    // A `locality_data_hall` custom parameter wins over `spec.dataHall` (as in the Go
    // operator's monitor conf): one line of the key, never two.
    let custom_hall = params
        .custom_parameters
        .iter()
        .filter_map(|p| split_custom_parameter(p))
        .any(|(key, _)| key == "locality_data_hall");
    if let Some(hall) = params.data_hall.filter(|_| !custom_hall) {
        line("locality_data_hall", hall)?;
    }
    if params.dns_locality {
        line("locality_dns_name", "$FDB_DNS_NAME")?;
    }
    if let Some(rules) = params
        .peer_verification_rules
        .filter(|rules| params.tls && !rules.is_empty())
    {
        line("tls_verify_peers", rules)?;
    }
    for parameter in params.custom_parameters {
        if let Some((key, value)) = split_custom_parameter(parameter) {
            line(key, value)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_per_pod_is_read_back_from_the_monitor_conf_key() {
        for servers in [1, 2, 8] {
            let key = monitor_conf_key(ProcessClass::Storage, servers);
            assert_eq!(servers_per_pod_of_key(&key), Some(servers), "{key}");
        }
        assert_eq!(
            servers_per_pod_of_key("fdbmonitor-conf-log-density-0"),
            None
        );
        assert_eq!(
            servers_per_pod_of_key("fdbmonitor-conf-log-density-x"),
            None
        );
        assert_eq!(servers_per_pod_of_key("cluster-file"), None);
    }

    fn storage_params() -> MonitorConfParams<'static> {
        MonitorConfParams {
            process_class: ProcessClass::Storage,
            servers_per_pod: 1,
            log_group: "sample",
            tls: false,
            dual_listen: false,
            peer_verification_rules: None,
            explicit_listen_address: true,
            dns_locality: false,
            data_center: None,
            data_hall: None,
            custom_parameters: &[],
            ip_family: None,
        }
    }

    #[test]
    fn renders_the_single_process_conf() {
        let expected = "\
[general]
kill_on_configuration_change = false
restart_delay = 60
[fdbserver.1]
command = $BINARY_DIR/fdbserver
cluster_file = /var/fdb/data/fdb.cluster
seed_cluster_file = /var/dynamic-conf/fdb.cluster
public_address = $FDB_PUBLIC_IP:4501
class = storage
logdir = /var/log/fdb-trace-logs
loggroup = sample
datadir = /var/fdb/data
locality_instance_id = $FDB_INSTANCE_ID
locality_machineid = $FDB_MACHINE_ID
locality_zoneid = $FDB_ZONE_ID
listen_address = $FDB_POD_IP:4501
";
        assert_eq!(render_monitor_conf(&storage_params()).unwrap(), expected);
    }

    #[test]
    fn several_servers_per_pod_get_their_own_ports_dirs_and_process_ids() {
        let params = MonitorConfParams {
            servers_per_pod: 2,
            ..storage_params()
        };
        let conf = render_monitor_conf(&params).unwrap();
        assert!(conf.contains("[fdbserver.2]\n"));
        assert!(conf.contains("public_address = $FDB_PUBLIC_IP:4503\n"));
        assert!(conf.contains("datadir = /var/fdb/data/2\n"));
        assert!(conf.contains("locality_process_id = $FDB_INSTANCE_ID-2\n"));
        assert_eq!(
            monitor_conf_key(ProcessClass::Storage, 2),
            "fdbmonitor-conf-storage-density-2"
        );
        assert_eq!(
            monitor_conf_key(ProcessClass::Log, 1),
            "fdbmonitor-conf-log"
        );
    }

    #[test]
    fn tls_localities_and_custom_parameters() {
        let custom = vec!["knob_disable_posix_kernel_aio = 1".to_owned()];
        let params = MonitorConfParams {
            tls: true,
            peer_verification_rules: Some("S.CN=fdb"),
            dns_locality: true,
            data_center: Some("dc1"),
            data_hall: Some("hall-a"),
            custom_parameters: &custom,
            ip_family: None,
            ..storage_params()
        };
        let conf = render_monitor_conf(&params).unwrap();
        for line in [
            "public_address = $FDB_PUBLIC_IP:4500:tls\n",
            "listen_address = $FDB_POD_IP:4500:tls\n",
            "tls_verify_peers = S.CN=fdb\n",
            "locality_dcid = dc1\n",
            "locality_data_hall = hall-a\n",
            "locality_dns_name = $FDB_DNS_NAME\n",
            "knob_disable_posix_kernel_aio = 1\n",
        ] {
            assert!(conf.contains(line), "missing {line:?} in\n{conf}");
        }
    }

    #[test]
    fn while_tls_changes_processes_listen_on_both_addresses_tls_first() {
        for tls in [false, true] {
            let params = MonitorConfParams {
                tls,
                dual_listen: true,
                servers_per_pod: 2,
                ..storage_params()
            };
            let conf = render_monitor_conf(&params).unwrap();
            for line in [
                "public_address = $FDB_PUBLIC_IP:4500:tls,$FDB_PUBLIC_IP:4501\n",
                "listen_address = $FDB_POD_IP:4500:tls,$FDB_POD_IP:4501\n",
                "public_address = $FDB_PUBLIC_IP:4502:tls,$FDB_PUBLIC_IP:4503\n",
            ] {
                assert!(conf.contains(line), "missing {line:?} in\n{conf}");
            }
        }
    }

    #[test]
    fn values_and_keys_that_could_add_lines_are_refused() {
        let hostile = "g\n[fdbserver.9]\ncommand = /bin/sh";
        let params = MonitorConfParams {
            log_group: hostile,
            ..storage_params()
        };
        assert!(matches!(
            render_monitor_conf(&params),
            Err(RenderError::UnsafeValue { key, .. }) if key == "loggroup"
        ));
        let params = MonitorConfParams {
            data_hall: Some("h\r[x]"),
            ..storage_params()
        };
        assert!(render_monitor_conf(&params).is_err());
        for parameter in ["[fdbserver.2] x=1", "knob_a = 1\n[fdbserver.2]"] {
            let custom = vec![parameter.to_owned()];
            let params = MonitorConfParams {
                custom_parameters: &custom,
                ip_family: None,
                ..storage_params()
            };
            assert!(render_monitor_conf(&params).is_err(), "{parameter:?}");
        }
    }

    #[test]
    fn ports_follow_the_process_index() {
        assert_eq!(process_port(1, false), 4501);
        assert_eq!(process_port(3, false), 4505);
        assert_eq!(process_port(1, true), 4500);
        assert_eq!(split_custom_parameter("a=b"), Some(("a", "b")));
        assert_eq!(split_custom_parameter("=b"), None);
        assert_eq!(split_custom_parameter("novalue"), None);
    }
}
