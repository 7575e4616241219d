//! The global operator lock (issue 10): with locks in use, an operator whose lock ID is
//! on the deny list changes nothing in the database until `allow: true` removes it.

use fdb_e2e_tests::run_file;
use fdb_operator::simulation::result::{EventSource, SimulationResult};

/// `(step, detail)` of every `fdb` event of `action`.
fn admin_events<'a>(result: &'a SimulationResult, action: &str) -> Vec<(usize, &'a str)> {
    result
        .events
        .iter()
        .filter(|e| e.source == EventSource::Fdb && e.action == action)
        .map(|e| (e.step, e.detail.as_str()))
        .collect()
}

#[test]
fn a_denied_lock_id_cannot_configure_the_database_until_allowed_again() {
    let result = run_file("locks/denied-lock-id.yaml", None);
    assert!(result.violations.is_empty(), "{:?}", result.violations);
    let configures = admin_events(&result, "configure");
    assert_eq!(configures.len(), 2, "{configures:?}");
    assert!(
        configures[0].1.starts_with("configure new"),
        "{configures:?}"
    );
    // The change waited for the whole denial (steps 2-5) and went through after allow.
    assert_eq!(configures[1].0, 6, "{configures:?}");
    assert!(configures[1].1.contains("logs=4"), "{configures:?}");
    let denied = &result.steps[4];
    assert_eq!(denied.fdb["configuration"]["logs"], 3);
    assert_eq!(
        denied.cluster["status"]["generations"]["needsConfigurationChange"],
        2
    );
    let lock_commands: Vec<&str> = admin_events(&result, "lock")
        .into_iter()
        .map(|(_, detail)| detail)
        .collect();
    assert_eq!(lock_commands[0], "deny list +[dc1] -[]");
    assert_eq!(lock_commands[1], "deny list +[] -[dc1]");
    // No lock was taken while denied.
    assert!(
        admin_events(&result, "lock")
            .iter()
            .all(|(step, detail)| !detail.starts_with("lock dc1") || *step == 6)
    );
    let last = result.steps.last().unwrap();
    assert_eq!(last.fdb["configuration"]["logs"], 4);
}
