//! The command lines of the tools as they receive them: `fdbcli -C FILE --timeout N
//! [--tls_* FILE...] --exec "A; B"`, `fdbbackup SUB [OPTIONS] -C FILE [--tls_*...]` and
//! `fdbrestore SUB [OPTIONS] --dest-cluster-file FILE [--tls_*...]`.

use std::path::PathBuf;

use fdb_operator::fdb::FdbTool;

/// The options every tool takes with one value and the simulation does not need
/// (`fdbcli/fdbcli.actor.cpp` `g_rgOptions`, `fdbbackup/backup.actor.cpp`).
const VALUE_OPTIONS: [&str; 9] = [
    "--tls_certificate_file",
    "--tls_key_file",
    "--tls_ca_file",
    "--tls_verify_peers",
    "--tls_password",
    "--log-dir",
    "--logdir",
    "--trace_format",
    "--memory",
];

/// Options without a value the tools accept.
const FLAGS: [&str; 4] = ["--log", "--no-status", "--debug-tls", "--quiet"];

/// One parsed command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Invocation {
    /// The cluster file (`-C`, `--cluster-file`, `--cluster_file`, `--dest-cluster-file`).
    pub cluster_file: Option<PathBuf>,
    /// fdbcli's `--timeout` (seconds).
    pub timeout: Option<u64>,
    /// fdbcli's `--exec` text.
    pub exec: Option<String>,
    /// The subcommand of fdbbackup/fdbrestore and its own options, in order.
    pub subcommand: Vec<String>,
}

/// Parses `args` of `tool`; `Err` is what the tool prints before exiting 1.
pub fn parse(tool: FdbTool, args: &[String]) -> Result<Invocation, String> {
    let mut invocation = Invocation::default();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let mut value = |name: &str| {
            words
                .next()
                .cloned()
                .ok_or_else(|| format!("ERROR: option `{name}' needs a value\n"))
        };
        match (tool, word.as_str()) {
            (FdbTool::Fdbcli | FdbTool::Fdbbackup, "-C" | "--cluster-file" | "--cluster_file")
            | (FdbTool::Fdbrestore, "--dest-cluster-file" | "--dest_cluster_file") => {
                invocation.cluster_file = Some(PathBuf::from(value(word)?));
            }
            (FdbTool::Fdbcli, "--timeout") => {
                let text = value(word)?;
                invocation.timeout = Some(
                    text.parse()
                        .map_err(|_| format!("ERROR: invalid timeout `{text}'\n"))?,
                );
            }
            (FdbTool::Fdbcli, "--exec") => invocation.exec = Some(value(word)?),
            (_, option) if VALUE_OPTIONS.contains(&option) => {
                value(option)?;
            }
            (_, option) if FLAGS.contains(&option) || option.starts_with("--knob_") => {}
            (FdbTool::Fdbcli, _) => return Err(usage(tool)),
            (_, _) => invocation.subcommand.push(word.clone()),
        }
    }
    if tool == FdbTool::Fdbcli && invocation.timeout.is_some() && invocation.exec.is_none() {
        return Err("ERROR: --timeout may only be specified with --exec\n".to_owned());
    }
    Ok(invocation)
}

/// What a tool prints for arguments it does not take (`printProgramUsage`).
fn usage(tool: FdbTool) -> String {
    format!("Usage: {tool} [OPTIONS]\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &[&str]) -> Vec<String> {
        text.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn the_operators_command_lines_parse() {
        let fdbcli = parse(
            FdbTool::Fdbcli,
            &words(&[
                "-C",
                "/w/f.cluster",
                "--timeout",
                "10",
                "--tls_certificate_file",
                "/c",
                "--tls_key_file",
                "/k",
                "--tls_ca_file",
                "/ca",
                "--exec",
                "status json",
            ]),
        )
        .unwrap();
        assert_eq!(fdbcli.cluster_file, Some(PathBuf::from("/w/f.cluster")));
        assert_eq!(fdbcli.timeout, Some(10));
        assert_eq!(fdbcli.exec.as_deref(), Some("status json"));
        let restore = parse(
            FdbTool::Fdbrestore,
            &words(&[
                "start",
                "-r",
                "blobstore://x",
                "--dest-cluster-file",
                "/w/f",
            ]),
        )
        .unwrap();
        assert_eq!(restore.subcommand, words(&["start", "-r", "blobstore://x"]));
        assert_eq!(restore.cluster_file, Some(PathBuf::from("/w/f")));
        assert!(parse(FdbTool::Fdbcli, &words(&["--exec", "x", "rm"])).is_err());
        assert!(parse(FdbTool::Fdbcli, &words(&["--timeout", "5"])).is_err());
    }
}
