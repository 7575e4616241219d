//! The Go operator's `test_operator_migrations` cases that change how processes are
//! reached (issue 25): turning TLS on and off on a running cluster. The operator migrates
//! as the Go one does: the processes first listen on both kinds of address (TLS first),
//! then the coordinators move to the new kind, then the old address is dropped; the
//! world's processes answer on every address their `public_address` lists, and a
//! coordinator only on the kind it was named by, so a switch of every process at once
//! would lose the coordinators' quorum (`database_is_lost_when_every_process_switches_at_once`).

use fdb_e2e_tests::{run_with, scenario, violated};
use fdb_operator::controller::ExecutorRules;
use fdb_simulation::runner::RunOptions;

use crate::go_e2e::{assert_clean, run_case, violations};

/// The smallest cluster the case needs: the default database (double redundancy, three
/// coordinators) and 1 + 4 + 3 + 8 groups.
const SMALL: &str = crate::go_e2e::SMALL;

/// The coordinators of a step's connection string, as written.
fn coordinators(step: &fdb_simulation::result::StepResult) -> Vec<String> {
    let text = step.fdb["connectionString"].as_str().unwrap();
    let (_, list) = text.split_once('@').unwrap();
    list.split(',').map(str::to_owned).collect()
}

/// Turns TLS to `to` on a reconciled cluster that has it the other way, and checks the
/// Go case's assertion: Reconciled and available at the end, every coordinator of the
/// new kind, no invariant violated (the database never unavailable beyond what the
/// bounces of the migration cost).
fn change_tls(case: &str, from: bool, to: bool) -> fdb_simulation::result::SimulationResult {
    change_tls_and(case, from, to, "")
}

/// [`change_tls`], with `also` (more fields of the spec, after a comma) in the same
/// change.
fn change_tls_and(
    case: &str,
    from: bool,
    to: bool,
    also: &str,
) -> fdb_simulation::result::SimulationResult {
    let spec = format!("{{{SMALL}, mainContainer: {{enableTls: {from}}}}}");
    let steps = format!(
        "  - reconcile: {{}}\n  - apply: {{spec: {{mainContainer: {{enableTls: {to}}}{also}}}}}\n  - expect: {{within: 3600, reconciled: true, available: true}}\n"
    );
    let result = run_case(case, &scenario(&spec, &steps));
    let before = &result.steps[0];
    assert!(
        coordinators(before)
            .iter()
            .all(|c| c.ends_with(":tls") == from),
        "{:?}",
        coordinators(before)
    );
    let after = result.steps.last().unwrap();
    assert!(
        coordinators(after)
            .iter()
            .all(|c| c.ends_with(":tls") == to),
        "the coordinators moved to the new kind: {:?}",
        coordinators(after)
    );
    // The old address is dropped in the end: one address per process, of the new kind.
    for process in after.fdb["processes"].as_array().unwrap() {
        let address = process["address"].as_str().unwrap();
        assert_eq!(address.ends_with(":tls"), to, "{address}");
        let command_line = process["commandLine"].as_str().unwrap();
        assert!(!command_line.contains(','), "{command_line}");
    }
    let required = &after.cluster["status"]["requiredAddresses"];
    assert_eq!(required["tls"].as_bool().unwrap_or(false), to, "{required}");
    assert_eq!(
        required["nonTLS"].as_bool().unwrap_or(false),
        !to,
        "{required}"
    );
    assert_clean(&result);
    result
}

/// test_operator_migrations: "Changing the TLS setting" / "the pod spec stays the same" /
/// "should update the TLS setting and keep the cluster available", from TLS off to on.
#[test]
fn go_e2e_migrations_changing_the_tls_setting_should_turn_tls_on_and_keep_the_cluster_available() {
    let _ = change_tls(
        "go_e2e_migrations_changing_the_tls_setting_should_turn_tls_on_and_keep_the_cluster_available",
        false,
        true,
    );
}

/// The same case the other way: from TLS on to off.
#[test]
fn go_e2e_migrations_changing_the_tls_setting_should_turn_tls_off_and_keep_the_cluster_available() {
    let _ = change_tls(
        "go_e2e_migrations_changing_the_tls_setting_should_turn_tls_off_and_keep_the_cluster_available",
        true,
        false,
    );
}

/// test_operator_migrations: "Changing the TLS setting" / "the pod spec is changed" /
/// "should update the TLS setting and keep the cluster available": TLS turned on and an
/// environment variable added to the log pods' main container in one change. Pod
/// updates wait while `requiredAddresses` holds both kinds (as the Go operator's
/// UpdatePods), and the migration's bounce does not wait for them: the migration
/// finishes, then the log pods are updated, and the cluster reconciles available.
#[test]
fn go_e2e_migrations_changing_the_tls_setting_and_the_pod_spec_should_keep_the_cluster_available() {
    let result = change_tls_and(
        "go_e2e_migrations_changing_the_tls_setting_and_the_pod_spec_should_keep_the_cluster_available",
        false,
        true,
        ", processes: {log: {podTemplate: {spec: {containers: [{name: foundationdb, env: [{name: TESTING_TLS_CHANGE, value: EMPTY}]}]}}}}",
    );
    let end = result.steps.last().unwrap();
    let logs = |step: &fdb_simulation::result::StepResult| -> Vec<String> {
        step.pods
            .iter()
            .filter(|p| p.name.starts_with("sample-log-"))
            .map(|p| p.name.clone())
            .collect()
    };
    // The log groups were replaced (the default ReplaceTransactionSystem) for the new
    // pod spec: none of the first log pods is left.
    let first = logs(&result.steps[0]);
    assert!(!first.is_empty());
    assert!(
        logs(end).iter().all(|pod| !first.contains(pod)),
        "{first:?} then {:?}",
        logs(end)
    );
    for group in end.cluster["status"]["processGroups"].as_array().unwrap() {
        assert!(
            group["processGroupConditions"]
                .as_array()
                .is_none_or(Vec::is_empty),
            "{group}"
        );
    }
}

/// Mutation test: an operator that switches every process to TLS at once (no
/// `requiredAddresses` migration: the monitor conf gets the TLS address only) is caught
/// by the world. The coordinators are still named by their non-TLS addresses, which no
/// process listens on any longer: the quorum is lost for good, far beyond one recovery.
#[test]
fn database_is_lost_when_every_process_switches_at_once() {
    let spec = format!("{{{SMALL}, mainContainer: {{enableTls: false}}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {mainContainer: {enableTls: true}}}\n  - expect: {within: 900, reconciled: true, available: true}\n";
    let result = run_with(
        &scenario(&spec, steps),
        RunOptions {
            executor_rules: ExecutorRules {
                tls_migration: false,
                ..ExecutorRules::default()
            },
            ..RunOptions::default()
        },
    );
    let found = violated(&result);
    assert!(
        found.iter().any(|name| name == "unavailable-by-operator"),
        "{:#?}",
        violations(&result)
    );
    let last = result.steps.last().unwrap();
    assert_eq!(last.fdb["available"], false, "the quorum stays lost");
}

/// test_operator_migrations: "migrating a cluster to make use of DNS in the cluster file"
/// / "should migrate the cluster": `routing.useDNSInClusterFile` turned on for a running
/// cluster written with IPs; the connection string ends up with the DNS names of the
/// pods (the Go case's assertion) and the cluster Reconciled; then, as its AfterEach
/// does, turned off again, back to IPs and Reconciled.
#[test]
fn go_e2e_migrations_migrating_a_cluster_to_make_use_of_dns_in_the_cluster_file() {
    let spec = format!("{{{SMALL}, routing: {{useDNSInClusterFile: false}}}}");
    let steps = "  - reconcile: {}\n  - apply: {spec: {routing: {useDNSInClusterFile: true}}}\n  - expect: {within: 3600, reconciled: true, available: true}\n  - apply: {spec: {routing: {useDNSInClusterFile: false}}}\n  - expect: {within: 3600, reconciled: true, available: true}\n";
    let result = run_case(
        "go_e2e_migrations_migrating_a_cluster_to_make_use_of_dns_in_the_cluster_file",
        &scenario(&spec, steps),
    );
    let dns = |step: &fdb_simulation::result::StepResult| {
        coordinators(step)
            .iter()
            .all(|c| c.contains(".sample.default.svc.cluster.local:"))
    };
    assert!(
        !dns(&result.steps[0]),
        "{:?}",
        coordinators(&result.steps[0])
    );
    assert!(
        dns(&result.steps[2]),
        "{:?}",
        coordinators(&result.steps[2])
    );
    let last = result.steps.last().unwrap();
    assert!(
        coordinators(last).iter().all(|c| c.starts_with("127.")),
        "{:?}",
        coordinators(last)
    );
    assert_clean(&result);
}

/// The Go operator's customization manual, "Customizing labels": a cluster whose
/// `labels.processClassLabels` and `processGroupIDLabels` replace the defaults
/// (`my-class`, `my-instance`) is created and reconciled with its pods found by those
/// labels (the world's `reconciled-but-diverged` judges a Reconciled that does not
/// match the pods), and every pod carries them.
#[test]
fn go_e2e_operator_custom_process_class_and_process_group_id_labels() {
    let spec = format!(
        "{{{SMALL}, labels: {{processClassLabels: [my-class], processGroupIDLabels: [my-instance]}}}}"
    );
    let steps = "  - reconcile: {}\n  - expect: {within: 600, reconciled: true, available: true, pods: 17}\n";
    let result = run_case(
        "go_e2e_operator_custom_process_class_and_process_group_id_labels",
        &scenario(&spec, steps),
    );
    let last = result.steps.last().unwrap();
    for pod in &last.pods {
        let labels = &pod.labels;
        assert!(labels.contains_key("my-class"), "{}: {labels:?}", pod.name);
        assert!(
            labels.contains_key("my-instance"),
            "{}: {labels:?}",
            pod.name
        );
    }
    assert_clean(&result);
}
