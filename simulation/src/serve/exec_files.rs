//! The file commands of a served container that copying files in and out needs (the Go
//! runbook "Recover Lost Quorum Of Coordinators" copies the coordinators' state files;
//! `kubectl fdb recover-multi-region-cluster` does it with these):
//! - `find DIR -type f -name NAME -print -quit`: the first regular file named NAME
//!   below DIR, symlinks not followed, entries in name order;
//! - `base64 PATH`: the file, base64-encoded in lines of 76 characters (GNU coreutils);
//! - `base64 -d > PATH` (in `sh -c`, PATH possibly a positional `$N`): standard input
//!   decoded into the file.
//!
//! Each runs inside the container's filesystem (`world/container_files.rs`), whose host
//! paths stay in the world's root. Any other form is not run (exit 127).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::exec::{ExecOutput, SimulatedExec};

/// GNU base64's line length.
const LINE: usize = 76;

impl SimulatedExec {
    /// Runs `find ...` or `base64 ...` in the container of the pod with `uid`.
    pub(super) fn file_command(
        &self,
        uid: &str,
        words: &[&str],
        arguments: &[String],
        stdin: &str,
    ) -> ExecOutput {
        match words {
            ["find", dir, "-type", "f", "-name", name, "-print", "-quit"]
                if !name.contains(['*', '?', '[', '/']) =>
            {
                match self.container_files.find_first(uid, dir, name) {
                    Ok(Some(path)) => ExecOutput {
                        stdout: format!("{path}\n"),
                        ..ExecOutput::default()
                    },
                    Ok(None) => ExecOutput::default(),
                    Err(error) => ExecOutput::failed(1, format!("find: {error}\n")),
                }
            }
            ["base64", path] if path.starts_with('/') => {
                match self.container_files.read(uid, path) {
                    Ok(Some(text)) => ExecOutput {
                        stdout: encode_lines(text.as_bytes()),
                        ..ExecOutput::default()
                    },
                    Ok(None) => ExecOutput::failed(
                        1,
                        format!("base64: {path}: No such file or directory\n"),
                    ),
                    Err(error) => ExecOutput::failed(1, format!("base64: {error}\n")),
                }
            }
            ["base64", "-d", ">", target] => {
                let Some(path) = positional(target, arguments) else {
                    return ExecOutput::failed(
                        1,
                        format!("sh: {target}: not a positional argument or an absolute path\n"),
                    );
                };
                let compact: String = stdin.chars().filter(|c| !c.is_whitespace()).collect();
                let Ok(bytes) = STANDARD.decode(compact) else {
                    return ExecOutput::failed(1, "base64: invalid input\n");
                };
                match self.container_files.write(uid, path, bytes) {
                    Ok(()) => ExecOutput::default(),
                    Err(error) => ExecOutput::failed(1, format!("sh: {error}\n")),
                }
            }
            _ => ExecOutput::failed(
                127,
                format!(
                    "{}: only `find DIR -type f -name NAME -print -quit`, `base64 PATH` and \
                     `base64 -d > PATH` are run by the simulated container\n",
                    words.join(" ")
                ),
            ),
        }
    }
}

/// `$N` as the N-th positional argument, or an absolute path as itself.
fn positional<'a>(target: &'a str, arguments: &'a [String]) -> Option<&'a str> {
    if target.starts_with('/') {
        return Some(target);
    }
    let index = target
        .strip_prefix('$')?
        .parse::<usize>()
        .ok()?
        .checked_sub(1)?;
    arguments
        .get(index)
        .map(String::as_str)
        .filter(|path| path.starts_with('/'))
}

/// `bytes` in base64, 76 characters a line, each line ended.
fn encode_lines(bytes: &[u8]) -> String {
    let encoded = STANDARD.encode(bytes);
    let mut text = String::with_capacity(encoded.len() + encoded.len() / LINE + 1);
    for chunk in encoded.as_bytes().chunks(LINE) {
        text.push_str(&String::from_utf8_lossy(chunk));
        text.push('\n');
    }
    text
}
