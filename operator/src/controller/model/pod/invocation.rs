//! How a container starts its program, in the forms that start the same processes
//! (for [`super::process_difference`]).
//!
//! - fdbmonitor: this operator runs `fdbmonitor --conffile C --lockfile L`; the Go
//!   operator runs `sh -c "fdbmonitor --conffile C --lockfile L --loggroup G >>
//!   /var/log/fdb-trace-logs/fdbmonitor-$(date '+%Y-%m-%d').log 2>&1"`. Both start the
//!   processes of conf `C`; the log group and the file of fdbmonitor's own output do not
//!   reach them. Only that exact shell form is read: any other shell text (another
//!   command, a pipe, a separator, any other substitution) is not an fdbmonitor
//!   invocation and is compared word for word.
//! - the sidecar: its flags are options (`--copy-file X`, `--init-mode`), read in any
//!   order.

use std::collections::BTreeMap;

/// Where fdbmonitor reads its conf when `--conffile` is not given.
const DEFAULT_CONF_FILE: &str = "/etc/foundationdb/foundationdb.conf";
/// The one command substitution the Go operator's form has (the log file's date).
const DATE_SUBSTITUTION: &str = "$(date '+%Y-%m-%d')";
/// fdbmonitor flags that do not reach the processes it starts.
const OWN_OUTPUT_FLAGS: &[&str] = &["--loggroup"];

/// Whether `word` is plain: no character a shell would read specially.
fn plain(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-=:+,@%".contains(c))
}

/// The conf file and lock file an fdbmonitor invocation (`command` then `args`) runs
/// with, or `None` when the container does not plainly run fdbmonitor.
pub(crate) fn fdbmonitor_invocation(
    command: &[String],
    args: &[String],
) -> Option<BTreeMap<&'static str, String>> {
    let words: Vec<&str> = command.iter().chain(args).map(String::as_str).collect();
    let direct: Vec<String> = match words.as_slice() {
        [shell, "-c", script] if ["sh", "/bin/sh", "bash", "/bin/bash"].contains(shell) => {
            shell_words(script)?
        }
        _ => words.iter().map(|w| (*w).to_owned()).collect(),
    };
    let (program, flags) = direct.split_first()?;
    if program != "fdbmonitor" && !program.ends_with("/fdbmonitor") {
        return None;
    }
    let mut found = BTreeMap::from([
        ("conffile", DEFAULT_CONF_FILE.to_owned()),
        ("lockfile", String::new()),
    ]);
    let mut iter = flags.iter();
    while let Some(flag) = iter.next() {
        let (name, value) = match flag.split_once('=') {
            Some((name, value)) => (name, value.to_owned()),
            None => (flag.as_str(), iter.next()?.clone()),
        };
        match name {
            "--conffile" => found.insert("conffile", value),
            "--lockfile" => found.insert("lockfile", value),
            name if OWN_OUTPUT_FLAGS.contains(&name) => None,
            _ => return None,
        };
    }
    Some(found)
}

/// The words of `script` when it is plain words, optionally followed by `>> FILE 2>&1`
/// (FILE plain but for the date substitution); `None` for any other shell text.
fn shell_words(script: &str) -> Option<Vec<String>> {
    let (head, tail) = match script.split_once(">>") {
        Some((head, tail)) => (head, Some(tail)),
        None => (script, None),
    };
    let words: Vec<String> = head.split_whitespace().map(str::to_owned).collect();
    if !words.iter().all(|w| plain(w)) {
        return None;
    }
    if let Some(tail) = tail {
        let tail = tail.trim();
        let file = tail.strip_suffix("2>&1").unwrap_or(tail).trim();
        if !plain(&file.replace(DATE_SUBSTITUTION, "date")) {
            return None;
        }
    }
    Some(words)
}

/// A sidecar's flags as a set of (flag, value) pairs, in a fixed order.
pub(crate) fn flag_set(args: &[String]) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut iter = args.iter().peekable();
    while let Some(word) = iter.next() {
        if let Some((flag, value)) = word.split_once('=').filter(|_| word.starts_with("--")) {
            pairs.push((flag.to_owned(), value.to_owned()));
            continue;
        }
        let value = match iter.peek() {
            Some(next) if word.starts_with("--") && !next.starts_with("--") => {
                iter.next().cloned().unwrap_or_default()
            }
            _ => String::new(),
        };
        pairs.push((word.clone(), value));
    }
    pairs.sort();
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &[&str]) -> Vec<String> {
        text.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn the_go_operators_shell_form_runs_the_same_fdbmonitor() {
        let ours = fdbmonitor_invocation(
            &words(&[
                "fdbmonitor",
                "--conffile",
                "/var/dynamic-conf/fdbmonitor.conf",
                "--lockfile",
                "/var/dynamic-conf/fdbmonitor.lockfile",
            ]),
            &[],
        );
        let go = fdbmonitor_invocation(
            &words(&["sh", "-c"]),
            &words(&[
                "fdbmonitor --conffile /var/dynamic-conf/fdbmonitor.conf --lockfile \
                 /var/dynamic-conf/fdbmonitor.lockfile --loggroup sample >> \
                 /var/log/fdb-trace-logs/fdbmonitor-$(date '+%Y-%m-%d').log 2>&1",
            ]),
        );
        assert!(ours.is_some());
        assert_eq!(ours, go);
    }

    #[test]
    fn other_shell_text_or_another_conf_is_not_the_same() {
        let other_conf = fdbmonitor_invocation(
            &words(&["sh", "-c"]),
            &words(&["fdbmonitor --conffile /other.conf"]),
        );
        assert_eq!(other_conf.unwrap()["conffile"], "/other.conf");
        for script in [
            "fdbmonitor --conffile /a.conf; rm -rf /var/fdb/data",
            "fdbmonitor --conffile /a.conf >> /x.log; reboot",
            "fdbmonitor --conffile $(cat /x)",
            "fdbmonitor --conffile /a.conf >> $(rm -rf /).log",
            "fdbmonitor --conffile /a.conf --knob_x 1",
            "other --conffile /a.conf",
        ] {
            assert_eq!(
                fdbmonitor_invocation(&words(&["sh", "-c"]), &words(&[script])),
                None,
                "{script}"
            );
        }
    }

    #[test]
    fn sidecar_flags_are_read_in_any_order() {
        let ours = words(&["--init-mode", "--copy-file", "fdb.cluster", "--tls"]);
        let go = words(&["--copy-file", "fdb.cluster", "--tls", "--init-mode"]);
        assert_eq!(flag_set(&ours), flag_set(&go));
        let other = words(&["--copy-file", "fdb.cluster", "--init-mode"]);
        assert_ne!(flag_set(&ours), flag_set(&other));
    }
}
