//! The served world and helpers the plugin's integration tests share.

// Test-only: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use fdb_simulation::result::SimulationResult;
use fdb_simulation::runner::{RunOptions, serve_scenario};
use fdb_simulation::scenario::Scenario;
use fdb_simulation::serve::ServeOptions;
use serde_json::Value;

/// A world served on a loopback port from a thread of its own.
pub struct World {
    pub kubeconfig: PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<SimulationResult>>,
    _dir: tempfile::TempDir,
}

impl World {
    pub fn serve(scenario: &str, speed: f64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let scenario = Scenario::parse(scenario, "test").unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let options = ServeOptions {
            address: "127.0.0.1:0".parse().unwrap(),
            kubeconfig: kubeconfig.clone(),
            speed,
            external_operator: false,
            fdb_tools: None,
        };
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime
                .block_on(serve_scenario(
                    &scenario,
                    RunOptions::default(),
                    options,
                    async move {
                        let _ = stopped.await;
                    },
                ))
                .unwrap()
        });
        let started = Instant::now();
        while !kubeconfig.exists() {
            assert!(!thread.is_finished(), "the world stopped before serving");
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "not served after 300 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Self {
            kubeconfig,
            stop: Some(stop),
            thread: Some(thread),
            _dir: dir,
        }
    }

    /// Runs `kubectl-fdb args` (stdin closed: a question is answered "no").
    pub fn plugin(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_kubectl-fdb"))
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// A GET of the served API, as JSON.
    pub fn get(&self, path: &str) -> Value {
        let config = std::fs::read_to_string(&self.kubeconfig).unwrap();
        let server = config
            .lines()
            .find_map(|l| l.trim().strip_prefix("server: http://"))
            .unwrap()
            .to_owned();
        let mut stream = std::net::TcpStream::connect(server).unwrap();
        use std::io::{Read as _, Write as _};
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        let (head, body) = reply.split_once("\r\n\r\n").unwrap();
        let body = if head.to_lowercase().contains("transfer-encoding: chunked") {
            dechunk(body)
        } else {
            body.to_owned()
        };
        serde_json::from_str(&body).unwrap_or(Value::Null)
    }

    pub fn cluster(&self) -> Value {
        self.get(
            "/apis/apps.foundationdb.org/v1beta2/namespaces/default/foundationdbclusters/sample",
        )
    }

    pub fn pods(&self) -> Vec<Value> {
        self.get("/api/v1/namespaces/default/pods")["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Waits (wall clock) until `done` holds.
    pub fn eventually(&self, what: &str, done: impl Fn(&Self) -> bool) {
        let started = Instant::now();
        while !done(self) {
            assert!(
                started.elapsed() < Duration::from_secs(180),
                "never: {what}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    pub fn stop(mut self) -> SimulationResult {
        let _ = self.stop.take().unwrap().send(());
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&tail[..size]);
        rest = &tail[size + 2..];
    }
    out
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn pod<'a>(pods: &'a [Value], name: &str) -> Option<&'a Value> {
    pods.iter().find(|p| p["metadata"]["name"] == name)
}

pub fn live_pod(world: &World, name: &str) -> bool {
    let pods = world.pods();
    pod(&pods, name).is_some_and(|p| {
        p["metadata"]["deletionTimestamp"].is_null() && p["status"]["phase"] == "Running"
    })
}

pub fn group_exists(world: &World, group: &str) -> bool {
    world.cluster()["status"]["processGroups"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|g| g["processGroupID"] == group)
}

pub const CLUSTER: &str = r"
cluster:
  apiVersion: apps.foundationdb.org/v1beta2
  kind: FoundationDBCluster
  metadata: {name: sample, namespace: default}
  spec:
    version: 7.1.57
    databaseConfiguration: {redundancy_mode: double}
    processCounts: {storage: 4, log: 3, stateless: 3, cluster_controller: 1}
    routing: {useDNSInClusterFile: false}
    automationOptions:
      replacements: {enabled: false}
";

pub fn scenario(name: &str, world: &str, steps: &str) -> String {
    format!("name: {name}\nworld: {world}\n{CLUSTER}steps:\n{steps}")
}
