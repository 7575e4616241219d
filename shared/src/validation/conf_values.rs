//! Checks of the spec values that land in fdbmonitor.conf (or in the pod environment the
//! sidecar substitutes into it): `logGroup`, `dataCenter`, `dataHall`, the peer
//! verification rules and `faultDomain`. Each must stay on its line, so that a value can
//! never add a `[fdbserver.N]` section (a process the spec does not describe), and must
//! not contain `$`, which the sidecar would read as a variable.

use super::ValidationReport;
use crate::api::cluster::FoundationDBClusterSpec;
use crate::api::cluster::settings::{
    INSTANCE_ID_FAULT_DOMAIN_VALUE_FROM, KUBERNETES_CLUSTER_FAULT_DOMAIN_KEY,
};
use crate::monitor_conf::safe_text::conf_value_problem;
use crate::sidecar::peer_rules::PeerRules;

/// The longest free-text value (log group, peer verification rules) accepted.
pub const MAX_TEXT_LENGTH: usize = 1024;

/// The longest locality value (`dataCenter`, `dataHall`, `faultDomain.value`): these
/// are identifiers, which FoundationDB also prints in status and exclusion lists.
pub const MAX_LOCALITY_LENGTH: usize = 128;

/// The problem of a free-text value written into the conf, if any.
fn text_problem(value: &str) -> Option<String> {
    if value.chars().count() > MAX_TEXT_LENGTH {
        return Some(format!("is longer than {MAX_TEXT_LENGTH} characters"));
    }
    if let Some(problem) = conf_value_problem(value) {
        return Some(problem.to_string());
    }
    value
        .contains('$')
        .then(|| "contains `$`, which the sidecar would substitute as a variable".to_owned())
}

/// The problem of a locality value, if any: 1 to [`MAX_LOCALITY_LENGTH`] ASCII letters,
/// digits, `-`, `_`, `.` or `:`.
fn locality_problem(value: &str) -> Option<String> {
    let valid = !value.is_empty()
        && value.len() <= MAX_LOCALITY_LENGTH
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    (!valid).then(|| {
        format!(
            "{value:?} is not a valid locality (1 to {MAX_LOCALITY_LENGTH} ASCII letters, digits, `-`, `_`, `.` or `:`)"
        )
    })
}

/// Whether `key` is a Kubernetes qualified name (a label key): an optional DNS subdomain
/// prefix and `/`, then 1 to 63 letters, digits, `-`, `_` or `.`, beginning and ending
/// with a letter or digit.
fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let prefix_ok = prefix.is_none_or(|prefix| {
        !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && label.ends_with(|c: char| c.is_ascii_alphanumeric())
                    && label
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            })
    });
    name_ok && prefix_ok
}

/// Whether `path` is a pod field the downward API can put in `FDB_ZONE_ID`.
fn is_pod_field_path(path: &str) -> bool {
    const PLAIN: [&str; 7] = [
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "spec.nodeName",
        "spec.serviceAccountName",
        "status.hostIP",
        "status.podIP",
    ];
    if PLAIN.contains(&path) {
        return true;
    }
    ["metadata.labels['", "metadata.annotations['"]
        .iter()
        .any(|start| {
            path.strip_prefix(start)
                .and_then(|rest| rest.strip_suffix("']"))
                .is_some_and(is_qualified_name)
        })
}

fn check_fault_domain(spec: &FoundationDBClusterSpec, report: &mut ValidationReport) {
    let domain = &spec.fault_domain;
    if let Some(key) = &domain.key
        && !is_qualified_name(key)
    {
        report.error(format!(
            "spec.faultDomain.key: {key:?} is not a valid node label key (an optional DNS prefix and `/`, then up to 63 letters, digits, `-`, `_` or `.`)"
        ));
    }
    if let Some(value) = &domain.value
        && let Some(problem) = locality_problem(value)
    {
        report.error(format!("spec.faultDomain.value: {problem}"));
    }
    if domain.key() == KUBERNETES_CLUSTER_FAULT_DOMAIN_KEY
        && domain.value.as_deref().is_none_or(str::is_empty)
    {
        report.error(format!(
            "spec.faultDomain.value: is required with key {KUBERNETES_CLUSTER_FAULT_DOMAIN_KEY} (the zone of every pod)"
        ));
    }
    if let Some(value_from) = &domain.value_from
        && value_from != INSTANCE_ID_FAULT_DOMAIN_VALUE_FROM
        && !is_pod_field_path(value_from)
    {
        report.error(format!(
            "spec.faultDomain.valueFrom: {value_from:?} is neither {INSTANCE_ID_FAULT_DOMAIN_VALUE_FROM} nor a pod field the operator can read (metadata.name, spec.nodeName, status.hostIP, metadata.labels['KEY'], metadata.annotations['KEY'], ...)"
        ));
    }
}

/// Refuses every spec value that reaches the monitor conf and could not be written there
/// as one plain value, naming the field.
pub(super) fn check_conf_values(spec: &FoundationDBClusterSpec, report: &mut ValidationReport) {
    let texts = [
        ("spec.logGroup", spec.log_group.as_deref()),
        (
            "spec.mainContainer.peerVerificationRules",
            spec.main_container.peer_verification_rules.as_deref(),
        ),
        (
            "spec.sidecarContainer.peerVerificationRules",
            spec.sidecar_container.peer_verification_rules.as_deref(),
        ),
    ];
    for (field, value) in texts {
        if let Some(problem) = value.and_then(text_problem) {
            report.error(format!("{field}: {problem}"));
        }
    }
    // Empty means unset (see `MonitorConfParams::for_spec`).
    let localities = [
        ("spec.dataCenter", spec.data_center.as_deref()),
        ("spec.dataHall", spec.data_hall.as_deref()),
    ];
    for (field, value) in localities {
        if let Some(problem) = value.filter(|v| !v.is_empty()).and_then(locality_problem) {
            report.error(format!("{field}: {problem}"));
        }
    }
    let sidecar = &spec.sidecar_container;
    if sidecar.tls_enabled()
        && let Some(rules) = sidecar.peer_verification_rules.as_deref()
        && let Err(error) = PeerRules::parse(rules)
    {
        // The sidecar gets them as FDB_TLS_VERIFY_PEERS and would refuse to start.
        report.error(format!(
            "spec.sidecarContainer.peerVerificationRules: {error}"
        ));
    }
    check_fault_domain(spec, report);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(yaml: &str) -> Vec<String> {
        let spec: FoundationDBClusterSpec =
            serde_yaml_ng::from_str(&format!("version: 7.1.57\n{yaml}")).unwrap();
        let mut report = ValidationReport::default();
        check_conf_values(&spec, &mut report);
        report.errors
    }

    #[test]
    fn values_with_line_breaks_are_refused_naming_the_field() {
        for (yaml, field) in [
            (r#"logGroup: "g\n[fdbserver.9]""#, "spec.logGroup: "),
            (r#"dataCenter: "dc1\n[fdbserver.9]""#, "spec.dataCenter: "),
            (r#"dataHall: "h\r[x]""#, "spec.dataHall: "),
            (
                r#"mainContainer: {peerVerificationRules: "S.CN=a\n[fdbserver.9]"}"#,
                "spec.mainContainer.peerVerificationRules: ",
            ),
            (
                r#"sidecarContainer: {peerVerificationRules: "S.CN=a\u0000"}"#,
                "spec.sidecarContainer.peerVerificationRules: ",
            ),
            (r#"logGroup: "$FDB_ZONE_ID""#, "spec.logGroup: "),
            (
                r#"faultDomain: {key: foundationdb.org/kubernetes-cluster, value: "z\n[x]"}"#,
                "spec.faultDomain.value: ",
            ),
            (
                "faultDomain: {key: foundationdb.org/kubernetes-cluster}",
                "spec.faultDomain.value: ",
            ),
            (r#"faultDomain: {key: "a b"}"#, "spec.faultDomain.key: "),
            (
                r#"faultDomain: {valueFrom: "metadata.annotations['x\n']"}"#,
                "spec.faultDomain.valueFrom: ",
            ),
            (
                "faultDomain: {valueFrom: $CUSTOM}",
                "spec.faultDomain.valueFrom: ",
            ),
            (
                "sidecarContainer: {enableTls: true, peerVerificationRules: 'S.XX=a'}",
                "spec.sidecarContainer.peerVerificationRules: rule 1",
            ),
        ] {
            let found = errors(yaml);
            assert_eq!(found.len(), 1, "{yaml}: {found:?}");
            assert!(found[0].starts_with(field), "{yaml}: {found:?}");
        }
    }

    #[test]
    fn ordinary_values_pass() {
        assert!(
            errors(
                "logGroup: my-cluster\ndataCenter: us-east-1a\ndataHall: hall.2\nmainContainer: {enableTls: true, peerVerificationRules: 'S.CN=fdb,O=Example Inc;I.CN=ca'}\nfaultDomain: {key: topology.kubernetes.io/zone, valueFrom: \"metadata.labels['topology.kubernetes.io/zone']\"}"
            )
            .is_empty()
        );
        assert!(errors("faultDomain: {key: foundationdb.org/none}").is_empty());
        assert!(
            errors("faultDomain: {key: foundationdb.org/kubernetes-cluster, value: zone-2}")
                .is_empty()
        );
        assert!(errors("dataCenter: ''").is_empty());
        // The Go operator's environment-variable zones (its e2e suite uses them).
        assert!(
            errors("faultDomain: {key: foundationdb.org/instance, valueFrom: $FDB_INSTANCE_ID}")
                .is_empty()
        );
    }
}
