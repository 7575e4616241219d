//! The main container's fdbmonitor: reads the conf the sidecar rendered and keeps one
//! simulated fdbserver process per `[fdbserver.N]` section.
//!
//! Like fdbmonitor with `kill_on_configuration_change = false`, a changed conf never
//! restarts a running process: new sections start, removed sections stop, and a killed
//! process restarts from the *current* conf and binary. (With
//! `kill_on_configuration_change = true` a changed section is restarted.) A missing conf
//! means no processes. A section that cannot start (missing binary, no cluster file,
//! bad address) is recorded and retried at every settle.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use fdb_shared::address::ProcessAddress;
use fdb_shared::api::ProcessClass;
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::monitor_conf::parse::{MonitorConf, ProcessCommand};

use super::confine;
use super::containers::{ContainerFs, binary_version};
use super::error::WorldError;
use super::host::{ProcessHost, ProcessLaunch};
use super::unified_monitor::UnifiedMonitor;
use crate::fdb::COORDINATION_FILES;

/// Where the main container's volumes come from, for data identities.
#[derive(Debug, Clone)]
pub struct MonitorContext {
    /// The pod's name.
    pub pod: String,
    /// The main container's filesystem.
    pub fs: ContainerFs,
    /// The conf file on the host (`<output dir>/fdbmonitor.conf`).
    pub conf_path: PathBuf,
    /// Container mount paths with the identity of the volume mounted there
    /// (`pvc:<ns>/<claim>@<uid>`, `emptyDir:<pod uid>/<volume>`).
    pub volume_identities: Vec<(PathBuf, String)>,
}

/// A process this fdbmonitor started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitoredProcess {
    /// What it was started with.
    pub launch: ProcessLaunch,
    /// The host path of its cluster file.
    pub cluster_file: PathBuf,
    /// The host path of its data directory (`None` for a relative `datadir`).
    pub data_dir: Option<PathBuf>,
}

/// What one reconcile of the monitor did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MonitorChanges {
    /// Addresses started.
    pub started: Vec<String>,
    /// Addresses stopped.
    pub stopped: Vec<String>,
    /// Sections that could not start, with why.
    pub failed: Vec<String>,
}

impl MonitorChanges {
    /// Whether anything started or stopped.
    pub fn any(&self) -> bool {
        !self.started.is_empty() || !self.stopped.is_empty()
    }

    fn merge(&mut self, other: MonitorChanges) {
        self.started.extend(other.started);
        self.stopped.extend(other.stopped);
        self.failed.extend(other.failed);
    }
}

/// The connection strings of the world's databases, parsed once per round, by
/// description (two databases may share one: clusters of the same name in two
/// namespaces).
#[derive(Debug, Default)]
pub struct CurrentConnectionStrings {
    by_description: BTreeMap<String, Vec<(String, String)>>,
}

impl CurrentConnectionStrings {
    /// Parses `strings` (unparsable ones are left out, as no cluster file can follow them).
    pub fn new(strings: impl IntoIterator<Item = String>) -> Self {
        let mut by_description: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for text in strings {
            let Ok(parsed) = ConnectionString::parse(&text) else {
                continue;
            };
            by_description
                .entry(parsed.description)
                .or_default()
                .push((parsed.generation_id, text.trim().to_owned()));
        }
        Self { by_description }
    }

    /// The connection string a process whose cluster file says `file` moves to, if any:
    /// of the databases with the file's description, in order, each one whose generation
    /// differs from the file's (as the file stands after the ones before).
    fn followed_from(&self, file: &ConnectionString) -> Option<&str> {
        let mut generation = file.generation_id.as_str();
        let mut followed = None;
        for (candidate, text) in self.by_description.get(&file.description)? {
            if *candidate != generation {
                generation = candidate;
                followed = Some(text.as_str());
            }
        }
        followed
    }
}

/// One pod's fdbmonitor.
#[derive(Debug, Clone)]
pub struct Monitor {
    context: MonitorContext,
    running: BTreeMap<u32, MonitoredProcess>,
    problems: BTreeMap<u32, String>,
    conf_error: Option<String>,
    /// Set for a unified pod: fdb-kubernetes-monitor reading its JSON configuration
    /// instead of fdbmonitor reading its conf.
    unified: Option<UnifiedMonitor>,
    /// The last conf text read and what it parsed to: the conf is read every round,
    /// and parsed again only when its text changed.
    conf_parsed: Option<(String, ParsedConf)>,
}

/// A conf read: its processes and `kill_on_configuration_change`, or why it is unusable.
type ParsedConf = Result<Arc<(Vec<ProcessCommand>, bool)>, String>;

impl Monitor {
    /// A monitor that has started nothing yet.
    pub fn new(context: MonitorContext) -> Self {
        Self {
            context,
            running: BTreeMap::new(),
            problems: BTreeMap::new(),
            conf_error: None,
            unified: None,
            conf_parsed: None,
        }
    }

    /// A unified pod's fdb-kubernetes-monitor that has started nothing yet.
    pub fn new_unified(context: MonitorContext, unified: UnifiedMonitor) -> Self {
        Self {
            unified: Some(unified),
            ..Self::new(context)
        }
    }

    /// The annotations a unified pod's monitor writes now (`None` for fdbmonitor, before
    /// it accepted a configuration, or when nothing is to be written), see
    /// [`UnifiedMonitor::publication`].
    pub fn publication(
        &self,
        pod: &k8s_openapi::api::core::v1::Pod,
    ) -> Option<BTreeMap<String, String>> {
        self.unified.as_ref()?.publication(pod)
    }

    /// Records a publication at `now` (seconds).
    pub fn mark_published(&mut self, now: i64) {
        if let Some(unified) = self.unified.as_mut() {
            unified.mark_published(now);
        }
    }

    /// The processes running, by section number.
    pub fn running(&self) -> &BTreeMap<u32, MonitoredProcess> {
        &self.running
    }

    /// Why sections could not start, by section number.
    pub fn problems(&self) -> &BTreeMap<u32, String> {
        &self.problems
    }

    /// Why the conf could not be read, if it could not.
    pub fn conf_error(&self) -> Option<&str> {
        self.conf_error.as_deref()
    }

    /// Stops every process (pod stopping, node down, fault).
    pub fn stop_all(&mut self, host: &dyn ProcessHost) -> MonitorChanges {
        let mut changes = MonitorChanges::default();
        for (_, process) in std::mem::take(&mut self.running) {
            host.stop_process(&process.launch.address);
            changes.stopped.push(process.launch.address.to_string());
        }
        changes
    }

    /// Brings the processes in line with the conf on disk.
    pub fn reconcile(&mut self, host: &dyn ProcessHost) -> MonitorChanges {
        let mut changes = MonitorChanges::default();
        let Some(conf) = self.read_conf() else {
            return changes;
        };
        let (commands, kill_on_change) = (&conf.0, conf.1);
        let wanted: BTreeMap<u32, &ProcessCommand> =
            commands.iter().map(|c| (c.process_number, c)).collect();
        let stale: Vec<u32> = self
            .running
            .iter()
            .filter(|(n, p)| match wanted.get(n) {
                None => true,
                Some(c) => kill_on_change && c.command_line() != p.launch.command_line,
            })
            .map(|(n, _)| *n)
            .collect();
        for number in stale {
            if let Some(process) = self.running.remove(&number) {
                host.stop_process(&process.launch.address);
                changes.stopped.push(process.launch.address.to_string());
            }
        }
        self.problems.retain(|n, _| wanted.contains_key(n));
        for (number, command) in wanted {
            if !self.running.contains_key(&number) {
                changes.merge(self.start(number, command, host));
            }
        }
        changes
    }

    /// Restarts the process at `address` (killed by the operator) from the current conf
    /// and binary. Returns `None` when this monitor does not run it.
    pub fn restart(
        &mut self,
        address: &ProcessAddress,
        host: &dyn ProcessHost,
    ) -> Option<MonitorChanges> {
        let number = self
            .running
            .iter()
            .find(|(_, p)| p.launch.address == *address)
            .map(|(n, _)| *n)?;
        let mut changes = MonitorChanges::default();
        if let Some(process) = self.running.remove(&number) {
            host.stop_process(&process.launch.address);
            changes.stopped.push(process.launch.address.to_string());
        }
        if let Some(conf) = self.read_conf()
            && let Some(command) = conf.0.iter().find(|c| c.process_number == number)
        {
            changes.merge(self.start(number, command, host));
        }
        Some(changes)
    }

    /// Rewrites running processes' cluster files to the connection string of their
    /// database when it names their cluster at a later generation: fdbserver follows
    /// coordinator changes (the old coordinators forward it to the new connection string,
    /// whose ID a `coordinators` change always renews). A file naming the same generation
    /// at other addresses (a user's edit, `fix-coordinator-ips`) is not forwarded
    /// anywhere: it stays as written. Each cluster file is read once, whatever the
    /// number of databases (a fleet's world has one per cluster).
    pub fn follow_connection_strings(&self, databases: &CurrentConnectionStrings) {
        for process in self.running.values() {
            let text = std::fs::read_to_string(&process.cluster_file).unwrap_or_default();
            let Ok(file) = ConnectionString::parse(&text) else {
                continue;
            };
            if let Some(followed) = databases.followed_from(&file) {
                let _ = write_file(
                    &self.context.fs,
                    &process.cluster_file,
                    &format!("{followed}\n"),
                );
            }
        }
    }

    /// Keeps the coordination files in the data directory of each running process
    /// whose disk holds the coordinated state, as fdbserver writes them there.
    pub fn keep_coordination_files(&self, host: &dyn ProcessHost) {
        for process in self.running.values() {
            let Some(dir) = &process.data_dir else {
                continue;
            };
            let Some(content) = host.coordination_file(&process.launch.address) else {
                continue;
            };
            for name in COORDINATION_FILES {
                let path = dir.join(name);
                if std::fs::read_to_string(&path).ok().as_deref() != Some(content.as_str()) {
                    let _ = write_file(&self.context.fs, &path, &content);
                }
            }
        }
    }

    fn read_conf(&mut self) -> Option<Arc<(Vec<ProcessCommand>, bool)>> {
        if let Some(unified) = self.unified.as_mut() {
            // The monitor never restarts a process for a new configuration.
            let commands = unified.load(&self.context.fs);
            self.conf_error = unified.problem().map(str::to_owned);
            return Some(Arc::new((commands, false)));
        }
        let text = match std::fs::read_to_string(&self.context.conf_path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => {
                self.conf_error = Some(format!(
                    "cannot read {}: {e}",
                    self.context.conf_path.display()
                ));
                return None;
            }
        };
        let parsed = match &self.conf_parsed {
            Some((seen, parsed)) if *seen == text => parsed.clone(),
            _ => {
                let parsed = parse_conf(&text);
                self.conf_parsed = Some((text, parsed.clone()));
                parsed
            }
        };
        match parsed {
            Ok(result) => {
                self.conf_error = None;
                Some(result)
            }
            Err(e) => {
                // fdbmonitor keeps its processes when the conf turns unreadable.
                self.conf_error = Some(e);
                None
            }
        }
    }

    fn start(
        &mut self,
        number: u32,
        command: &ProcessCommand,
        host: &dyn ProcessHost,
    ) -> MonitorChanges {
        let mut changes = MonitorChanges::default();
        match self.launch(command) {
            Ok(process) => {
                self.problems.remove(&number);
                changes.started.push(process.launch.address.to_string());
                host.start_process(process.launch.clone());
                self.running.insert(number, process);
            }
            Err(problem) => {
                let message = format!("[fdbserver.{number}]: {problem}");
                if self.problems.get(&number) != Some(&message) {
                    changes.failed.push(message.clone());
                }
                self.problems.insert(number, message);
            }
        }
        changes
    }

    fn launch(&self, command: &ProcessCommand) -> Result<MonitoredProcess, String> {
        let arg = |key: &str| command.arguments.get(key).map(String::as_str);
        let public = arg("public_address").ok_or("no public_address")?;
        // The first address is the public one; the others (a TLS migration's second
        // address) are listened on too, and coordinators may be named by them.
        let mut addresses = public.split(',').map(|one| {
            // The unified image brackets every address, IPv4 ones too.
            let one = match one.strip_prefix('[').and_then(|rest| rest.split_once(']')) {
                Some((ip, tail)) if ip.parse::<std::net::Ipv4Addr>().is_ok() => {
                    format!("{ip}{tail}")
                }
                _ => one.to_owned(),
            };
            ProcessAddress::parse(&one).map_err(|e| e.to_string())
        });
        let address = addresses.next().ok_or("no public_address")??;
        let other_addresses = addresses.collect::<Result<Vec<_>, _>>()?;
        let class = match arg("class") {
            Some(name) => {
                ProcessClass::from_str(name).map_err(|_| format!("unknown class {name:?}"))?
            }
            None => ProcessClass::Unset,
        };
        let locality = command
            .arguments
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("locality_")?.to_owned(), v.clone())))
            .collect();

        let fs = &self.context.fs;
        let binary = fs
            .host_path(&command.command)
            .ok_or_else(|| format!("command {:?} is not an absolute path", command.command))?;
        let content = std::fs::read_to_string(&binary)
            .map_err(|e| format!("cannot run {}: {e}", command.command))?;
        let version = binary_version(&content)
            .ok_or_else(|| format!("{} is not a FoundationDB binary", command.command))?;

        let (cluster_file, contents) = self.read_cluster_file(command)?;
        let datadir = arg("datadir").unwrap_or("/var/fdb/data");
        let data_identity = self.data_identity(datadir);
        let data_dir = fs.host_path(datadir);
        // fdbserver reads its coordinated state from the data directory (a copy there
        // is what it serves: `fdb/coordinated_state.rs`).
        let coordination_file = data_dir
            .as_ref()
            .and_then(|dir| std::fs::read_to_string(dir.join(COORDINATION_FILES[0])).ok());
        Ok(MonitoredProcess {
            launch: ProcessLaunch {
                address,
                other_addresses,
                command_line: self
                    .unified
                    .as_ref()
                    .and_then(|u| u.command_line(command.process_number))
                    .unwrap_or_else(|| command.command_line()),
                class,
                locality,
                version,
                cluster_file_contents: contents.trim().to_owned(),
                pod: self.context.pod.clone(),
                data_identity,
                coordination_file,
            },
            cluster_file,
            data_dir,
        })
    }

    /// The process's cluster file and its contents; on first start fdbserver copies the
    /// seed cluster file there.
    fn read_cluster_file(&self, command: &ProcessCommand) -> Result<(PathBuf, String), String> {
        let arg = |key: &str| command.arguments.get(key).map(String::as_str);
        let fs = &self.context.fs;
        let cluster_file_arg = arg("cluster_file").unwrap_or("/var/fdb/fdb.cluster");
        let cluster_file = fs
            .host_path(cluster_file_arg)
            .ok_or_else(|| format!("cluster_file {cluster_file_arg:?} is not an absolute path"))?;
        let contents = match std::fs::read_to_string(&cluster_file) {
            Ok(text) if !text.trim().is_empty() => text,
            _ => {
                // fdbserver copies the seed cluster file on first start.
                let seed_arg = arg("seed_cluster_file").ok_or_else(|| {
                    format!("no cluster file at {cluster_file_arg} and no seed_cluster_file")
                })?;
                let seed = fs.host_path(seed_arg).ok_or_else(|| {
                    format!("seed_cluster_file {seed_arg:?} is not an absolute path")
                })?;
                let text = std::fs::read_to_string(&seed)
                    .ok()
                    .filter(|t| !t.trim().is_empty())
                    .ok_or_else(|| {
                        format!("no cluster file at {cluster_file_arg} or {seed_arg}")
                    })?;
                write_file(fs, &cluster_file, &text).map_err(|e| {
                    format!(
                        "cannot write {cluster_file_arg}: {}",
                        fdb_shared::error_chain::ErrorChain(&e)
                    )
                })?;
                text
            }
        };
        Ok((cluster_file, contents))
    }

    fn data_identity(&self, datadir: &str) -> String {
        let path = Path::new(datadir);
        let mut best: Option<(&PathBuf, &String)> = None;
        for (at, identity) in &self.context.volume_identities {
            if path.starts_with(at)
                && best.is_none_or(|(b, _)| at.components().count() > b.components().count())
            {
                best = Some((at, identity));
            }
        }
        match best {
            Some((at, identity)) => {
                let rest = path.strip_prefix(at).unwrap_or(path);
                format!("{identity}/{}", rest.display())
                    .trim_end_matches('/')
                    .to_owned()
            }
            None => format!("image:{}{}", self.context.pod, datadir),
        }
    }
}

/// A conf's processes and `kill_on_configuration_change`, or why it is unusable.
fn parse_conf(text: &str) -> ParsedConf {
    MonitorConf::parse(text)
        .and_then(|conf| {
            let kill = conf
                .section("general")
                .and_then(|s| s.entries.get("kill_on_configuration_change"))
                .is_some_and(|v| v == "true");
            Ok(Arc::new((conf.processes()?, kill)))
        })
        .map_err(|e| e.to_string())
}

/// fdbserver's write of a cluster file: inside the world's root only (`world/confine.rs`).
fn write_file(fs: &ContainerFs, path: &Path, content: &str) -> Result<(), WorldError> {
    confine::write(fs.root(), path, content)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> ConnectionString {
        ConnectionString::parse(text).unwrap()
    }

    #[test]
    fn a_file_follows_its_own_database_to_a_new_generation_only() {
        let databases = CurrentConnectionStrings::new([
            "a:new@10.0.0.1:4501".to_owned(),
            "b:other@10.0.0.9:4501\n".to_owned(),
        ]);
        assert_eq!(
            databases.followed_from(&file("a:old@10.0.0.2:4501")),
            Some("a:new@10.0.0.1:4501")
        );
        assert_eq!(
            databases.followed_from(&file("a:new@10.0.0.7:4501")),
            None,
            "same generation at other addresses stays as written"
        );
        assert_eq!(databases.followed_from(&file("c:x@10.0.0.3:4501")), None);
        assert_eq!(
            databases.followed_from(&file("b:old@10.0.0.9:4501")),
            Some("b:other@10.0.0.9:4501"),
            "trimmed as written"
        );
    }

    #[test]
    fn databases_sharing_a_description_are_applied_in_order() {
        let databases = CurrentConnectionStrings::new([
            "a:one@10.0.0.1:4501".to_owned(),
            "a:two@10.0.0.2:4501".to_owned(),
            "not a connection string".to_owned(),
        ]);
        assert_eq!(
            databases.followed_from(&file("a:zero@10.0.0.3:4501")),
            Some("a:two@10.0.0.2:4501")
        );
        assert_eq!(
            databases.followed_from(&file("a:two@10.0.0.3:4501")),
            Some("a:two@10.0.0.2:4501"),
            "the first moves it to one, the second back to two"
        );
    }
}
