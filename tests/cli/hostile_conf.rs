//! `explain` on specs that try to reach fdbmonitor.conf or to make the operator act in a
//! storm: each is refused (exit 1, the manifest is invalid) with the field named.

use super::fdb_operator;

const CLUSTER: &str = "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata:\n  name: sample\nspec:\n  version: 7.1.57\n";

/// Runs `explain` on the cluster with `spec` appended (indented under `spec:`); returns
/// the exit code and the errors it printed.
fn explain_errors(spec: &str) -> (Option<i32>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, format!("{CLUSTER}{spec}")).unwrap();
    let output = fdb_operator(&["explain", "-f", path.to_str().unwrap()]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("no JSON: {}", String::from_utf8_lossy(&output.stderr)));
    let errors = json["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("no errors in {json}"))
        .iter()
        .map(|error| error.as_str().unwrap_or_default().to_owned())
        .collect();
    (output.status.code(), errors)
}

fn assert_refused(spec: &str, field: &str, needle: &str) {
    let (code, errors) = explain_errors(spec);
    assert_eq!(code, Some(1), "{spec}: {errors:?}");
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with(&format!("{field}: ")) && e.contains(needle)),
        "{spec}: no error on {field} mentioning {needle:?} in {errors:?}"
    );
}

#[test]
fn newlines_that_would_add_conf_sections_are_refused() {
    let section = r"\n[fdbserver.9]\ncommand = /bin/sh";
    for (spec, field) in [
        (
            format!("  processes: {{general: {{customParameters: [\"knob_a=1{section}\"]}}}}\n"),
            "spec.processes.general.customParameters[0]",
        ),
        (format!("  logGroup: \"g{section}\"\n"), "spec.logGroup"),
        (
            format!("  dataCenter: \"dc1{section}\"\n"),
            "spec.dataCenter",
        ),
        (format!("  dataHall: \"h{section}\"\n"), "spec.dataHall"),
        (
            format!(
                "  mainContainer: {{enableTls: true, peerVerificationRules: \"S.CN=a{section}\"}}\n"
            ),
            "spec.mainContainer.peerVerificationRules",
        ),
        (
            format!("  sidecarContainer: {{peerVerificationRules: \"S.CN=a{section}\"}}\n"),
            "spec.sidecarContainer.peerVerificationRules",
        ),
        (
            format!(
                "  faultDomain: {{key: foundationdb.org/kubernetes-cluster, value: \"z{section}\"}}\n"
            ),
            "spec.faultDomain.value",
        ),
    ] {
        let needle = if field.ends_with("customParameters[0]")
            || field.contains("Container")
            || field == "spec.logGroup"
        {
            "line break"
        } else {
            "not a valid locality"
        };
        assert_refused(&spec, field, needle);
    }
}

#[test]
fn custom_parameters_cannot_set_keys_the_operator_owns() {
    for key in [
        "command",
        "public_address",
        "class",
        "locality_zoneid",
        "COMMAND",
    ] {
        assert_refused(
            &format!("  processes: {{storage: {{customParameters: [\"{key}=x\"]}}}}\n"),
            "spec.processes.storage.customParameters[0]",
            "managed by the operator",
        );
    }
}

#[test]
fn out_of_bounds_numbers_are_refused() {
    // Any failureDetectionTimeSeconds Go takes is legal (its e2e uses 30); beyond ten
    // years is a unit mistake.
    assert_refused(
        "  automationOptions: {replacements: {failureDetectionTimeSeconds: 315360001}}\n",
        "spec.automationOptions.replacements.failureDetectionTimeSeconds",
        "is above 315360000",
    );
    assert_refused(
        "  routing: {podIPFamily: 7}\n",
        "spec.routing.podIPFamily",
        "4 or 6",
    );
    assert_refused(
        "  storageServersPerPod: 64\n",
        "spec.storageServersPerPod",
        "above 16",
    );
}

/// 80,000 repeated custom parameters (24 s of quadratic validation before): refused as
/// too many, with a bounded list of errors.
#[test]
fn a_huge_custom_parameter_list_is_refused_briefly() {
    let mut spec = String::from("  processes:\n    general:\n      customParameters:\n");
    for _ in 0..80_000 {
        spec.push_str("        - knob_a=1\n");
    }
    let (code, errors) = explain_errors(&spec);
    assert_eq!(code, Some(1));
    assert_eq!(
        errors[0],
        "spec.processes.general.customParameters: 80000 entries, at most 100 are allowed"
    );
    assert!(errors.len() <= 25, "{} errors", errors.len());
    assert!(
        errors
            .iter()
            .any(|e| e == "spec.processes.general.customParameters: 79979 more invalid entries"),
        "{errors:?}"
    );
}
