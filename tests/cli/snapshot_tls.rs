//! Rehearsing a TLS cluster's capture taken without secret values (issue 40): its Secret
//! holds placeholders, not certificates. The run says so up front, puts certificates of
//! its own in their place, and does not judge the placeholders as the cluster's: the
//! take-over reaches Reconciled with nothing replaced (it used to show every sidecar
//! unreachable and the operator replacing the groups, never Reconciled).

use std::process::Command;

use super::repo_file;
use super::serve::Served;

#[test]
fn a_tls_capture_with_placeholders_is_rehearsed_with_the_runs_certificates() {
    let served = Served::start_with(
        &repo_file("docs/examples/quickstart-tls.yaml"),
        &["--speed", "1"],
    );
    let folder = served.dir.path().join("snap");
    let taken = Command::new(env!("CARGO_BIN_EXE_fdb-operator"))
        .args(["snapshot", "sample", "--kubeconfig"])
        .arg(&served.kubeconfig)
        .arg("-o")
        .arg(&folder)
        .output()
        .unwrap();
    assert_eq!(
        taken.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&taken.stderr)
    );
    let live = std::fs::read_to_string(folder.join("live.yaml")).unwrap();
    assert!(
        !live.contains("BEGIN"),
        "a capture without values holds no PEM"
    );
    // A bounded take-over: the placeholders used to keep it from Reconciled for the
    // whole 500-pass budget.
    let scenario = folder.join("scenario.yaml");
    let text = std::fs::read_to_string(&scenario).unwrap();
    assert!(text.contains("- reconcile: {}"), "{text}");
    std::fs::write(
        &scenario,
        text.replace("- reconcile: {}", "- reconcile: {maxPasses: 20}"),
    )
    .unwrap();
    let result_path = served.dir.path().join("rehearsal.json");
    let run = Command::new(env!("CARGO_BIN_EXE_fdb-operator"))
        .args(["simulate", "--quiet", "-o"])
        .arg(&result_path)
        .arg(&scenario)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(
            "warning: the capture's TLS Secret(s) default/fdb-certs hold placeholders"
        ) && first.contains("certificates generated for it"),
        "the notice comes first: {stderr}"
    );
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result_path).unwrap()).unwrap();
    assert_eq!(
        result["steps"][0]["reconciled"], true,
        "{}",
        result["steps"][0]
    );
    let replaced: Vec<&serde_json::Value> = result["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| ["delete", "create", "exclude"].contains(&e["action"].as_str().unwrap_or("")))
        .collect();
    assert!(replaced.is_empty(), "nothing replaced: {replaced:?}");
    let (code, served_result) = served.stop();
    assert_eq!(code, Some(0), "{}", served_result["violations"]);
}
