//! `fdb-operator served-tool` (hidden): what the stand-in FoundationDB tools of a served
//! world run (`simulate --fdb-tools-dir`, `fdb_simulation::serve::tool_files`). It reads
//! the cluster file its arguments name, as the real tool would, and posts the tool's
//! name, version, arguments and `FDB_*` environment to the served world, then prints
//! what the world answers and exits with its status.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use fdb_simulation::serve::tool_files::WorldFile;
use fdb_simulation::serve::tools::{MAX_CLUSTER_FILE, TOOLS_PATH, ToolReply, ToolRequest};

/// The longest a tool run may take before the stand-in gives up (the operator's own
/// timeouts are shorter).
const REPLY_TIMEOUT: Duration = Duration::from_secs(600);
/// The largest reply read (a `status json` of a big cluster is a few MiB).
const MAX_REPLY: u64 = 64 << 20;

/// Arguments of `fdb-operator served-tool`.
#[derive(Debug, Args)]
pub struct ServedToolArgs {
    /// The world file of the tools directory (`DIR/served-world.json`).
    #[arg(long, value_name = "FILE")]
    pub world: PathBuf,
    /// The minor version of this stand-in (`7.1`).
    #[arg(long, value_name = "MINOR")]
    pub fdb_version: String,
    /// `fdbcli`, `fdbbackup` or `fdbrestore`.
    #[arg(long)]
    pub tool: String,
    /// The tool's own arguments, as it got them.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// Runs one stand-in tool; its exit status is the world's answer's.
pub fn run(args: &ServedToolArgs) -> ExitCode {
    match ask_the_world(args) {
        Ok((reply, cluster_file)) => {
            if let (Some(text), Some(path)) = (&reply.cluster_file, &cluster_file) {
                // fdbcli rewrites its cluster file after a coordinators change.
                if let Err(error) = std::fs::write(path, text) {
                    eprintln!(
                        "WARNING: could not rewrite the cluster file `{}': {error}",
                        path.display()
                    );
                }
            }
            let _ = std::io::stdout().lock().write_all(reply.stdout.as_bytes());
            let _ = std::io::stderr().lock().write_all(reply.stderr.as_bytes());
            ExitCode::from(u8::try_from(reply.exit_code).unwrap_or(1))
        }
        Err(message) => {
            eprintln!(
                "{} (stand-in of a served simulated world): {message}",
                args.tool
            );
            ExitCode::from(1)
        }
    }
}

/// The world's answer, and the cluster file the arguments name.
fn ask_the_world(args: &ServedToolArgs) -> Result<(ToolReply, Option<PathBuf>), String> {
    let world: WorldFile = serde_json::from_str(&read_bounded(&args.world, 4096)?)
        .map_err(|e| format!("{} is not a served world's file: {e}", args.world.display()))?;
    if !world.address.ip().is_loopback() {
        return Err(format!(
            "{} names a non-loopback address",
            args.world.display()
        ));
    }
    let path = cluster_file_path(&args.args);
    let cluster_file = match &path {
        Some(path) => Some(read_bounded(path, MAX_CLUSTER_FILE as u64).map_err(|e| {
            format!(
                "ERROR: unable to read the cluster file `{}': {e}",
                path.display()
            )
        })?),
        None => None,
    };
    let env: BTreeMap<String, String> = std::env::vars()
        .filter(|(name, _)| name.starts_with("FDB_"))
        .take(64)
        .collect();
    let request = ToolRequest {
        tool: args.tool.clone(),
        version: args.fdb_version.clone(),
        args: args.args.clone(),
        env,
        cluster_file,
    };
    let body = serde_json::to_vec(&request).map_err(|e| e.to_string())?;
    let reply = post(world.address, &body)?;
    let reply = serde_json::from_slice(&reply)
        .map_err(|e| format!("the served world's answer is not a tool reply: {e}"))?;
    Ok((reply, path))
}

/// The cluster file the arguments name (`-C F`, `--cluster-file F`, `--cluster_file F`,
/// fdbrestore's `--dest-cluster-file F`, or `--flag=F`), else `FDB_CLUSTER_FILE`.
fn cluster_file_path(args: &[String]) -> Option<PathBuf> {
    const FLAGS: [&str; 5] = [
        "-C",
        "--cluster-file",
        "--cluster_file",
        "--dest-cluster-file",
        "--dest_cluster_file",
    ];
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if FLAGS.contains(&word.as_str()) {
            return words.next().map(PathBuf::from);
        }
        if let Some((flag, value)) = word.split_once('=')
            && FLAGS.contains(&flag)
        {
            return Some(PathBuf::from(value));
        }
    }
    std::env::var_os("FDB_CLUSTER_FILE").map(PathBuf::from)
}

fn read_bounded(path: &Path, limit: u64) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut text = String::new();
    file.take(limit + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > limit {
        return Err(format!("{} is larger than {limit} bytes", path.display()));
    }
    Ok(text)
}

/// One `POST TOOLS_PATH` over a fresh connection; the reply's body.
fn post(address: std::net::SocketAddr, body: &[u8]) -> Result<Vec<u8>, String> {
    let unreachable =
        |e: std::io::Error| format!("the served world at {address} does not answer: {e}");
    let mut stream = std::net::TcpStream::connect_timeout(&address, Duration::from_secs(10))
        .map_err(unreachable)?;
    stream
        .set_read_timeout(Some(REPLY_TIMEOUT))
        .map_err(unreachable)?;
    let head = format!(
        "POST {TOOLS_PATH} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).map_err(unreachable)?;
    stream.write_all(body).map_err(unreachable)?;
    let mut reply = Vec::new();
    stream
        .take(MAX_REPLY)
        .read_to_end(&mut reply)
        .map_err(unreachable)?;
    let Some(split) = reply.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Err("the served world's answer has no HTTP head".to_owned());
    };
    let head = String::from_utf8_lossy(&reply[..split]);
    if !head.starts_with("HTTP/1.1 200") {
        let line = head.lines().next().unwrap_or_default().to_owned();
        return Err(format!("the served world refused the tool request: {line}"));
    }
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return Err(
            "the served world answered in chunks, which the stand-in does not read".to_owned(),
        );
    }
    Ok(reply[split + 4..].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn the_cluster_file_is_found_as_the_real_tools_take_it() {
        assert_eq!(
            cluster_file_path(&words("-C /w/c.cluster --timeout 10 --exec status")),
            Some(PathBuf::from("/w/c.cluster"))
        );
        assert_eq!(
            cluster_file_path(&words("start -d blobstore://x --dest-cluster-file /w/d")),
            Some(PathBuf::from("/w/d"))
        );
        assert_eq!(
            cluster_file_path(&words("--cluster_file=/w/e")),
            Some(PathBuf::from("/w/e"))
        );
    }
}
