//! `fdb-operator explain -f FILE`: what the operator would build from a
//! FoundationDBCluster manifest, as JSON (contract in `cli.md`).
//!
//! Exit codes: 0 valid, 1 invalid (validation errors, fields of the wrong type, a key
//! given twice, `.nan`/`.inf`), 2 unreadable (file missing, not YAML, beyond the input
//! limits of [`fdb_shared::yaml_input`], or no FoundationDBCluster in it). Errors about a
//! field name it and, when found in the file, its line.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use fdb_shared::api::cluster::{
    FoundationDBCluster, FoundationDBClusterSpec, ImageType, ImageTypeSource,
    processes::settings_for_class,
};
use fdb_shared::api::{DatabaseConfiguration, ProcessClass};
use fdb_shared::cluster_math::{
    configure_new_command, desired_coordinator_count, desired_database_configuration,
    desired_process_counts, fault_tolerance, main_image, sidecar_image, unified_image, uses_locks,
};
use fdb_shared::unknown_fields::decode_reporting_unknown_fields;
use fdb_shared::validation::{counts_within_limits, validate_cluster};
use fdb_shared::yaml_input;
use serde::Serialize;
use serde_json::Value;

pub use super::manifest::{API_VERSION, UnreadableManifest};

/// The kind `explain` reads.
const KIND: &str = "FoundationDBCluster";

/// Arguments of `fdb-operator explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The manifest to read (YAML or JSON; the first resource of the kind in a
    /// multi-document file is used).
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: PathBuf,
    /// The kind of resource to explain.
    #[arg(long, value_enum, default_value = "FoundationDBCluster")]
    pub kind: ExplainKind,
}

/// The kinds `explain` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExplainKind {
    /// A FoundationDBCluster (the default).
    #[value(name = "FoundationDBCluster", alias = "fdb")]
    Cluster,
    /// A FoundationDBBackup: the agents, the backup URL and the `fdbbackup start` command.
    #[value(name = "FoundationDBBackup", alias = "fdbbackup")]
    Backup,
    /// A FoundationDBRestore: the backup URL and the `fdbrestore start` command.
    #[value(name = "FoundationDBRestore", alias = "fdbrestore")]
    Restore,
}

/// Container images of the cluster's pods.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Images {
    /// Image of the main `foundationdb` container.
    pub main: String,
    /// Image of the sidecar container.
    pub sidecar: String,
}

/// The pod model of the cluster's pods (an addition to the `cli.md` shape).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodModel {
    /// `split` or `unified`.
    pub image_type: String,
    /// Why this model: `spec.imageType`, or, unset, what the cluster's pods run
    /// (`status.imageTypes`) or this operator's default.
    pub image_type_source: String,
    /// The operator's containers of a pod, in order (init containers first, marked
    /// `init:`), with what each runs.
    pub containers: Vec<String>,
}

impl PodModel {
    fn of(cluster: &FoundationDBCluster) -> Self {
        let (image_type, source) = cluster.image_type_and_source();
        let containers = match image_type {
            ImageType::Unified => vec![
                "foundationdb: fdb-kubernetes-monitor (reads the process configuration JSON, reports through pod annotations)".to_owned(),
                "foundationdb-kubernetes-sidecar: fdb-kubernetes-monitor --mode sidecar (copies the binaries for upgrades)".to_owned(),
            ],
            _ => vec![
                "init:foundationdb-kubernetes-init: the sidecar in --init-mode (copies the cluster file and monitor conf)".to_owned(),
                "foundationdb: fdbmonitor".to_owned(),
                "foundationdb-kubernetes-sidecar: the HTTP sidecar (the operator's agent in the pod)".to_owned(),
            ],
        };
        let image_type_source = match source {
            ImageTypeSource::Spec => "spec.imageType".to_owned(),
            ImageTypeSource::Status => "imageType unset: kept as the pods run it \
                (status.imageTypes: unified; the Go operator v2's default)"
                .to_owned(),
            ImageTypeSource::Default => "imageType unset: this operator's default, split \
                (a running cluster whose pods all run unified stays unified)"
                .to_owned(),
        };
        Self {
            image_type: image_type.as_str().to_owned(),
            image_type_source,
            containers,
        }
    }
}

/// What `explain` prints, keys in the order of `cli.md`. Derived values are `null` when
/// the manifest could not be decoded at all.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// Whether the manifest is valid.
    pub valid: bool,
    /// Validation errors, each naming the field.
    pub errors: Vec<String>,
    /// Warnings, including unknown fields.
    pub warnings: Vec<String>,
    /// The desired version as written.
    pub version: Option<String>,
    /// Failures the redundancy mode tolerates.
    pub fault_tolerance: Option<i32>,
    /// Process groups per class, classes with a count above zero only.
    pub process_counts: Option<BTreeMap<ProcessClass, i32>>,
    /// Number of coordinators.
    pub coordinators: Option<i32>,
    /// The desired database configuration, defaults filled in.
    pub database_configuration: Option<DatabaseConfiguration>,
    /// Container images.
    pub images: Option<Images>,
    /// The pod model (an addition to the `cli.md` shape).
    pub pod_model: Option<PodModel>,
    /// Whether the operator coordinates through the global lock.
    pub locks: Option<bool>,
    /// The command that configures a new database (an addition to the `cli.md` shape).
    pub configure_command: Option<String>,
    /// Where the processes get their `data_hall` locality, and how three_data_hall
    /// spreads over the halls (an addition; left out when neither applies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_halls: Option<DataHalls>,
}

/// The data halls of a cluster, as `explain` shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DataHalls {
    /// Where each process class gets its `locality_data_hall` (`spec.dataHall`, a
    /// custom parameter, `null` for none), classes with processes only.
    pub locality: BTreeMap<ProcessClass, Option<String>>,
    /// Halls three_data_hall needs (3), `null` in other modes.
    pub halls_needed: Option<u32>,
    /// Most coordinators in one hall, `null` outside three_data_hall.
    pub coordinators_per_hall: Option<i32>,
}

/// Where the processes of `class` get their data hall, if they get one.
fn data_hall_source(spec: &FoundationDBClusterSpec, class: ProcessClass) -> Option<String> {
    let settings = settings_for_class(&spec.processes, class);
    let parameter = settings
        .custom_parameters
        .iter()
        .find(|p| p.split('=').next().map(str::trim) == Some("locality_data_hall"));
    match (
        parameter,
        spec.data_hall.as_deref().filter(|h| !h.is_empty()),
    ) {
        (Some(parameter), _) => Some(format!("customParameters: {parameter}")),
        (None, Some(hall)) => Some(format!("spec.dataHall: {hall}")),
        (None, None) => None,
    }
}

/// The halls of a cluster, when it has three_data_hall or data hall localities.
fn data_halls(spec: &FoundationDBClusterSpec, warnings: &mut Vec<String>) -> Option<DataHalls> {
    let three = spec.redundancy_mode().spreads_over_data_halls();
    let locality: BTreeMap<ProcessClass, Option<String>> = desired_process_counts(spec)
        .positive()
        .into_keys()
        .map(|class| (class, data_hall_source(spec, class)))
        .collect();
    if !three && locality.values().all(Option::is_none) {
        return None;
    }
    let missing: Vec<&str> = locality
        .iter()
        .filter(|(_, source)| source.is_none())
        .map(|(class, _)| class.as_str())
        .collect();
    if three && !missing.is_empty() {
        warnings.push(format!(
            "three_data_hall: the {} processes get no data_hall locality (spec.dataHall or a locality_data_hall custom parameter); the operator configures three_data_hall only once every process reports one",
            missing.join(", ")
        ));
    }
    let coordinators = desired_coordinator_count(&spec.redundancy_mode(), spec.usable_regions());
    Some(DataHalls {
        locality,
        halls_needed: three.then_some(3),
        coordinators_per_hall: three.then(|| (coordinators + 2) / 3),
    })
}

impl Explanation {
    fn invalid(errors: Vec<String>, warnings: Vec<String>) -> Self {
        Self {
            valid: false,
            errors,
            warnings,
            version: None,
            fault_tolerance: None,
            process_counts: None,
            coordinators: None,
            database_configuration: None,
            images: None,
            pod_model: None,
            locks: None,
            configure_command: None,
            data_halls: None,
        }
    }

    /// The exit code of `explain` for this explanation.
    pub fn exit_code(&self) -> ExitCode {
        if self.valid {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    }
}

/// The derived values of a decoded cluster.
pub fn explain_cluster(cluster: &FoundationDBCluster, mut warnings: Vec<String>) -> Explanation {
    let spec = &cluster.spec;
    let report = validate_cluster(cluster);
    // A field that stops only one piece of work is still an invalid field to fix.
    let errors = report.all_errors();
    warnings.extend(report.warnings);
    if !counts_within_limits(spec) {
        // The validation errors say which count; deriving from it would overflow.
        return Explanation::invalid(errors, warnings);
    }
    let desired = desired_database_configuration(spec);
    let halls = data_halls(spec, &mut warnings);
    Explanation {
        valid: errors.is_empty(),
        errors,
        warnings,
        version: Some(spec.version.clone()),
        fault_tolerance: Some(fault_tolerance(&spec.redundancy_mode())),
        process_counts: Some(desired_process_counts(spec).positive()),
        coordinators: Some(desired_coordinator_count(
            &spec.redundancy_mode(),
            spec.usable_regions(),
        )),
        configure_command: Some(configure_new_command(&desired)),
        database_configuration: Some(desired),
        images: Some(match cluster.image_type() {
            ImageType::Unified => Images {
                main: unified_image(spec, &spec.version),
                sidecar: unified_image(spec, &spec.version),
            },
            _ => Images {
                main: main_image(spec, &spec.version),
                sidecar: sidecar_image(spec, &spec.version),
            },
        }),
        pod_model: Some(PodModel::of(cluster)),
        locks: Some(uses_locks(spec)),
        data_halls: halls,
    }
}

/// Explains the text of a manifest; `path` only names the file in errors.
pub fn explain_manifest(path: &Path, text: &str) -> Result<Explanation, UnreadableManifest> {
    let documents = yaml_input::documents(text).map_err(|source| UnreadableManifest::NotYaml {
        path: path.to_owned(),
        source,
    })?;
    let kind_of = |doc: &Value| doc.get("kind").and_then(Value::as_str).map(str::to_owned);
    let mut clusters = documents
        .iter()
        .enumerate()
        .filter(|(_, doc)| !doc.value.is_null())
        .filter(|(_, doc)| kind_of(&doc.value).as_deref() == Some(KIND));
    let Some((index, document)) = clusters.next() else {
        let found: Vec<String> = documents
            .iter()
            .filter(|doc| !doc.value.is_null())
            .map(|doc| kind_of(&doc.value).unwrap_or_else(|| "<none>".to_owned()))
            .collect();
        return Err(UnreadableManifest::NotACluster {
            path: path.to_owned(),
            found: if found.is_empty() {
                "none".to_owned()
            } else {
                found.join(", ")
            },
        });
    };
    let mut warnings = Vec::new();
    let others = clusters.count();
    if others > 0 {
        warnings.push(format!(
            "{} holds {} FoundationDBClusters; only the first is explained",
            path.display(),
            others + 1
        ));
    }
    if let Some(problem) = &document.problem {
        // A duplicate key or a non-finite number: what the operator would get is not
        // what the file says, so nothing is derived from it.
        return Ok(Explanation::invalid(vec![problem.to_string()], warnings));
    }
    let mut errors = Vec::new();
    let api_version = document.value.get("apiVersion").and_then(Value::as_str);
    if api_version != Some(API_VERSION) {
        errors.push(format!(
            "apiVersion: {:?} is not served by this operator (expected {API_VERSION})",
            api_version.unwrap_or("")
        ));
    }
    // The typed object requires `metadata`; a manifest without it still explains.
    let mut manifest = document.value.clone();
    if let Some(fields) = manifest.as_object_mut() {
        fields
            .entry("metadata")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
    }
    match decode_reporting_unknown_fields::<FoundationDBCluster>(&manifest) {
        Ok((cluster, unknown)) => {
            warnings.extend(unknown);
            let mut explanation = explain_cluster(&cluster, warnings);
            if !errors.is_empty() {
                errors.append(&mut explanation.errors);
                explanation.errors = errors;
                explanation.valid = false;
            }
            Ok(explanation)
        }
        Err(error) => {
            errors.push(match yaml_input::line_of(text, index, &error.segments) {
                Some(line) => format!("{error} at line {line}"),
                None => error.to_string(),
            });
            Ok(Explanation::invalid(errors, warnings))
        }
    }
}

/// Reads and explains a manifest file (at most 4 MiB).
pub fn explain_file(path: &Path) -> Result<Explanation, UnreadableManifest> {
    let text = yaml_input::read_file(path)?;
    explain_manifest(path, &text)
}

/// Runs `explain`: JSON on standard output, exit 0/1, or an error on standard error and
/// exit 2.
pub fn run(args: &ExplainArgs) -> ExitCode {
    let resource = match args.kind {
        ExplainKind::Cluster => None,
        ExplainKind::Backup => Some(super::explain_backup::ResourceKind::Backup),
        ExplainKind::Restore => Some(super::explain_backup::ResourceKind::Restore),
    };
    let explained = match resource {
        None => explain_file(&args.file).map(|e| {
            let code = e.exit_code();
            (serde_json::to_string_pretty(&e), code)
        }),
        Some(kind) => yaml_input::read_file(&args.file)
            .map_err(UnreadableManifest::from)
            .and_then(|text| super::explain_backup::explain_resource(&args.file, &text, kind))
            .map(|e| {
                let code = if e.valid() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                };
                (serde_json::to_string_pretty(&e), code)
            }),
    };
    let (json, exit_code) = match explained {
        Ok(explained) => explained,
        Err(error) => {
            eprintln!("error: {}", fdb_shared::error_chain::ErrorChain(&error));
            return ExitCode::from(2);
        }
    };
    let json = match json {
        Ok(json) => json,
        Err(error) => {
            eprintln!("error: cannot print the explanation as JSON: {error}");
            return ExitCode::from(2);
        }
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = writeln!(stdout, "{json}") {
        eprintln!("error: cannot write to standard output: {error}");
        return ExitCode::from(2);
    }
    exit_code
}

#[cfg(test)]
mod tests;
