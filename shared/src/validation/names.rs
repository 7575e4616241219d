//! Kubernetes' rules for object names, label keys and label values (the DNS-1123 label
//! and subdomain, the DNS-1035 label, the 63-character label value), and the checks of
//! every name and label value the operator derives from a cluster's spec, so a cluster
//! whose pods, PVCs, Services or ConfigMap the API server would refuse is refused at
//! validation, naming the field.
//!
//! The rule helpers answer `None` for a valid value, or the reason in the API server's
//! own words, so the simulated API server answers as a real one does.

use crate::api::FoundationDBCluster;
use crate::api::cluster::{FoundationDBClusterSpec, PublicIpSource};
use crate::api::process_class::{ALL_PROCESS_CLASSES, ProcessClass};
use crate::cluster_math::desired_process_counts;

use super::{ValidationReport, counts_within_limits};

/// Longest DNS-1123 or DNS-1035 label, label value and label key name part.
pub const MAX_LABEL_LENGTH: usize = 63;
/// Longest DNS-1123 subdomain (most object names, label key prefixes).
pub const MAX_SUBDOMAIN_LENGTH: usize = 253;
/// Digits of the largest process group number the name checks leave room for
/// (99999: [`super::MAX_COUNT`] processes of a class, replacements included).
pub const PROCESS_GROUP_NUMBER_DIGITS: usize = 5;

const LABEL_GRAMMAR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_GRAMMAR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_GRAMMAR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const LABEL_VALUE_GRAMMAR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const QUALIFIED_NAME_GRAMMAR: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

fn too_long(max: usize) -> String {
    format!("must be no more than {max} characters")
}

/// Whether `value` is one DNS-1123 label made of lowercase letters, digits and `-`,
/// starting and ending with a letter or digit (length not checked).
fn is_label_text(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-')
}

/// Why `value` is not a DNS-1123 label (`None` when it is one).
pub fn dns1123_label_error(value: &str) -> Option<String> {
    if value.len() > MAX_LABEL_LENGTH {
        return Some(too_long(MAX_LABEL_LENGTH));
    }
    (!is_label_text(value)).then(|| LABEL_GRAMMAR.to_owned())
}

/// Why `value` is not a DNS-1123 subdomain (`None` when it is one).
pub fn dns1123_subdomain_error(value: &str) -> Option<String> {
    if value.len() > MAX_SUBDOMAIN_LENGTH {
        return Some(too_long(MAX_SUBDOMAIN_LENGTH));
    }
    (!value.split('.').all(is_label_text)).then(|| SUBDOMAIN_GRAMMAR.to_owned())
}

/// Why `value` is not a DNS-1035 label, the rule for Service names (`None` when it is one).
pub fn dns1035_label_error(value: &str) -> Option<String> {
    if value.len() > MAX_LABEL_LENGTH {
        return Some(too_long(MAX_LABEL_LENGTH));
    }
    let valid = is_label_text(value) && value.starts_with(|c: char| c.is_ascii_lowercase());
    (!valid).then(|| DNS1035_GRAMMAR.to_owned())
}

/// Whether `value` matches `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` (non-empty).
fn is_qualified_text(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// Why `value` is not a valid label value: at most 63 characters, empty or alphanumeric
/// at both ends with `-`, `_` and `.` inside (`None` when valid).
pub fn label_value_error(value: &str) -> Option<String> {
    if value.len() > MAX_LABEL_LENGTH {
        return Some(too_long(MAX_LABEL_LENGTH));
    }
    (!value.is_empty() && !is_qualified_text(value)).then(|| LABEL_VALUE_GRAMMAR.to_owned())
}

/// Why `key` is not a valid label or annotation key (a qualified name: an optional
/// DNS-1123 subdomain prefix and `/`, then a name of at most 63 characters).
pub fn qualified_name_error(key: &str) -> Option<String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return Some("prefix part must be non-empty".to_owned());
        }
        if let Some(problem) = dns1123_subdomain_error(prefix) {
            return Some(format!("prefix part {problem}"));
        }
    }
    if name.is_empty() {
        return Some("name part must be non-empty".to_owned());
    }
    if name.len() > MAX_LABEL_LENGTH {
        return Some(format!("name part {}", too_long(MAX_LABEL_LENGTH)));
    }
    (!is_qualified_text(name)).then(|| QUALIFIED_NAME_GRAMMAR.to_owned())
}

/// The classes whose pods the spec asks for (every class when the counts are too large
/// to derive, which validation refuses anyway).
fn classes_run(spec: &FoundationDBClusterSpec) -> Vec<ProcessClass> {
    if !counts_within_limits(spec) {
        return ALL_PROCESS_CLASSES.to_vec();
    }
    desired_process_counts(spec)
        .positive()
        .into_keys()
        .collect()
}

/// The class with the longest name among `classes` (by `name`), with that length.
fn longest_class(
    classes: &[ProcessClass],
    name: impl Fn(ProcessClass) -> String,
) -> Option<(String, usize)> {
    classes
        .iter()
        .map(|class| name(*class))
        .max_by_key(String::len)
        .map(|longest| {
            let length = longest.len();
            (longest, length)
        })
}

/// Checks `spec.processGroupIDPrefix`: process group IDs (`<prefix>-<class>-<n>`) are
/// label values and FoundationDB locality values, so the prefix may only hold letters,
/// digits, `-`, `_` and `.`, alphanumeric at both ends, and must leave room for the
/// longest class and a 5-digit number within 63 characters.
pub(super) fn check_process_group_id_prefix(
    spec: &FoundationDBClusterSpec,
    report: &mut ValidationReport,
) {
    let prefix = spec.process_group_id_prefix();
    if prefix.is_empty() {
        return;
    }
    let field = "spec.processGroupIDPrefix";
    if !is_qualified_text(prefix) {
        report.error(format!(
            "{field}: {prefix:?} is not allowed: process group IDs are label values and localities, so it may hold only letters, digits, '-', '_' and '.', and must start and end with a letter or digit"
        ));
        return;
    }
    let Some((class, class_length)) =
        longest_class(&classes_run(spec), |class| class.as_str().to_owned())
    else {
        return;
    };
    let most = MAX_LABEL_LENGTH.saturating_sub(class_length + 2 + PROCESS_GROUP_NUMBER_DIGITS);
    if prefix.len() > most {
        report.error(format!(
            "{field}: {prefix:?} is too long: process group IDs <prefix>-{class}-<n> are label values and would exceed {MAX_LABEL_LENGTH} characters; at most {most} characters"
        ));
    }
}

/// Checks `spec.routing.dnsDomain`: it ends the pods' DNS names in the cluster file, so
/// it must be a DNS-1123 subdomain.
pub(super) fn check_dns_domain(spec: &FoundationDBClusterSpec, report: &mut ValidationReport) {
    let Some(domain) = spec.routing.dns_domain.as_deref() else {
        return;
    };
    if let Some(problem) = dns1123_subdomain_error(domain) {
        report.error(format!(
            "spec.routing.dnsDomain: {domain:?} is not a DNS subdomain: {problem}"
        ));
    }
}

/// Checks the label keys and values of `spec.labels`: they go onto every object of the
/// cluster.
pub(super) fn check_label_settings(spec: &FoundationDBClusterSpec, report: &mut ValidationReport) {
    let labels = &spec.labels;
    for (field, map) in [
        ("spec.labels.matchLabels", &labels.match_labels),
        ("spec.labels.resourceLabels", &labels.resource_labels),
    ] {
        for (key, value) in map.iter().flatten() {
            if let Some(problem) = qualified_name_error(key) {
                report.error(format!(
                    "{field}: {key:?} is not a valid label key: {problem}"
                ));
            }
            if let Some(problem) = label_value_error(value) {
                report.error(format!(
                    "{field}.{key}: {value:?} is not a valid label value: {problem}"
                ));
            }
        }
    }
    for (field, keys) in [
        (
            "spec.labels.processClassLabels",
            &labels.process_class_labels,
        ),
        (
            "spec.labels.processGroupIDLabels",
            &labels.process_group_id_labels,
        ),
    ] {
        for (index, key) in keys.iter().flatten().enumerate() {
            if let Some(problem) = qualified_name_error(key) {
                report.error(format!(
                    "{field}[{index}]: {key:?} is not a valid label key: {problem}"
                ));
            }
        }
    }
}

/// Checks `metadata.name` of a cluster against every name derived from it: the cluster
/// label value, the headless Service (a DNS-1035 label), the pods, PVCs and per-pod
/// Services `<cluster>-<class>-<n>` (63 characters, with room for a 5-digit number), the
/// `<cluster>-config` ConfigMap, and the pods' DNS names in the cluster file.
pub(super) fn check_cluster_name(cluster: &FoundationDBCluster, report: &mut ValidationReport) {
    let field = "metadata.name";
    let Some(name) = cluster.metadata.name.as_deref().filter(|n| !n.is_empty()) else {
        return;
    };
    let spec = &cluster.spec;
    let shown = shown(name);
    let (class, class_length) = longest_class(&classes_run(spec), ProcessClass::dns_name)
        .unwrap_or_else(|| ("storage".to_owned(), "storage".len()));
    let most = MAX_LABEL_LENGTH.saturating_sub(class_length + 2 + PROCESS_GROUP_NUMBER_DIGITS);
    if name.len() > most {
        report.error(format!(
            "{field}: {shown:?} is too long: pod names <cluster>-{class}-<n> would exceed {MAX_LABEL_LENGTH} characters; at most {most} characters"
        ));
        return;
    }
    let services = spec.routing.headless_service()
        || spec.routing.public_ip_source() == PublicIpSource::Service;
    let (problem, needed) = if services {
        (
            dns1035_label_error(name),
            "it names the cluster's Services, so it must be a DNS-1035 label",
        )
    } else {
        (
            dns1123_label_error(name),
            "it is the cluster's label value and starts its pod names, so it must be a DNS-1123 label",
        )
    };
    if let Some(problem) = problem {
        report.error(format!(
            "{field}: {shown:?} is not allowed: {needed}: {problem}"
        ));
        return;
    }
    if let Some(namespace) = cluster.metadata.namespace.as_deref()
        && spec.routing.use_dns_in_cluster_file()
    {
        // <pod>.<cluster>.<namespace>.svc.<domain>, with the longest pod name allowed above.
        let pod = name.len() + 2 + class_length + PROCESS_GROUP_NUMBER_DIGITS;
        let domain = spec.dns_domain();
        let length = pod + 1 + name.len() + 1 + namespace.len() + ".svc.".len() + domain.len();
        if length > MAX_SUBDOMAIN_LENGTH {
            report.error(format!(
                "{field}: {shown:?} is too long for the DNS names in the cluster file: <pod>.<cluster>.{namespace}.svc.{domain} would be {length} characters, more than {MAX_SUBDOMAIN_LENGTH}"
            ));
        }
    }
}

/// A name as shown in an error: cut after 80 characters.
fn shown(name: &str) -> String {
    if name.chars().count() > 80 {
        format!("{}...", name.chars().take(80).collect::<String>())
    } else {
        name.to_owned()
    }
}

/// Checks the name of a backup or restore object whose name starts derived object names
/// (`<backup>-backup-agents`): a DNS-1123 label, short enough for the longest suffix.
pub fn owner_name_errors(field: &str, name: &str, longest_suffix: &str) -> Vec<String> {
    let most = MAX_LABEL_LENGTH.saturating_sub(longest_suffix.len());
    if name.len() > most {
        return vec![format!(
            "{field}: {:?} is too long: <name>{longest_suffix} would exceed {MAX_LABEL_LENGTH} characters; at most {most} characters",
            shown(name)
        )];
    }
    dns1123_label_error(name)
        .map(|problem| format!("{field}: {:?} is not allowed: {problem}", shown(name)))
        .into_iter()
        .collect()
}

#[cfg(test)]
#[path = "names_tests.rs"]
mod tests;
