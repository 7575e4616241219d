//! A fleet (issue 36 item 5): several FoundationDBClusters, each its own database,
//! reconciled by one operator with one set of tools. The world records which tool of
//! which version ran each command on which database (`toolRuns`), and a tool of another
//! protocol reaches nothing, so one tool for every cluster cannot pass.

use fdb_e2e_tests::run_file;
use fdb_simulation::result::{EventSource, SimulationResult, ToolRunRecord};

/// The tool runs on the database of `cluster`.
fn runs_on<'a>(result: &'a SimulationResult, cluster: &str) -> Vec<&'a ToolRunRecord> {
    result
        .tool_runs
        .iter()
        .filter(|run| run.database == cluster)
        .collect()
}

fn minor(run: &ToolRunRecord) -> &str {
    run.version.rsplit_once('.').map_or("", |(minor, _)| minor)
}

#[test]
fn a_fleet_of_a_71_and_a_73_cluster_runs_every_command_with_its_databases_tool() {
    let result = run_file("fleet/upgrade-one.yaml", None);
    let violations: Vec<String> = result
        .violations
        .iter()
        .map(|v| format!("{}: {}", v.invariant, v.detail))
        .collect();
    assert!(violations.is_empty(), "{violations:#?}");

    // f73 was only ever spoken to with the 7.3 tools, and every command reached it.
    let f73 = runs_on(&result, "f73");
    assert!(
        f73.iter()
            .any(|run| run.command.starts_with("configure new")),
        "{f73:#?}"
    );
    let wrong: Vec<_> = f73
        .iter()
        .filter(|run| minor(run) != "7.3" || (!run.reached && run.command != "status json"))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");

    // f71 with 7.1 until its upgrade's kill (run with the 7.1 tool: the processes
    // still spoke 7.1), with 7.3 after it; no command of its went unanswered.
    let f71 = runs_on(&result, "f71");
    assert!(
        f71.iter()
            .any(|run| run.command.starts_with("configure new")),
        "{f71:#?}"
    );
    let kill = f71
        .iter()
        .position(|run| {
            run.command.contains("kill")
                && run.exit_code == 0
                && minor(run) == "7.1"
                && run.step >= 1
        })
        .unwrap_or_else(|| panic!("no upgrade kill on f71: {f71:#?}"));
    let before: Vec<_> = f71[..=kill]
        .iter()
        .filter(|run| minor(run) != "7.1")
        .collect();
    assert!(before.is_empty(), "{before:#?}");
    // After it, a status read with the running version's tool may go unanswered (the
    // processes restarted on 7.3), and the operator retries with the target's, as Go
    // does; everything that reached the database was 7.3's.
    let after: Vec<_> = f71[kill + 1..]
        .iter()
        .filter(|run| minor(run) != "7.3" && (run.reached || run.command != "status json"))
        .collect();
    assert!(after.is_empty(), "{after:#?}");
    assert!(
        !f71[kill + 1..].is_empty(),
        "nothing ran on f71 after the kill"
    );
    let unanswered: Vec<_> = f71
        .iter()
        .filter(|run| !run.reached && run.command != "status json")
        .collect();
    assert!(unanswered.is_empty(), "{unanswered:#?}");

    // One operator: its admin commands on each database are recorded for that cluster.
    for cluster in ["f71", "f73"] {
        assert!(
            result.events.iter().any(|e| e.source == EventSource::Fdb
                && e.action == "configure"
                && e.issuer.as_deref() == Some(cluster)),
            "no configure issued for {cluster}"
        );
    }
    let last = result.steps.last().unwrap();
    assert_eq!(last.cluster["status"]["runningVersion"], "7.3.43");
}
