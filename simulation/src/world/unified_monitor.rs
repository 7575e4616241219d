//! The `fdb-kubernetes-monitor` of unified-image pods (simulation.md, "Additions (v3):
//! unified-image pods"), as the real one behaves:
//!
//! - it reads `<input-dir>/config.json` (the ConfigMap's `fdbmonitor-conf-<class>-json`)
//!   and accepts it only when it parses, names a version, its binary is there and its
//!   arguments can be generated from the container's environment; otherwise it keeps
//!   the configuration it runs;
//! - the binary is the image's `/usr/bin/fdbserver` when the configured version is
//!   protocol compatible with the container's, else
//!   `/var/fdb/shared-binaries/bin/<version>/fdbserver` (copied by the sidecar-mode
//!   container);
//! - a new configuration never restarts a running process (a killed one restarts with
//!   the configuration accepted last); `runServers: false` stops them all;
//! - what it runs is published in the pod annotations
//!   `foundationdb.org/launcher-current-configuration` (the file as read) and
//!   `foundationdb.org/launcher-environment` (the variables the arguments use, and
//!   `BINARY_DIR`) when it accepts a configuration, and again when the operator's
//!   `foundationdb.org/outdated-config-map-seen` is newer than that (annotations someone
//!   else overwrote stay as they are until then).
//!
//! The sidecar-mode container copies its image's `fdbserver` and `fdbcli` to
//! `<output-dir>/bin/<version>/` when it starts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fdb_shared::FdbVersion;
use fdb_shared::monitor_conf::parse::ProcessCommand;
use fdb_shared::monitor_conf::process_config::{
    CURRENT_CONFIGURATION_ANNOTATION, ENVIRONMENT_ANNOTATION, IMAGE_BINARY_DIR,
    OUTDATED_CONFIG_MAP_ANNOTATION, ProcessConfiguration, SHARED_BINARIES_DIR,
};
use k8s_openapi::api::core::v1::{Container, Pod};

use super::confine;
use super::containers::{ContainerFs, IMAGE_BINARIES};
use super::error::WorldError;

/// The monitor's input directory flag (present only on unified main containers).
const INPUT_DIR_FLAG: &str = "--input-dir";
/// The file the monitor reads in its input directory.
const CONFIG_FILE: &str = "config.json";

/// Whether `main` runs fdb-kubernetes-monitor (a unified pod's main container).
pub fn runs_monitor(main: &Container) -> bool {
    main.args.iter().flatten().any(|a| a == INPUT_DIR_FLAG)
}

fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// The state of one pod's monitor.
#[derive(Debug, Clone)]
pub struct UnifiedMonitor {
    /// The container path of its configuration file.
    config_file: String,
    /// Its environment (as the kubelet resolved it).
    env: BTreeMap<String, String>,
    /// `--process-count` (default 1).
    process_count: u32,
    /// The version of its image.
    container_version: Option<FdbVersion>,
    /// The configuration accepted last, with the bytes it was read from and its binary.
    active: Option<(ProcessConfiguration, String, String)>,
    /// Why the file on disk was not accepted, when it was not.
    problem: Option<String>,
    /// The configuration last published in the pod's annotations, and when (seconds).
    published: Option<(String, i64)>,
}

impl UnifiedMonitor {
    /// The monitor of main container `main` (with the environment `env` and the image
    /// version `container_version`).
    pub fn new(
        main: &Container,
        env: BTreeMap<String, String>,
        container_version: Option<FdbVersion>,
    ) -> Self {
        let args = main.args.clone().unwrap_or_default();
        let dir = flag_value(&args, INPUT_DIR_FLAG).unwrap_or("/var/dynamic-conf");
        Self {
            config_file: format!("{}/{CONFIG_FILE}", dir.trim_end_matches('/')),
            env,
            process_count: flag_value(&args, "--process-count")
                .and_then(|n| n.parse().ok())
                .filter(|n| *n > 0)
                .unwrap_or(1),
            container_version,
            active: None,
            problem: None,
            published: None,
        }
    }

    /// The annotations to write now, if any: after accepting a configuration it has not
    /// published yet, or when the operator's `outdated-config-map-seen` timestamp is
    /// newer than its last publication and the pod does not show what it runs (the real
    /// monitor reloads and rewrites its annotations then).
    pub fn publication(&self, pod: &Pod) -> Option<BTreeMap<String, String>> {
        let (_, raw, _) = self.active.as_ref()?;
        let annotations = self.annotations()?;
        match &self.published {
            Some((published, at)) if published == raw => {
                let nudge = pod
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(OUTDATED_CONFIG_MAP_ANNOTATION))
                    .and_then(|t| t.parse::<i64>().ok());
                (nudge.is_some_and(|t| t >= *at) && !annotations_current(pod, &annotations))
                    .then_some(annotations)
            }
            _ => Some(annotations),
        }
    }

    /// Records that the annotations of the active configuration were written at `now`.
    pub fn mark_published(&mut self, now: i64) {
        if let Some((_, raw, _)) = &self.active {
            self.published = Some((raw.clone(), now));
        }
    }

    /// Why the configuration on disk is not the one running, if it is not.
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }

    /// Reads the configuration file and accepts it when it is usable (see the module
    /// documentation); returns the commands of the configuration it runs afterwards.
    pub fn load(&mut self, fs: &ContainerFs) -> Vec<ProcessCommand> {
        match self.read(fs) {
            Ok(Some(accepted)) => {
                self.active = Some(accepted);
                self.problem = None;
            }
            Ok(None) => self.problem = None,
            Err(problem) => self.problem = Some(problem),
        }
        self.commands()
    }

    fn read(
        &self,
        fs: &ContainerFs,
    ) -> Result<Option<(ProcessConfiguration, String, String)>, String> {
        let path = fs
            .host_path(&self.config_file)
            .ok_or_else(|| format!("{} is not an absolute path", self.config_file))?;
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", self.config_file)),
        };
        if self.active.as_ref().is_some_and(|(_, raw, _)| *raw == text) {
            return Ok(None);
        }
        let config: ProcessConfiguration = serde_json::from_str(&text)
            .map_err(|e| format!("cannot parse {}: {e}", self.config_file))?;
        let version: FdbVersion = config.version.parse().map_err(|_| {
            format!(
                "{}: version {:?} is not a version",
                self.config_file, config.version
            )
        })?;
        let dir = match &self.container_version {
            Some(own) if own.is_protocol_compatible(&version) => IMAGE_BINARY_DIR.to_owned(),
            _ => format!("{SHARED_BINARIES_DIR}/{version}"),
        };
        let binary = format!("{dir}/fdbserver");
        let exists = fs.host_path(&binary).is_some_and(|p| p.is_file());
        if !exists {
            return Err(format!("binary {binary} of version {version} is not there"));
        }
        let mut env = self.env.clone();
        env.insert("BINARY_DIR".into(), dir.clone());
        config
            .generate_arguments(1, &env)
            .map_err(|e| format!("cannot generate the arguments: {e}"))?;
        Ok(Some((config, text, dir)))
    }

    fn commands(&self) -> Vec<ProcessCommand> {
        let Some((config, _, dir)) = &self.active else {
            return Vec::new();
        };
        if !config.runs_servers() {
            return Vec::new();
        }
        (1..=self.process_count)
            .filter_map(|number| {
                let arguments = config.generate_arguments(number, &self.env).ok()?;
                Some(ProcessCommand {
                    process_number: number,
                    command: format!("{dir}/fdbserver"),
                    arguments: arguments
                        .iter()
                        .filter_map(|a| {
                            let (key, value) = a.strip_prefix("--")?.split_once('=')?;
                            Some((key.to_owned(), value.to_owned()))
                        })
                        .collect(),
                })
            })
            .collect()
    }

    /// The command line process `number` runs with, as the monitor starts it: the
    /// binary, then the arguments in order.
    pub fn command_line(&self, number: u32) -> Option<String> {
        let (config, _, dir) = self.active.as_ref()?;
        let mut env = self.env.clone();
        env.insert("BINARY_DIR".into(), dir.clone());
        config.command_line(number, &env).ok()
    }

    /// The annotations the monitor writes on its pod for the configuration it runs.
    pub fn annotations(&self) -> Option<BTreeMap<String, String>> {
        let (config, raw, dir) = self.active.as_ref()?;
        let mut environment: BTreeMap<String, String> = config
            .environment_names()
            .into_iter()
            .filter_map(|name| Some((name.clone(), self.env.get(&name)?.clone())))
            .collect();
        environment.insert("BINARY_DIR".into(), dir.clone());
        let environment = serde_json::to_string(&environment).ok()?;
        Some(BTreeMap::from([
            (CURRENT_CONFIGURATION_ANNOTATION.to_owned(), raw.clone()),
            (ENVIRONMENT_ANNOTATION.to_owned(), environment),
        ]))
    }
}

/// Whether `pod` already carries every annotation of `wanted` with its value.
pub fn annotations_current(pod: &Pod, wanted: &BTreeMap<String, String>) -> bool {
    let have = pod.metadata.annotations.as_ref();
    wanted
        .iter()
        .all(|(key, value)| have.and_then(|a| a.get(key)) == Some(value))
}

/// The sidecar-mode container's copy: its image's binaries into
/// `<output-dir>/bin/<version>/` (container paths mapped through `fs`).
pub fn copy_shared_binaries(
    container: &Container,
    fs: &ContainerFs,
    version: &FdbVersion,
) -> Result<(), WorldError> {
    let args = container.args.clone().unwrap_or_default();
    let output = flag_value(&args, "--output-dir").unwrap_or("/var/fdb/shared-binaries");
    let Some(target) = fs.host_path(&format!("{output}/bin/{version}")) else {
        return Ok(());
    };
    confine::create_dir_all(fs.root(), &target)?;
    for name in IMAGE_BINARIES {
        let Some(source) = fs.host_path(&format!("{IMAGE_BINARY_DIR}/{name}")) else {
            continue;
        };
        if !Path::new(&source).is_file() {
            continue;
        }
        let destination: PathBuf = target.join(name);
        confine::check_inside(fs.root(), &destination)?;
        std::fs::copy(&source, &destination).map_err(WorldError::io("copy", &destination))?;
    }
    Ok(())
}
