//! Checks of `customParameters`: `key=value` lines added to the monitor conf (and, for
//! backups and restores, `--key=value` arguments).
//!
//! The check is linear in the size of the list (a hash set of the keys seen), so a huge
//! list cannot stall every reconciliation pass; and it reports at most
//! [`MAX_REPORTED_ERRORS`] problems per list, so a huge list of bad entries cannot flood
//! an Event or the terminal either.

use std::collections::{BTreeMap, HashSet};

use crate::monitor_conf::safe_text::{
    ConfTextProblem, MAX_KEY_LENGTH, conf_value_problem, is_conf_key, normalized_key,
};
use crate::monitor_conf::substitute::substitute;

/// Monitor conf keys users may not set through custom parameters (compared after
/// [`normalized_key`], so `COMMAND` and `public-address` are refused too), because the
/// operator owns them:
/// - what fdbmonitor starts and how (`command`, the `[general]` keys, `envvars`, `user`,
///   `group`): setting them would run another binary or change how fdbmonitor restarts
///   processes;
/// - each process's identity, addresses, files and role (`public_address`,
///   `listen_address`, `class`, `role`, `cluster_file`, `datadir`, `logdir`, ...), which
///   the operator renders from the spec and the pod; fdbserver's aliases of them
///   (`machine_id`, `datacenter_id`) included;
/// - the localities the operator sets (`locality_instance_id`, `locality_zoneid`,
///   `locality_dcid`, ...): a custom `locality_zoneid` would put every pod in one zone,
///   so the database loses availability with the first missing process;
/// - `tls_verify_peers`, set from `mainContainer.peerVerificationRules`.
///
/// The Go operator refuses `datadir` and the `[general]` keys; this list is stricter
/// because it names every key this operator writes.
pub const RESERVED_CUSTOM_PARAMETER_KEYS: &[&str] = &[
    // What fdbmonitor runs, and the [general] section.
    "command",
    "envvars",
    "delete_envvars",
    "user",
    "group",
    "restart_delay",
    "initial_restart_delay",
    "restart_backoff",
    "restart_delay_reset_interval",
    "disable_lifecycle_logging",
    "kill_on_configuration_change",
    // The process's files, addresses and role.
    "cluster_file",
    "seed_cluster_file",
    "seed_connection_string",
    "public_address",
    "listen_address",
    "class",
    "role",
    "datadir",
    "logdir",
    "loggroup",
    "machine_id",
    "datacenter_id",
    "tls_verify_peers",
    // The localities the operator sets.
    "locality_instance_id",
    "locality_machineid",
    "locality_zoneid",
    "locality_process_id",
    "locality_dcid",
    // Not `locality_data_hall`: as in the Go operator, a custom parameter may set it
    // (from a node label, `$NODE_LABEL_TOPOLOGY_KUBERNETES_IO_ZONE`), and then
    // `spec.dataHall` is not added.
    "locality_dns_name",
];

/// The most entries of one `customParameters` list (the Go operator's CRD limit).
pub const MAX_CUSTOM_PARAMETERS: usize = 100;

/// The longest `key=value` entry (the Go operator's CRD limit).
pub const MAX_CUSTOM_PARAMETER_LENGTH: usize = 100;

/// The most problems reported per list; the rest are counted in one last line.
pub const MAX_REPORTED_ERRORS: usize = 20;

/// The variables a custom parameter value may reference (`$FDB_ZONE_ID`): those the
/// sidecar always substitutes; any other `$NAME` would make every pod's conf fail to
/// render.
const SUBSTITUTABLE: [&str; 6] = [
    "FDB_PUBLIC_IP",
    "FDB_POD_IP",
    "FDB_MACHINE_ID",
    "FDB_ZONE_ID",
    "FDB_INSTANCE_ID",
    "BINARY_DIR",
];

/// A `key=value` custom parameter, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomParameter {
    /// The key, trimmed.
    pub key: String,
    /// The value, trimmed.
    pub value: String,
}

/// Splits `key=value`; `None` when there is no `=` or the key is empty.
pub fn parse_custom_parameter(text: &str) -> Option<CustomParameter> {
    let (key, value) = text.split_once('=')?;
    let key = key.trim();
    (!key.is_empty()).then(|| CustomParameter {
        key: key.to_owned(),
        value: value.trim().to_owned(),
    })
}

/// The problem of one entry, if any; `seen` holds the normalized keys of the entries
/// before it.
fn entry_problem(
    text: &str,
    seen: &mut HashSet<String>,
    variables: &BTreeMap<String, String>,
) -> Option<String> {
    if text.chars().count() > MAX_CUSTOM_PARAMETER_LENGTH {
        return Some(format!(
            "is longer than {MAX_CUSTOM_PARAMETER_LENGTH} characters"
        ));
    }
    // Anywhere in the entry, even where trimming would drop it: a line break or a control
    // character is never meant.
    match conf_value_problem(text) {
        Some(ConfTextProblem::SurroundingWhitespace) | None => {}
        Some(problem) => return Some(format!("{text:?} {problem}")),
    }
    let Some(parameter) = parse_custom_parameter(text) else {
        return Some(format!("{text:?} is not of the form key=value"));
    };
    let key = &parameter.key;
    if !is_conf_key(key) {
        return Some(format!(
            "key {key:?} is not valid (an ASCII letter, then letters, digits, `_` or `-`, at most {MAX_KEY_LENGTH} characters)"
        ));
    }
    if let Some(problem) = conf_value_problem(&parameter.value) {
        return Some(format!("the value of {key:?} {problem}"));
    }
    if let Err(error) = substitute(&parameter.value, variables) {
        return Some(format!(
            "the value of {key:?} references a variable the sidecar does not provide ({error}); only ${} may be used",
            SUBSTITUTABLE.join(", $")
        ));
    }
    let normalized = normalized_key(key);
    if RESERVED_CUSTOM_PARAMETER_KEYS.contains(&normalized.as_str()) {
        return Some(format!(
            "{key:?} is managed by the operator and cannot be set as a custom parameter"
        ));
    }
    if !seen.insert(normalized) {
        return Some(format!("{key:?} is set more than once"));
    }
    None
}

/// Errors of a list of custom parameters at `field` (e.g.
/// `spec.processes.general.customParameters`): too many entries, too long or malformed
/// entries, invalid keys, values that cannot be written on one conf line, keys set twice
/// and keys the operator owns. Linear in the size of the list.
pub fn custom_parameter_errors(field: &str, parameters: &[String]) -> Vec<String> {
    custom_parameter_errors_for(field, parameters, false)
}

/// The prefix of the variables fdb-kubernetes-monitor derives from its node's labels
/// (with `ENABLE_NODE_WATCH`).
pub const NODE_LABEL_PREFIX: &str = "NODE_LABEL_";

/// The `NODE_LABEL_*` variables `value` references (`$NAME` or `${NAME}`).
fn node_label_references(value: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        let body = rest.strip_prefix('{').unwrap_or(rest);
        let name: String = body
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.len() > NODE_LABEL_PREFIX.len() && name.starts_with(NODE_LABEL_PREFIX) {
            names.push(name);
        }
    }
    names
}

/// [`custom_parameter_errors`], where `node_labels` (unified-image pods, whose
/// fdb-kubernetes-monitor offers its node's labels as `$NODE_LABEL_<KEY>` variables with
/// `ENABLE_NODE_WATCH`) also accepts references to those variables, as in the Go
/// operator's three_data_hall sample (`locality_data_hall=$NODE_LABEL_TOPOLOGY_KUBERNETES_IO_ZONE`).
pub fn custom_parameter_errors_for(
    field: &str,
    parameters: &[String],
    node_labels: bool,
) -> Vec<String> {
    let mut errors = Vec::new();
    if parameters.len() > MAX_CUSTOM_PARAMETERS {
        errors.push(format!(
            "{field}: {} entries, at most {MAX_CUSTOM_PARAMETERS} are allowed",
            parameters.len()
        ));
    }
    let mut variables: BTreeMap<String, String> = SUBSTITUTABLE
        .iter()
        .map(|name| ((*name).to_owned(), String::new()))
        .collect();
    if node_labels {
        for text in parameters {
            for name in node_label_references(text) {
                variables.insert(name, String::new());
            }
        }
    }
    let mut seen = HashSet::with_capacity(parameters.len());
    let (mut reported, mut unreported) = (0usize, 0usize);
    for (index, text) in parameters.iter().enumerate() {
        let Some(problem) = entry_problem(text, &mut seen, &variables) else {
            continue;
        };
        if reported < MAX_REPORTED_ERRORS {
            errors.push(format!("{field}[{index}]: {problem}"));
            reported += 1;
        } else {
            unreported += 1;
        }
    }
    if unreported > 0 {
        errors.push(format!("{field}: {unreported} more invalid entries"));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_label_variables_only_for_the_unified_monitor() {
        let parameters =
            vec!["locality_data_hall=$NODE_LABEL_TOPOLOGY_KUBERNETES_IO_ZONE".to_owned()];
        assert!(custom_parameter_errors_for("f", &parameters, true).is_empty());
        let split = custom_parameter_errors_for("f", &parameters, false);
        assert!(split[0].contains("does not provide"), "{split:?}");
        // Only NODE_LABEL_ names: any other variable is still refused.
        let other = vec!["locality_data_hall=${NODE_LABELS}".to_owned()];
        assert_eq!(custom_parameter_errors_for("f", &other, true).len(), 1);
        assert_eq!(
            node_label_references("a${NODE_LABEL_X}-$NODE_LABEL_Y_Z.$NODE_LABEL_"),
            ["NODE_LABEL_X", "NODE_LABEL_Y_Z"]
        );
    }

    fn errors(parameters: &[&str]) -> Vec<String> {
        let parameters: Vec<String> = parameters.iter().map(|p| (*p).to_owned()).collect();
        custom_parameter_errors("spec.processes.general.customParameters", &parameters)
    }

    #[test]
    fn malformed_duplicate_and_reserved_parameters_are_errors() {
        assert_eq!(
            errors(&[
                "knob_a=1",
                "knob_a = 2",
                "datadir=/tmp",
                "restart_delay=5",
                "no-equals",
                "=x",
                "knob_b=3",
            ]),
            [
                "spec.processes.general.customParameters[1]: \"knob_a\" is set more than once",
                "spec.processes.general.customParameters[2]: \"datadir\" is managed by the operator and cannot be set as a custom parameter",
                "spec.processes.general.customParameters[3]: \"restart_delay\" is managed by the operator and cannot be set as a custom parameter",
                "spec.processes.general.customParameters[4]: \"no-equals\" is not of the form key=value",
                "spec.processes.general.customParameters[5]: \"=x\" is not of the form key=value",
            ]
        );
        assert!(errors(&["knob_x=1", "locality_rack=r1", "memory = 8GiB"]).is_empty());
    }

    #[test]
    fn keys_the_operator_owns_are_refused_in_any_spelling() {
        for parameter in [
            "command=/bin/sh",
            "public_address=10.0.0.1:4501",
            "class=log",
            "locality_zoneid=one",
            "COMMAND=/bin/sh",
            "Public-Address=1.2.3.4:1",
            "envvars=LD_PRELOAD=/x.so",
            "tls_verify_peers=Check.Valid=0",
            "locality_dcid=dc9",
        ] {
            let found = errors(&[parameter]);
            assert_eq!(found.len(), 1, "{parameter}: {found:?}");
            assert!(
                found[0].starts_with("spec.processes.general.customParameters[0]: ")
                    && found[0].contains("managed by the operator"),
                "{found:?}"
            );
        }
        assert_eq!(errors(&["knob_a=1", "KNOB-A=2"]).len(), 1);
    }

    #[test]
    fn keys_and_values_that_could_add_conf_lines_are_refused() {
        for (parameter, expected) in [
            ("knob_a=1\n[fdbserver.9]", "line break"),
            ("knob_a=1\r", "line break"),
            ("knob_a=\u{1b}x", "control character"),
            ("[fdbserver.9]\ncommand=/bin/sh", "line break"),
            ("[fdbserver.9] command=/bin/sh", "is not valid"),
            ("knob a=1", "is not valid"),
            ("#knob=1", "is not valid"),
            ("knob_a=$HOME", "does not provide"),
            ("knob_a=${FDB_ZONE_ID", "does not provide"),
        ] {
            let found = errors(&[parameter]);
            assert_eq!(found.len(), 1, "{parameter:?}: {found:?}");
            assert!(found[0].contains(expected), "{parameter:?}: {found:?}");
        }
        assert!(errors(&["locality_disk=$FDB_INSTANCE_ID-d1", "knob_b=a=b # c [d]"]).is_empty());
    }

    #[test]
    fn long_lists_and_entries_are_refused_and_reported_briefly() {
        let long = format!("knob_a={}", "x".repeat(100));
        assert!(errors(&[&long])[0].contains("longer than 100"));
        let many: Vec<String> = (0..150).map(|i| format!("knob_{i}=1")).collect();
        let found = custom_parameter_errors("f", &many);
        assert_eq!(found, ["f: 150 entries, at most 100 are allowed"]);
        let bad: Vec<String> = (0..50).map(|i| format!("bad {i}")).collect();
        let found = custom_parameter_errors("f", &bad);
        assert_eq!(found.len(), MAX_REPORTED_ERRORS + 1);
        assert_eq!(found[MAX_REPORTED_ERRORS], "f: 30 more invalid entries");
    }
}
