//! Shared helpers of the sidecar tests: temporary pod directories, the real binary as a
//! child process (killed on drop), a raw HTTP/1.1 client (so that odd paths reach the
//! server unnormalized) and certificates generated with rcgen.

#![allow(dead_code)]

pub mod certs;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Primary version written to the version file.
pub const PRIMARY: &str = "7.1.57";
/// Cluster file content in the input dir.
pub const CLUSTER: &str = "test:abcdef@127.0.0.1:4501";
/// Monitor conf template in the input dir.
pub const TEMPLATE: &str = "[fdbserver.1]\ncommand = $BINARY_DIR/fdbserver\npublic_address = $FDB_PUBLIC_IP:4501\nlocality_instance_id = $FDB_INSTANCE_ID\n";

/// A pod's directories in a temporary folder.
pub struct PodDirs {
    /// Keeps the folder alive.
    pub root: tempfile::TempDir,
}

impl PodDirs {
    /// Creates input/output/bin/lib dirs, the version file, a cluster file, a monitor
    /// conf template, fake binaries and libraries.
    pub fn new() -> Self {
        let root = tempfile::tempdir().expect("tempdir");
        let dirs = Self { root };
        for sub in ["in", "out", "bin", "lib"] {
            std::fs::create_dir_all(dirs.path(sub)).expect("mkdir");
        }
        dirs.write("version", &format!("{PRIMARY}\n"));
        dirs.write("in/fdb.cluster", CLUSTER);
        dirs.write("in/fdbmonitor.conf", TEMPLATE);
        dirs.write("bin/fdbserver", &format!("fake fdbserver {PRIMARY}\n"));
        dirs.write("bin/fdbcli", &format!("fake fdbcli {PRIMARY}\n"));
        dirs.write("lib/libfdb_c_7.1.57.so", "lib 7.1.57");
        dirs.write("lib/libfdb_c_6.3.25.so", "lib 6.3.25");
        dirs
    }

    /// Absolute path of `rel` inside the folder.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    /// Writes a file (creating parents).
    pub fn write(&self, rel: &str, content: &str) {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, content).expect("write");
    }

    /// Reads a file.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// The flags pointing the sidecar at these directories.
    pub fn base_args(&self) -> Vec<String> {
        vec![
            "--version-file".into(),
            self.path("version").display().to_string(),
            "--input-dir".into(),
            self.path("in").display().to_string(),
            "--output-dir".into(),
            self.path("out").display().to_string(),
            "--binary-dir".into(),
            self.path("bin").display().to_string(),
            "--library-dir".into(),
            self.path("lib").display().to_string(),
        ]
    }

    /// The usual pod flags: copy the cluster file, render the monitor conf.
    pub fn pod_args(&self) -> Vec<String> {
        let mut args = self.base_args();
        args.extend(
            [
                "--copy-file",
                "fdb.cluster",
                "--input-monitor-conf",
                "fdbmonitor.conf",
                "--copy-binary",
                "fdbserver",
                "--copy-binary",
                "fdbcli",
            ]
            .map(String::from),
        );
        args
    }
}

/// The environment of a test pod.
pub fn pod_env() -> BTreeMap<String, String> {
    [
        ("FDB_POD_IP", "127.0.0.1"),
        ("FDB_INSTANCE_ID", "storage-1"),
        ("HOSTNAME", "pod-1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// Lowercase hex SHA-256.
pub fn sha256(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Path of the binary under test.
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_fdb-sidecar")
}

/// A command for the binary with a clean environment plus `env`.
pub fn command(args: &[String], env: &BTreeMap<String, String>) -> Command {
    let mut command = Command::new(binary());
    command
        .args(args)
        .env_clear()
        .envs(env)
        .env("RUST_LOG", "info");
    command
}

/// The binary running as a child process; killed on drop.
pub struct SidecarProcess {
    child: Child,
    /// The address it listens on.
    pub addr: SocketAddr,
    /// Its log lines so far.
    pub logs: Arc<Mutex<Vec<String>>>,
}

impl SidecarProcess {
    /// Starts the binary on a free loopback port and waits for its "listening" log line.
    pub fn start(mut args: Vec<String>, env: &BTreeMap<String, String>) -> Self {
        args.extend(["--bind-address".to_owned(), "127.0.0.1:0".to_owned()]);
        let mut child = command(&args, env)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn fdb-sidecar");
        let stderr = child.stderr.take().expect("stderr");
        let logs = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let sink = logs.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("listening")
                    && let Some(addr) = line
                        .split("address=")
                        .nth(1)
                        .and_then(|rest| rest.split_whitespace().next())
                {
                    let _ = tx.send(addr.parse::<SocketAddr>().ok());
                }
                sink.lock().expect("logs").push(line);
            }
            let _ = tx.send(None);
        });
        let addr = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(Some(addr)) => addr,
            other => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "sidecar did not start ({other:?}); logs: {:?}",
                    logs.lock().expect("logs")
                );
            }
        };
        Self { child, addr, logs }
    }

    /// Waits for the process to exit (up to 10 s).
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "sidecar did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
    }

    /// The log lines so far, joined.
    pub fn log_text(&self) -> String {
        self.logs.lock().expect("logs").join("\n")
    }
}

impl Drop for SidecarProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response: status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Body text.
    pub body: String,
    /// Raw header block.
    pub headers: String,
}

/// Sends one raw HTTP/1.1 request over `stream` (path sent exactly as given).
pub async fn raw_request<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    method: &str,
    path: &str,
) -> Answer {
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: sidecar\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("write request");
    let mut raw = Vec::new();
    // A TLS peer may close without close_notify; keep what was read.
    let _ = stream.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (headers, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = headers
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    Answer {
        status,
        body: body.to_owned(),
        headers: headers.to_owned(),
    }
}

/// Plain-HTTP request to `addr`.
pub async fn http(addr: SocketAddr, method: &str, path: &str) -> Answer {
    let stream = TcpStream::connect(addr).await.expect("connect");
    raw_request(stream, method, path).await
}

/// Polls `check` every 50 ms for up to `secs` seconds.
pub fn eventually(secs: u64, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    check()
}

/// Mode bits of a file.
pub fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}
