//! Tests of the served world's `pods/exec`: request parsing, and what a simulated
//! container runs.

use super::*;
use crate::world::container_files::ContainerFiles;
use crate::world::containers::ContainerFs;

#[test]
fn exec_paths_and_repeated_commands_are_parsed() {
    let request = parse_request(
        "/api/v1/namespaces/db/pods/sample-log-1/exec",
        Some("command=fdbcli&command=--exec&command=kill%3B+kill+127.0.0.1%3A4501&container=foundationdb&stdout=true"),
    )
    .unwrap();
    assert_eq!(request.namespace, "db");
    assert_eq!(request.pod, "sample-log-1");
    assert_eq!(request.container.as_deref(), Some("foundationdb"));
    assert_eq!(
        request.command,
        ["fdbcli", "--exec", "kill; kill 127.0.0.1:4501"]
    );
    assert!(!request.stdin);
    let piped = parse_request(
        "/api/v1/namespaces/db/pods/p/exec",
        Some("command=fdbcli&stdin=true&stdout=true"),
    )
    .unwrap();
    assert!(piped.stdin);
    assert!(parse_request("/api/v1/namespaces/db/pods/p/log", None).is_none());
}

#[test]
fn fdbcli_is_found_directly_or_in_a_shell() {
    let argv = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        fdbcli_text(&argv(&["fdbcli", "-C", "f", "--exec", "status json"])),
        Some(Ok("status json".to_owned()))
    );
    assert_eq!(
        fdbcli_text(&argv(&[
            "bash",
            "-c",
            "fdbcli --exec 'kill; kill 1.2.3.4:4501'"
        ])),
        Some(Ok("kill; kill 1.2.3.4:4501".to_owned()))
    );
    // A second command after fdbcli refuses the whole text.
    for script in [
        "fdbcli --exec X ; rm -rf /",
        "fdbcli --exec X && rm",
        "fdbcli --exec X rm -rf /",
    ] {
        assert!(
            matches!(fdbcli_text(&argv(&["sh", "-c", script])), Some(Err(_))),
            "{script}"
        );
    }
    assert_eq!(fdbcli_text(&argv(&["ls", "-l"])), None);
    assert_eq!(
        fdbcli_text(&argv(&["sh", "-c", "fdbcli --exec 'unterminated"])),
        None
    );
}

/// A database of one process (127.0.0.1:4501, its coordinator) on 7.1.57, configured
/// `single memory` (its quorum is enough to list and kill processes).
async fn one_process_database() -> (crate::fdb::SimulatedFdb, fdb_operator::clock::VirtualClock) {
    let clock = fdb_operator::clock::VirtualClock::fixed_epoch();
    let fdb = one_process_database_at(&clock, "127.0.0.1", "t:x").await;
    (fdb, clock)
}

/// [`one_process_database`] with its process on `host`, its connection string
/// `ID@host:4501`.
async fn one_process_database_at(
    clock: &fdb_operator::clock::VirtualClock,
    host: &str,
    id: &str,
) -> crate::fdb::SimulatedFdb {
    use fdb_shared::api::{DatabaseConfiguration, ProcessClass, RedundancyMode, StorageEngine};
    let fdb = crate::fdb::SimulatedFdb::new(Arc::new(clock.clone()), Default::default());
    fdb.start_process(crate::fdb::ProcessLaunch {
        address: format!("{host}:4501").parse().unwrap(),
        other_addresses: Vec::new(),
        command_line: "/usr/bin/fdbserver --class=storage".into(),
        class: ProcessClass::Storage,
        locality: [("instance_id".to_owned(), "storage-1".to_owned())].into(),
        version: "7.1.57".parse().unwrap(),
        cluster_file_contents: format!("{id}@{host}:4501\n"),
        pod: "p".into(),
        data_identity: "pvc:db/p/data".into(),
        coordination_file: None,
    });
    let single = DatabaseConfiguration {
        redundancy_mode: Some(RedundancyMode::Single),
        storage_engine: Some(StorageEngine::from("memory")),
        ..Default::default()
    };
    fdb.configure(&single, true).await.unwrap();
    clock.advance_seconds(10);
    fdb
}

/// In a world with a fleet, a pod's fdbcli reaches the database its cluster file
/// (`FDB_CLUSTER_FILE`) names, as a real container's does: the member's pod its own,
/// the first cluster's pod the first's.
#[tokio::test]
async fn a_fleet_members_pod_reaches_its_own_database() {
    let clock = fdb_operator::clock::VirtualClock::fixed_epoch();
    let first = one_process_database_at(&clock, "127.0.0.1", "t:x").await;
    let member = one_process_database_at(&clock, "127.0.0.2", "u:y").await;
    let root = tempfile::tempdir().unwrap();
    let containers = ContainerFiles::default();
    for (uid, connection) in [("u1", "t:x@127.0.0.1:4501"), ("u2", "u:y@127.0.0.2:4501")] {
        let conf = root.path().join(uid).join("conf");
        std::fs::create_dir_all(&conf).unwrap();
        std::fs::write(conf.join("fdb.cluster"), format!("{connection}\n")).unwrap();
        let mounts = vec![(std::path::PathBuf::from("/var/dynamic-conf"), conf)];
        let image = root.path().join(uid).join("image");
        containers.insert(uid, ContainerFs::new(root.path().to_owned(), image, mounts));
    }
    let exec = SimulatedExec {
        api: FakeApiServer::new(Arc::new(clock), 1),
        admin: Arc::new(first.clone()),
        fdb: first,
        fleet: vec![crate::serve::exec_database::ExecDatabase {
            description: "u".to_owned(),
            admin: Arc::new(member.clone()),
            fdb: member,
        }],
        on_change: Arc::new(|| {}),
        container_files: containers,
        turn: Arc::default(),
    };
    let pod = |uid: &str| {
        json!({"metadata": {"name": "p", "uid": uid}, "spec": {"containers": [
            {"name": "foundationdb", "env": [
                {"name": "FDB_CLUSTER_FILE", "value": "/var/dynamic-conf/fdb.cluster"}]}]}})
    };
    let request = ExecRequest {
        namespace: "db".into(),
        pod: "p".into(),
        container: None,
        command: ["fdbcli", "--exec", "status json"]
            .iter()
            .map(|w| (*w).to_owned())
            .collect(),
        stdin: false,
        tty: false,
    };
    for (uid, connection) in [("u1", "t:x@127.0.0.1:4501"), ("u2", "u:y@127.0.0.2:4501")] {
        let status = exec.execute(&pod(uid), &request, "").await;
        assert_eq!(status.exit_code, 0, "{status:?}");
        let document: Value = serde_json::from_str(&status.stdout).unwrap();
        assert_eq!(
            document["cluster"]["connection_string"], connection,
            "pod {uid}"
        );
    }
}

#[tokio::test]
async fn files_are_written_from_positional_arguments_and_read_back_per_pod() {
    let (fdb, clock) = one_process_database().await;
    // Two running pods, each with its own data volume.
    let root = tempfile::tempdir().unwrap();
    let containers = ContainerFiles::default();
    for uid in ["u1", "u2"] {
        let data = root.path().join(uid).join("data");
        std::fs::create_dir_all(&data).unwrap();
        let mounts = vec![(std::path::PathBuf::from("/var/fdb/data"), data)];
        let image = root.path().join(uid).join("image");
        containers.insert(uid, ContainerFs::new(root.path().to_owned(), image, mounts));
    }
    let exec = SimulatedExec {
        api: FakeApiServer::new(Arc::new(clock), 1),
        admin: Arc::new(fdb.clone()),
        fdb,
        fleet: Vec::new(),
        on_change: Arc::new(|| {}),
        container_files: containers.clone(),
        turn: Arc::default(),
    };
    let pod = |uid: &str| json!({"metadata": {"name": "p", "uid": uid}});
    let request = |command: &[&str]| ExecRequest {
        namespace: "db".into(),
        pod: "p".into(),
        container: None,
        command: command.iter().map(|w| (*w).to_owned()).collect(),
        stdin: false,
        tty: false,
    };
    // The value is an argument: quotes and separators in it stay in the file.
    let value = "a:b@1.2.3.4:4501 && rm -rf / ; '$2'";
    let write = request(&[
        "sh",
        "-c",
        "printf '%s\\n' \"$1\" > /var/fdb/data/fdb.cluster",
        "name",
        value,
    ]);
    let written = exec.execute(&pod("u1"), &write, "").await;
    assert_eq!(written, ExecOutput::default());
    let read = request(&["cat", "/var/fdb/data/fdb.cluster"]);
    let out = exec.execute(&pod("u1"), &read, "").await;
    assert_eq!(out.stdout, format!("{value}\n"));
    // Another pod (or the same name recreated) has no such file.
    let other = exec.execute(&pod("u2"), &read, "").await;
    assert_eq!(other.exit_code, 1);
    // A positional argument that was not given fails, as does an unknown command.
    let missing = request(&["sh", "-c", "printf '%s\\n' \"$2\" > /f", "name", "x"]);
    assert_eq!(exec.execute(&pod("u1"), &missing, "").await.exit_code, 1);
    // A chain with an unsupported part is refused whole: nothing of it runs.
    let unknown = request(&["sh", "-c", "cat /var/fdb/data/fdb.cluster && ls", "name"]);
    let chained = exec.execute(&pod("u1"), &unknown, "").await;
    assert_eq!((chained.stdout.as_str(), chained.exit_code), ("", 127));
    assert!(chained.stderr.contains("nothing ran"), "{}", chained.stderr);
    let overwrite = request(&[
        "sh",
        "-c",
        "printf '%s\\n' \"$1\" > /var/fdb/data/fdb.cluster && rm -rf /",
        "name",
        "changed",
    ]);
    assert_eq!(
        exec.execute(&pod("u1"), &overwrite, "").await.exit_code,
        127
    );
    let out = exec.execute(&pod("u1"), &read, "").await;
    assert_eq!(out.stdout, format!("{value}\n"), "the first part ran");
    // fdbcli followed by another command in a shell: refused, not run.
    for script in [
        "fdbcli --exec 'status json' ; rm -rf /",
        "fdbcli --exec 'status json' | sh",
    ] {
        let out = exec
            .execute(&pod("u1"), &request(&["sh", "-c", script]), "")
            .await;
        assert_eq!((out.stdout.as_str(), out.exit_code), ("", 127), "{script}");
    }
    // fdbcli without --exec runs the lines of its standard input.
    let fdbcli = request(&["fdbcli"]);
    let out = exec.execute(&pod("u1"), &fdbcli, "status json\n").await;
    assert_eq!(out.exit_code, 0, "{out:?}");
    let document: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(document["cluster"]["processes"].is_object(), "{document}");
}

/// Issue 36: the container's fdbcli is FoundationDB's: `kill` of an address the
/// cluster controller does not list refuses the whole command, nothing is killed, and
/// it exits 1 (apple/foundationdb `fdbcli/KillCommand.actor.cpp`); an unknown command is
/// fdbcli's own error, never a silent success.
#[tokio::test]
async fn kill_of_an_unlisted_address_prints_foundationdbs_refusal() {
    let (fdb, clock) = one_process_database().await;
    let log = crate::event_log::EventLog::new(Arc::new(clock.clone()));
    let exec = SimulatedExec {
        api: FakeApiServer::new(Arc::new(clock), 1),
        admin: Arc::new(crate::recording_admin::RecordingAdmin::for_user(
            Arc::new(fdb.clone()),
            log.clone(),
        )),
        fdb,
        fleet: Vec::new(),
        on_change: Arc::new(|| {}),
        container_files: ContainerFiles::default(),
        turn: Arc::default(),
    };
    let run = |command: &[&str]| ExecRequest {
        namespace: "db".into(),
        pod: "p".into(),
        container: None,
        command: command.iter().map(|w| (*w).to_owned()).collect(),
        stdin: false,
        tty: false,
    };
    let pod = json!({"metadata": {"name": "p", "uid": "u"}});
    let refused = exec
        .execute(
            &pod,
            &run(&["fdbcli", "--exec", "kill; kill 10.99.99.99:4501"]),
            "",
        )
        .await;
    assert_eq!(refused.exit_code, 1, "{refused:?}");
    assert_eq!(
        refused.stderr,
        "ERROR: process `10.99.99.99:4501' not recognized.\n"
    );
    assert!(
        refused
            .stdout
            .contains("The following address can be killed:\n127.0.0.1:4501\n"),
        "{refused:?}"
    );
    assert!(
        log.events().iter().all(|e| e.action != "kill"),
        "nothing killed"
    );
    let unknown = exec
        .execute(&pod, &run(&["sh", "-c", "fdbcli --exec 'frobnicate'"]), "")
        .await;
    assert_eq!(
        (unknown.exit_code, unknown.stderr.as_str()),
        (1, "ERROR: Unknown command `frobnicate'. Try `help'?\n")
    );
}

#[tokio::test]
async fn standard_input_is_capped() {
    use futures::SinkExt as _;
    let (client, server) = tokio::io::duplex(64 * 1024);
    let reader = tokio::spawn(async move {
        let mut socket = tokio_tungstenite::WebSocketStream::from_raw_socket(
            server,
            Role::Server,
            Some(websocket_config()),
        )
        .await;
        read_stdin(&mut socket).await
    });
    let mut socket =
        tokio_tungstenite::WebSocketStream::from_raw_socket(client, Role::Client, None).await;
    // Many small messages, together above the cap.
    let chunk = [&[0u8][..], &vec![b'x'; 64 * 1024]].concat();
    for _ in 0..(MAX_EXEC_STDIN / (64 * 1024) + 2) {
        if socket.send(Message::binary(chunk.clone())).await.is_err() {
            break;
        }
    }
    let _ = socket.send(Message::binary(vec![255u8, 0])).await;
    assert_eq!(reader.await.unwrap(), None);
    // One message above the cap.
    let (client, server) = tokio::io::duplex(64 * 1024);
    let reader = tokio::spawn(async move {
        let mut socket = tokio_tungstenite::WebSocketStream::from_raw_socket(
            server,
            Role::Server,
            Some(websocket_config()),
        )
        .await;
        read_stdin(&mut socket).await
    });
    let mut socket =
        tokio_tungstenite::WebSocketStream::from_raw_socket(client, Role::Client, None).await;
    let _ = socket
        .send(Message::binary(vec![0u8; MAX_EXEC_STDIN + 4096]))
        .await;
    assert_eq!(reader.await.unwrap(), None);
}

#[tokio::test]
async fn a_users_kill_is_the_users_even_while_the_operator_acts_or_has_crashed() {
    let (fdb, clock) = one_process_database().await;
    let clock: Arc<dyn fdb_operator::clock::Clock> = Arc::new(clock);
    let log = crate::event_log::EventLog::new(clock.clone());
    // The log's actor is the operator's (a pass is running), and it has crashed.
    log.arm_crash("kill");
    log.record(crate::result::EventSource::Fdb, "kill", "database", "kill");
    assert!(log.operator_crashed());
    let exec = SimulatedExec {
        api: FakeApiServer::new(clock, 1),
        admin: Arc::new(crate::recording_admin::RecordingAdmin::for_user(
            Arc::new(fdb.clone()),
            log.clone(),
        )),
        fdb,
        fleet: Vec::new(),
        on_change: Arc::new(|| {}),
        container_files: ContainerFiles::default(),
        turn: Arc::default(),
    };
    let request = ExecRequest {
        namespace: "db".into(),
        pod: "p".into(),
        container: None,
        command: ["fdbcli", "--exec", "kill; kill 127.0.0.1:4501"]
            .map(str::to_owned)
            .to_vec(),
        stdin: false,
        tty: false,
    };
    let out = exec
        .execute(
            &json!({"metadata": {"name": "p", "uid": "u"}}),
            &request,
            "",
        )
        .await;
    // Not refused for the operator's crash: the process is killed.
    assert_eq!(out.exit_code, 0, "{out:?}");
    assert!(
        out.stdout.contains("Attempted to kill 1 processes"),
        "{out:?}"
    );
    let events = log.events();
    let kill = events.last().unwrap();
    assert!(kill.detail.starts_with("kill 127.0.0.1:4501"), "{kill:?}");
    assert_eq!(kill.by.as_deref(), Some("user"), "{kill:?}");
}

/// `kubectl exec deploy/NAME-backup-agents -- fdbbackup describe|expire ...`, as the Go
/// runbooks run it, reaches the simulated fdbbackup of the database's version (its
/// texts are tested in `fdbcli/tests/expiry.rs`).
#[tokio::test]
async fn an_agent_pods_fdbbackup_runs_the_simulated_tool() {
    let (fdb, clock) = one_process_database().await;
    let exec = SimulatedExec {
        api: FakeApiServer::new(Arc::new(clock), 1),
        admin: Arc::new(fdb.clone()),
        fdb,
        fleet: Vec::new(),
        on_change: Arc::new(|| {}),
        container_files: ContainerFiles::default(),
        turn: Arc::default(),
    };
    let pod = json!({"metadata": {"name": "agents", "uid": "a1"}});
    let run = |words: &[&str]| ExecRequest {
        namespace: "db".into(),
        pod: "agents".into(),
        container: None,
        command: words.iter().map(|w| (*w).to_owned()).collect(),
        stdin: false,
        tty: false,
    };
    let url = "blobstore://a@b:443/c?bucket=fdb-backups";
    let describe = run(&["fdbbackup", "describe", "-d", url, "--json"]);
    let out = exec.execute(&pod, &describe, "").await;
    assert_eq!(
        (out.exit_code, out.stderr.as_str()),
        (1, "ERROR: Backup does not exist\n"),
        "{out:?}"
    );
    let expire = run(&["fdbbackup", "expire", "-d", url]);
    let out = exec.execute(&pod, &expire, "").await;
    assert!(
        out.stderr
            .starts_with("ERROR: No version or date/time is specified."),
        "{out:?}"
    );
}

/// Copying a coordinator's state files as `kubectl fdb recover-multi-region-cluster`
/// does: `find` locates them, `base64` reads them out, `base64 -d > "$1"` writes the
/// standard input into another pod's data directory.
#[tokio::test]
async fn files_are_found_read_out_and_written_from_standard_input() {
    let (fdb, clock) = one_process_database().await;
    let root = tempfile::tempdir().unwrap();
    let containers = ContainerFiles::default();
    for uid in ["u1", "u2"] {
        let data = root.path().join(uid).join("data");
        std::fs::create_dir_all(data.join("1")).unwrap();
        let mounts = vec![(std::path::PathBuf::from("/var/fdb/data"), data)];
        let image = root.path().join(uid).join("image");
        containers.insert(uid, ContainerFs::new(root.path().to_owned(), image, mounts));
    }
    let state = "FoundationDB coordinated state\n\u{1}binary-ish\n";
    std::fs::write(root.path().join("u1/data/1/coordination-0.fdq"), state).unwrap();
    // A symlink below the directory is not followed (the file it leads to is not found).
    let outside = root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("coordination-0.fdq"), "elsewhere").unwrap();
    std::os::unix::fs::symlink(&outside, root.path().join("u2/data/link")).unwrap();
    let exec = SimulatedExec {
        api: FakeApiServer::new(Arc::new(clock), 1),
        admin: Arc::new(fdb.clone()),
        fdb,
        fleet: Vec::new(),
        on_change: Arc::new(|| {}),
        container_files: containers,
        turn: Arc::default(),
    };
    let pod = |uid: &str| json!({"metadata": {"name": "p", "uid": uid}});
    let request = |command: &[&str]| ExecRequest {
        namespace: "db".into(),
        pod: "p".into(),
        container: None,
        command: command.iter().map(|w| (*w).to_owned()).collect(),
        stdin: true,
        tty: false,
    };
    let find = |dir: &str, name: &str| {
        request(&["find", dir, "-type", "f", "-name", name, "-print", "-quit"])
    };
    let found = exec
        .execute(&pod("u1"), &find("/var/fdb/data", "coordination-0.fdq"), "")
        .await;
    assert_eq!(found.stdout, "/var/fdb/data/1/coordination-0.fdq\n");
    let none = exec
        .execute(&pod("u2"), &find("/var/fdb/data", "coordination-0.fdq"), "")
        .await;
    assert_eq!((none.stdout.as_str(), none.exit_code), ("", 0));
    let missing = exec
        .execute(&pod("u2"), &find("/var/fdb/nothing", "x"), "")
        .await;
    assert_eq!(missing.exit_code, 1);
    let glob = exec
        .execute(&pod("u1"), &find("/var/fdb/data", "coord*"), "")
        .await;
    assert_eq!(glob.exit_code, 127);
    let read = request(&["base64", "/var/fdb/data/1/coordination-0.fdq"]);
    let encoded = exec.execute(&pod("u1"), &read, "").await;
    assert_eq!(encoded.exit_code, 0, "{encoded:?}");
    let target = "/var/fdb/data/1/coordination-0.fdq";
    let upload = request(&["sh", "-c", "base64 -d > \"$1\"", "sh", target]);
    let written = exec.execute(&pod("u2"), &upload, &encoded.stdout).await;
    assert_eq!(written, ExecOutput::default());
    let copy = std::fs::read_to_string(root.path().join("u2/data/1/coordination-0.fdq")).unwrap();
    assert_eq!(copy, state);
    // Input that is not base64 writes nothing.
    let bad = request(&["sh", "-c", "base64 -d > /var/fdb/data/x", "sh"]);
    assert_eq!(exec.execute(&pod("u2"), &bad, "%%%").await.exit_code, 1);
    assert!(!root.path().join("u2/data/x").exists());
}
