//! Parses an fdbmonitor conf (INI) and derives each process's command line exactly as
//! FoundationDB reports it in `status json` (`command_line`).
//!
//! fdbmonitor gives every `[fdbserver.N]` section the keys of `[fdbserver]` and
//! `[general]`, the more specific section winning. Keys that configure fdbmonitor itself
//! (`command`, `restart_delay`, `kill_on_configuration_change`, ...) are not passed to the
//! process. The reported command line is `<command> --key=value ...` with keys sorted.

use std::collections::BTreeMap;

/// Keys that fdbmonitor consumes itself and never passes to the process.
pub const MONITOR_ONLY_KEYS: &[&str] = &[
    "command",
    "restart_delay",
    "initial_restart_delay",
    "restart_backoff",
    "restart_delay_reset_interval",
    "disable_lifecycle_logging",
    "delete_envvars",
    "kill_on_configuration_change",
    "envvars",
    "user",
    "group",
];

/// The section whose keys every fdbserver process inherits.
const SERVER_SECTION: &str = "fdbserver";
/// The section whose keys every process and fdbmonitor inherit.
const GENERAL_SECTION: &str = "general";

/// One `[section]` of the conf, keys in file order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConfSection {
    /// Section name without brackets (`fdbserver.1`).
    pub name: String,
    /// `key = value` entries; a repeated key keeps its last value.
    pub entries: BTreeMap<String, String>,
}

/// A parsed fdbmonitor conf.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MonitorConf {
    /// The sections in file order.
    pub sections: Vec<ConfSection>,
}

/// What fdbmonitor would start for one `[fdbserver.N]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessCommand {
    /// The section's number `N`.
    pub process_number: u32,
    /// The binary (`command`), e.g. `/usr/bin/fdbserver`.
    pub command: String,
    /// The arguments (`--key=value`), by key.
    pub arguments: BTreeMap<String, String>,
}

/// Why a monitor conf could not be parsed or a command line derived.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MonitorConfError {
    /// A line is neither a section header, a `key = value`, a comment nor blank.
    #[error("monitor conf line {line}: {text:?} is not a section, `key = value` or comment")]
    InvalidLine {
        /// 1-based line number.
        line: usize,
        /// The line's text.
        text: String,
    },
    /// A `key = value` line before any section header.
    #[error("monitor conf line {line}: key {key:?} appears before any [section]")]
    KeyOutsideSection {
        /// 1-based line number.
        line: usize,
        /// The key.
        key: String,
    },
    /// A `[fdbserver.N]` section whose `N` is not a positive number.
    #[error("monitor conf section [{section}]: the process number is not a positive integer")]
    InvalidProcessNumber {
        /// The section name.
        section: String,
    },
    /// No `command` for a process section (neither in it nor inherited).
    #[error("monitor conf section [{section}]: no `command` is set for the process")]
    MissingCommand {
        /// The section name.
        section: String,
    },
}

impl MonitorConf {
    /// Parses the INI text: `[section]` headers, `key = value` lines, `#` and `;` comment
    /// lines, blank lines.
    pub fn parse(text: &str) -> Result<Self, MonitorConfError> {
        let mut sections: Vec<ConfSection> = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line_number = index + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if let Some(header) = line.strip_prefix('[') {
                let name = header
                    .strip_suffix(']')
                    .map(str::trim)
                    .filter(|name| !name.is_empty() && !name.contains('[') && !name.contains(']'));
                let Some(name) = name else {
                    return Err(MonitorConfError::InvalidLine {
                        line: line_number,
                        text: raw.to_owned(),
                    });
                };
                sections.push(ConfSection {
                    name: name.to_owned(),
                    entries: BTreeMap::new(),
                });
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                return Err(MonitorConfError::InvalidLine {
                    line: line_number,
                    text: raw.to_owned(),
                });
            };
            let key = key.trim();
            if key.is_empty() || key.contains(char::is_whitespace) {
                return Err(MonitorConfError::InvalidLine {
                    line: line_number,
                    text: raw.to_owned(),
                });
            }
            let Some(section) = sections.last_mut() else {
                return Err(MonitorConfError::KeyOutsideSection {
                    line: line_number,
                    key: key.to_owned(),
                });
            };
            section
                .entries
                .insert(key.to_owned(), value.trim().to_owned());
        }
        Ok(Self { sections })
    }

    /// The section of that name (the last one if repeated).
    pub fn section(&self, name: &str) -> Option<&ConfSection> {
        self.sections
            .iter()
            .rev()
            .find(|section| section.name == name)
    }

    /// The value a key has for a section after inheritance (section, then `[fdbserver]`,
    /// then `[general]`).
    fn inherited<'a>(&'a self, section: &'a ConfSection, key: &str) -> Option<&'a String> {
        section
            .entries
            .get(key)
            .or_else(|| self.section(SERVER_SECTION)?.entries.get(key))
            .or_else(|| self.section(GENERAL_SECTION)?.entries.get(key))
    }

    /// The processes fdbmonitor starts, one per `[fdbserver.N]` section, ordered by `N`.
    pub fn processes(&self) -> Result<Vec<ProcessCommand>, MonitorConfError> {
        let mut processes = Vec::new();
        for section in &self.sections {
            let Some(number) = section
                .name
                .strip_prefix(SERVER_SECTION)
                .and_then(|rest| rest.strip_prefix('.'))
            else {
                continue;
            };
            let process_number = number
                .parse::<u32>()
                .ok()
                .filter(|n| *n > 0 && number.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| MonitorConfError::InvalidProcessNumber {
                    section: section.name.clone(),
                })?;
            if processes
                .iter()
                .any(|p: &ProcessCommand| p.process_number == process_number)
            {
                continue;
            }
            let section = self.section(&section.name).unwrap_or(section);
            let command = self.inherited(section, "command").cloned().ok_or_else(|| {
                MonitorConfError::MissingCommand {
                    section: section.name.clone(),
                }
            })?;
            let mut arguments = BTreeMap::new();
            let inherited_sections = [
                Some(section),
                self.section(SERVER_SECTION),
                self.section(GENERAL_SECTION),
            ];
            for source in inherited_sections.into_iter().flatten() {
                for key in source.entries.keys() {
                    if MONITOR_ONLY_KEYS.contains(&key.as_str()) || arguments.contains_key(key) {
                        continue;
                    }
                    if let Some(value) = self.inherited(section, key) {
                        arguments.insert(key.clone(), value.clone());
                    }
                }
            }
            processes.push(ProcessCommand {
                process_number,
                command,
                arguments,
            });
        }
        processes.sort_by_key(|process| process.process_number);
        Ok(processes)
    }
}

impl ProcessCommand {
    /// The command line as `status json` reports it: the binary, then `--key=value` for
    /// every argument, keys sorted, separated by single spaces.
    pub fn command_line(&self) -> String {
        let mut line = self.command.clone();
        for (key, value) in &self.arguments {
            line.push_str(" --");
            line.push_str(key);
            line.push('=');
            line.push_str(value);
        }
        line
    }
}

/// Parses a conf and returns each process's command line, by process number.
pub fn command_lines(text: &str) -> Result<BTreeMap<u32, String>, MonitorConfError> {
    Ok(MonitorConf::parse(text)?
        .processes()?
        .into_iter()
        .map(|process| (process.process_number, process.command_line()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The conf that produced the log process in `status-7.1.0-rc1.json`, values
    /// substituted.
    const LOG_CONF: &str = "[general]
kill_on_configuration_change = false
restart_delay = 60
[fdbserver.1]
command = /usr/bin/fdbserver
cluster_file = /var/fdb/data/fdb.cluster
seed_cluster_file = /var/dynamic-conf/fdb.cluster
public_address = 10.1.19.2:4501
class = log
logdir = /var/log/fdb-trace-logs
loggroup = test-cluster
datadir = /var/fdb/data
locality_instance_id = log-3
locality_machineid = test-cluster-log-3
locality_zoneid = test-cluster-log-3
listen_address = 10.1.19.2:4501
knob_disable_posix_kernel_aio = 1
";

    #[test]
    fn command_line_matches_the_real_capture() {
        let lines = command_lines(LOG_CONF).unwrap();
        assert_eq!(
            lines[&1],
            "/usr/bin/fdbserver --class=log --cluster_file=/var/fdb/data/fdb.cluster --datadir=/var/fdb/data --knob_disable_posix_kernel_aio=1 --listen_address=10.1.19.2:4501 --locality_instance_id=log-3 --locality_machineid=test-cluster-log-3 --locality_zoneid=test-cluster-log-3 --logdir=/var/log/fdb-trace-logs --loggroup=test-cluster --public_address=10.1.19.2:4501 --seed_cluster_file=/var/dynamic-conf/fdb.cluster"
        );
    }

    #[test]
    fn sections_inherit_and_override() {
        let conf = "# shared\n[general]\nrestart_delay = 10\ntrace_format = json\n[fdbserver]\ncommand = /bin/fdbserver\nclass = storage\n; two processes\n[fdbserver.2]\ndatadir = /d/2\n[fdbserver.1]\ndatadir = /d/1\nclass = log\n";
        let lines = command_lines(conf).unwrap();
        assert_eq!(
            lines.into_iter().collect::<Vec<_>>(),
            vec![
                (
                    1,
                    "/bin/fdbserver --class=log --datadir=/d/1 --trace_format=json".to_owned()
                ),
                (
                    2,
                    "/bin/fdbserver --class=storage --datadir=/d/2 --trace_format=json".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn errors_name_the_line_or_section() {
        let error = MonitorConf::parse("[general]\nnot a pair\n").unwrap_err();
        assert!(error.to_string().contains("line 2"), "{error}");
        let error = MonitorConf::parse("key = value\n").unwrap_err();
        assert!(error.to_string().contains("before any"), "{error}");
        let error = command_lines("[fdbserver.x]\ncommand = a\n").unwrap_err();
        assert!(error.to_string().contains("[fdbserver.x]"), "{error}");
        let error = command_lines("[fdbserver.1]\nclass = log\n").unwrap_err();
        assert!(error.to_string().contains("no `command`"), "{error}");
        assert!(
            command_lines("").unwrap().is_empty(),
            "an empty conf starts nothing"
        );
    }
}
