//! The size of the `<cluster>-config` ConfigMap, estimated from the spec: the API server
//! refuses a ConfigMap whose data (keys and values) exceeds 1 MiB, and a cluster whose
//! ConfigMap cannot be written never gets a new monitor conf, so such a spec is refused
//! at validation, naming what makes it large.

use std::collections::BTreeMap;

use super::ValidationReport;
use crate::api::cluster::FoundationDBClusterSpec;
use crate::cluster_math::desired_process_counts;
use crate::monitor_conf::render::{
    MonitorConfParams, monitor_conf_key, render_monitor_conf, spec_servers_per_pod,
};

/// The most bytes of data (keys plus values, binary values counted decoded) the API
/// server accepts in one ConfigMap (Kubernetes' `MaxConfigMapSize`, 1 MiB).
pub const CONFIG_MAP_SIZE_LIMIT: usize = 1024 * 1024;

/// Room kept for the parts of the ConfigMap the spec does not determine: the cluster
/// file (a connection string of a few hundred bytes), the running version and the
/// cluster's name in the log group (at most 253 characters).
const UNKNOWN_PARTS_ALLOWANCE: usize = 8 * 1024;

/// The size the API server counts for a ConfigMap's data: every key and value of `data`
/// and of `binary_data`.
pub fn config_map_data_size(
    data: &BTreeMap<String, String>,
    binary_data: Option<&BTreeMap<String, k8s_openapi::ByteString>>,
) -> usize {
    let text: usize = data
        .iter()
        .map(|(key, value)| key.len() + value.len())
        .sum();
    let binary: usize = binary_data
        .into_iter()
        .flatten()
        .map(|(key, value)| key.len() + value.0.len())
        .sum();
    text + binary
}

/// Estimated data size of the ConfigMap of a cluster with this spec: the user's data
/// (`spec.configMap`), the trusted CAs, and the monitor conf of every class with
/// processes at the spec's servers per pod (rendered as the operator renders it), plus
/// [`UNKNOWN_PARTS_ALLOWANCE`]. Confs that cannot be rendered count as empty (their
/// values are refused by other checks).
fn estimated_parts(spec: &FoundationDBClusterSpec) -> Vec<(&'static str, usize)> {
    let user = spec.config_map.as_ref();
    let user_data = user.map_or(0, |user| {
        config_map_data_size(
            user.data.as_ref().unwrap_or(&BTreeMap::new()),
            user.binary_data.as_ref(),
        )
    });
    let cas: usize = spec.trusted_cas.iter().map(|ca| ca.len() + 1).sum();
    let mut confs = 0;
    for class in desired_process_counts(spec).positive().into_keys() {
        let servers = spec_servers_per_pod(spec, class);
        let params = MonitorConfParams::for_spec(spec, "", class, servers);
        let rendered = render_monitor_conf(&params).map_or(0, |conf| conf.len());
        confs += monitor_conf_key(class, servers).len() + rendered;
    }
    vec![
        ("spec.configMap", user_data),
        ("spec.trustedCAs", cas),
        // The confs grow with the custom parameters times classes times servers per pod.
        ("spec.processes", confs),
        ("the cluster file and version", UNKNOWN_PARTS_ALLOWANCE),
    ]
}

/// Refuses a spec whose ConfigMap would exceed [`CONFIG_MAP_SIZE_LIMIT`]. Runs last, and
/// only on a spec without other errors: the estimate renders the confs, which is only
/// cheap once the counts, the servers per pod and the custom parameters are within their
/// bounds (a `storageServersPerPod` of 2^31 would otherwise render 2^31 sections).
pub(super) fn check_config_map_size(spec: &FoundationDBClusterSpec, report: &mut ValidationReport) {
    if !report.errors.is_empty() || !super::counts_within_limits(spec) {
        return;
    }
    let parts = estimated_parts(spec);
    let total: usize = parts.iter().map(|(_, size)| size).sum();
    if total <= CONFIG_MAP_SIZE_LIMIT {
        return;
    }
    let breakdown = parts
        .iter()
        .filter(|(_, size)| *size > 0)
        .map(|(what, size)| format!("{what}: {size}"))
        .collect::<Vec<_>>()
        .join(", ");
    let field = parts
        .iter()
        .take(3)
        .max_by_key(|(_, size)| *size)
        .map_or("spec.configMap", |(what, _)| *what);
    report.error(format!(
        "{field}: the cluster's ConfigMap would hold about {total} bytes, more than the API server's limit of {CONFIG_MAP_SIZE_LIMIT} bytes ({breakdown})"
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::validate_cluster_spec;

    fn spec(yaml: &str) -> FoundationDBClusterSpec {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn user_data_and_cas_that_do_not_fit_are_refused_naming_the_field() {
        let big = "x".repeat(600 * 1024);
        let report = validate_cluster_spec(&spec(&format!(
            "version: 7.1.57\nconfigMap: {{data: {{a: {big}, b: {big}}}}}\n"
        )));
        assert!(
            report
                .errors
                .iter()
                .any(|e| e.starts_with("spec.configMap: ")
                    && e.contains("more than the API server's limit of 1048576 bytes")),
            "{:?}",
            report.errors
        );
        let report = validate_cluster_spec(&spec(&format!(
            "version: 7.1.57\ntrustedCAs: [{big}, {big}]\n"
        )));
        assert!(
            report
                .errors
                .iter()
                .any(|e| e.starts_with("spec.trustedCAs: ")),
            "{:?}",
            report.errors
        );
        let report = validate_cluster_spec(&spec(&format!(
            "version: 7.1.57\nconfigMap: {{data: {{a: {big}}}}}\n"
        )));
        assert!(report.is_valid(), "{:?}", report.errors);
    }

    #[test]
    fn huge_densities_are_refused_without_rendering_them() {
        let report = validate_cluster_spec(&spec(
            "version: 7.1.57\nstorageServersPerPod: 2147483647\nlogServersPerPod: 2147483647\n",
        ));
        assert_eq!(report.errors.len(), 2, "{:?}", report.errors);
    }

    #[test]
    fn the_estimate_covers_every_rendered_conf() {
        let spec = spec(
            "version: 7.1.57\nstorageServersPerPod: 4\nprocesses: {general: {customParameters: [knob_a=1]}}\n",
        );
        let parts = estimated_parts(&spec);
        let storage = render_monitor_conf(&MonitorConfParams::for_spec(
            &spec,
            "",
            crate::api::ProcessClass::Storage,
            4,
        ))
        .unwrap();
        assert!(parts[2].1 > storage.len(), "{parts:?}");
    }
}
