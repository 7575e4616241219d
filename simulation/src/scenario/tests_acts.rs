//! Tests of the `act` steps that run a user's commands: `kubectlFdb` and `exec`.

use super::tests::{invalid_field, parse};
use super::*;

#[test]
fn kubectl_fdb_acts_are_a_user_s_command_line_against_the_world() {
    let scenario = parse(
        "steps:\n  - act: {as: user, kubectlFdb: [fix-coordinator-ips, -c, sample, --yes]}\n",
    )
    .unwrap();
    let Step::Act { actor, action, .. } = &scenario.steps()[0] else {
        panic!("{:?}", scenario.steps()[0])
    };
    assert_eq!(*actor, Actor::User);
    assert_eq!(
        *action,
        Action::KubectlFdb(vec![
            "fix-coordinator-ips".into(),
            "-c".into(),
            "sample".into(),
            "--yes".into()
        ])
    );
    for (body, field, words) in [
        (
            "steps:\n  - act: {as: operator, kubectlFdb: [analyze, sample]}\n",
            "steps[0].act.kubectlFdb",
            "runs as a user",
        ),
        (
            "steps:\n  - act: {as: user, kubectlFdb: []}\n",
            "steps[0].act.kubectlFdb",
            "must name a command",
        ),
        (
            "steps:\n  - act: {as: user, kubectlFdb: [analyze, --kubeconfig=/x, sample]}\n",
            "steps[0].act.kubectlFdb",
            "its own kubeconfig",
        ),
        (
            "steps:\n  - act: {as: user, kubectlFdb: [--context, prod, analyze]}\n",
            "steps[0].act.kubectlFdb",
            "its own kubeconfig",
        ),
        (
            "steps:\n  - act: {as: user, cluster: sample, kubectlFdb: [analyze, sample]}\n",
            "steps[0].act.cluster",
            "-c NAME",
        ),
        (
            "steps:\n  - act: {as: user, kubectlFdb: [analyze], includeAll: true}\n",
            "steps[0].act",
            "kubectlFdb",
        ),
    ] {
        let (found, message) = invalid_field(parse(body));
        assert_eq!(found, field, "{body}: {message}");
        assert!(message.contains(words), "{body}: {message}");
    }
}

#[test]
fn exec_acts_are_a_user_s_command_in_a_pod_or_a_deployment_s_pod() {
    let scenario = parse(
        "steps:\n  - act: {as: user, exec: {target: deployment/sample-backup-agents, container: foundationdb, command: [fdbbackup, describe], exitCode: 1}}\n",
    )
    .unwrap();
    let Step::Act { action, .. } = &scenario.steps()[0] else {
        panic!("{:?}", scenario.steps()[0])
    };
    assert_eq!(
        *action,
        Action::Exec(crate::scenario::ExecCommand {
            target: crate::scenario::ExecTarget::Deployment("sample-backup-agents".into()),
            container: Some("foundationdb".into()),
            command: vec!["fdbbackup".into(), "describe".into()],
            exit_code: 1,
            output_contains: None,
        })
    );
    for (body, field, words) in [
        (
            "steps:\n  - act: {as: operator, exec: {target: pod/sample-storage-1, command: [ls]}}\n",
            "steps[0].act.exec",
            "runs as a user",
        ),
        (
            "steps:\n  - act: {as: user, exec: {target: sample-storage-1, command: [ls]}}\n",
            "steps[0].act.exec.target",
            "pod/<name> or deployment/<name>",
        ),
        (
            "steps:\n  - act: {as: user, exec: {target: service/sample, command: [ls]}}\n",
            "steps[0].act.exec.target",
            "not a kind exec runs in",
        ),
        (
            "steps:\n  - act: {as: user, exec: {target: pod/sample-storage-1, command: []}}\n",
            "steps[0].act.exec.command",
            "must name a program",
        ),
        (
            "steps:\n  - act: {as: user, exec: {target: pod/other-storage-1, command: [ls]}}\n",
            "steps[0].act.exec.target",
            "",
        ),
    ] {
        let (found, message) = invalid_field(parse(body));
        assert_eq!(found, field, "{body}: {message}");
        assert!(message.contains(words), "{body}: {message}");
    }
}
