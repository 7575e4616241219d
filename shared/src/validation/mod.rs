//! Validation of the API objects: errors and warnings as sentences naming the field,
//! e.g. `spec.version: "7.0" is not a valid FoundationDB version`.

pub mod backup_values;
pub mod bounds;
pub mod commands;
mod conf_values;
pub mod config_map_size;
mod custom_parameters;
mod engine_change;
pub mod names;

pub use custom_parameters::{
    CustomParameter, MAX_CUSTOM_PARAMETER_LENGTH, MAX_CUSTOM_PARAMETERS, NODE_LABEL_PREFIX,
    RESERVED_CUSTOM_PARAMETER_KEYS, custom_parameter_errors, custom_parameter_errors_for,
    parse_custom_parameter,
};
pub use engine_change::engine_change_error;

use crate::api::backup::FoundationDBBackupSpec;
use crate::api::cluster::{
    FoundationDBCluster, FoundationDBClusterSpec, GENERAL_PROCESS_SETTINGS, ImageType,
};
use crate::api::database_configuration::StorageEngine;
use crate::api::process_class::{ALL_PROCESS_CLASSES, ProcessClass};
use crate::api::restore::FoundationDBRestoreSpec;
use crate::cluster_math::minimum_fault_domains;
use crate::version::{FdbVersion, MINIMUM_SUPPORTED_VERSION};

/// What validation found: errors make the object invalid, scoped errors stop only the
/// work that reads their field, warnings stop nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ValidationReport {
    /// Problems that make the object unusable.
    pub errors: Vec<String>,
    /// Invalid fields only one piece of work reads: that work stops (with an Event naming
    /// the field), the rest of the cluster's work goes on.
    pub scoped: Vec<(ScopedWork, String)>,
    /// Things the user should know but that do not stop the operator.
    pub warnings: Vec<String>,
}

/// A piece of the operator's work that an invalid field of its own stops without
/// stopping the rest: the field is read by that work only, and not doing that work
/// endangers nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScopedWork {
    /// Automatic replacement of failed process groups (ReplaceFailedPods): with it
    /// stopped, failed groups wait for a fixed spec or a manual replacement.
    AutomaticReplacements,
    /// Changes of the database configuration (UpdateDatabaseConfiguration): with them
    /// stopped, the database keeps its configuration; nothing else waits on it.
    DatabaseConfiguration,
}

impl ValidationReport {
    /// Whether there is no error that stops the whole cluster's work.
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    /// Every error, those that stop one piece of work included.
    pub fn all_errors(&self) -> Vec<String> {
        self.errors
            .iter()
            .chain(self.scoped.iter().map(|(_, error)| error))
            .cloned()
            .collect()
    }

    fn error(&mut self, text: String) {
        self.errors.push(text);
    }
}

/// The largest count this operator accepts in `spec.processCounts` and in the role counts
/// of `spec.databaseConfiguration` (the largest FoundationDB clusters run a few thousand
/// processes); larger values are typos, and would overflow the arithmetic on counts.
pub const MAX_COUNT: i32 = 10_000;

/// Whether every count in the spec is at most [`MAX_COUNT`], so the derived counts
/// ([`crate::cluster_math::desired_process_counts`]) can be computed.
pub fn counts_within_limits(spec: &FoundationDBClusterSpec) -> bool {
    let config = &spec.database_configuration;
    spec.process_counts
        .explicit()
        .map(|(_, count)| Some(count))
        .chain([
            config.logs,
            config.proxies,
            config.commit_proxies,
            config.grv_proxies,
            config.resolvers,
            config.log_routers,
            config.remote_logs,
            config.storage,
            config.usable_regions,
        ])
        .flatten()
        .all(|count| count <= MAX_COUNT)
}

fn check_count_limit(field: &str, value: i32, report: &mut ValidationReport) {
    if value > MAX_COUNT {
        report.error(format!(
            "{field}: {value} is above {MAX_COUNT}, the most this operator accepts (the largest FoundationDB clusters run a few thousand processes)"
        ));
    }
}

/// Whether the cluster is one of several FoundationDBClusters serving one database
/// (multi-region, or one cluster per data center or data hall): then another cluster
/// may run the processes of a class this one has none of.
fn is_part_of_a_larger_database(spec: &FoundationDBClusterSpec) -> bool {
    spec.data_center.is_some()
        || spec.data_hall.is_some()
        || spec.seed_connection_string.is_some()
        || !spec.database_configuration.regions.is_empty()
        || spec.usable_regions() > 1
}

/// Error message for an open enum value this operator does not know.
fn unknown_value(field: &str, value: &str, known: &[&str]) -> String {
    format!("{field}: {value:?} is not one of {}", known.join(", "))
}

fn check_version(
    spec: &FoundationDBClusterSpec,
    report: &mut ValidationReport,
) -> Option<FdbVersion> {
    if spec.version.is_empty() {
        report.error("spec.version: is required (e.g. 7.1.57)".to_owned());
        return None;
    }
    match spec.parsed_version() {
        Err(_) => {
            report.error(format!(
                "spec.version: {:?} is not a valid FoundationDB version (expected MAJOR.MINOR.PATCH with an optional -rcN, e.g. 7.1.57)",
                spec.version
            ));
            None
        }
        Ok(version) if !version.is_supported() => {
            report.error(format!(
                "spec.version: {version} is older than the oldest supported version {MINIMUM_SUPPORTED_VERSION}"
            ));
            Some(version)
        }
        Ok(version) => Some(version),
    }
}

/// Which `configure` key an engine name is given for: the two take different names
/// (`none` is a perpetual wiggle engine, never a storage engine).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EngineKey {
    Storage,
    PerpetualWiggle,
}

fn check_engine(
    field: &str,
    engine: &StorageEngine,
    key: EngineKey,
    version: Option<FdbVersion>,
    report: &mut ValidationReport,
) {
    if !engine.is_known() {
        report.error(format!(
            "{field}: {:?} is not a known storage engine (known: {})",
            engine.as_str(),
            StorageEngine::known_names()
        ));
        return;
    }
    if let Some(reason) = unconfigurable_engine(engine, key) {
        report.error(format!("{field}: {:?} {reason}", engine.as_str()));
        return;
    }
    let Some(version) = version else { return };
    // The names `configure` takes per release: `configForToken` in
    // fdbclient/ManagementAPI.actor.cpp of FoundationDB's release branches.
    let problem = match engine {
        StorageEngine::SsdShardedRocksdb if !version.supports_sharded_rocksdb() => {
            "needs FoundationDB 7.2.0 or later".to_owned()
        }
        StorageEngine::SsdRedwood1 if !version.supports_redwood_1() => {
            "needs FoundationDB 7.3.0 or later".to_owned()
        }
        StorageEngine::MemoryRadixtree if !version.names_memory_radixtree() => {
            "needs FoundationDB 7.4.0 or later (memory-radixtree-beta before)".to_owned()
        }
        StorageEngine::SsdRedwood1Experimental if version.names_memory_radixtree() => {
            "is not a name FoundationDB 7.4 and later take: use ssd-redwood-1".to_owned()
        }
        _ => return,
    };
    report.error(format!(
        "{field}: {} {problem} (spec.version is {version})",
        engine.as_str()
    ));
}

/// Why an engine name FoundationDB can report cannot be asked for, if it cannot.
fn unconfigurable_engine(engine: &StorageEngine, key: EngineKey) -> Option<&'static str> {
    match engine {
        StorageEngine::Custom | StorageEngine::Unknown => Some(
            "is what FoundationDB reports for an engine it cannot name; configure takes an engine name",
        ),
        StorageEngine::None if key == EngineKey::Storage => {
            Some("is not a storage engine (it is a perpetual_storage_wiggle_engine value)")
        }
        StorageEngine::Unset if key == EngineKey::Storage => {
            Some("is empty: leave the field out for the default (ssd-2)")
        }
        StorageEngine::SsdRocksdbExperimental => {
            Some("is the pre-7.1 name no supported FoundationDB takes: use ssd-rocksdb-v1")
        }
        _ => None,
    }
}

fn check_database_configuration(
    spec: &FoundationDBClusterSpec,
    version: Option<FdbVersion>,
    report: &mut ValidationReport,
) {
    let config = &spec.database_configuration;
    let field = "spec.databaseConfiguration";
    if let Some(mode) = &config.redundancy_mode
        && !mode.is_known()
    {
        report.error(format!(
            "{field}.redundancy_mode: {:?} is not a known redundancy mode (known: {})",
            mode.as_str(),
            crate::api::RedundancyMode::known_names()
        ));
    }
    if let Some(engine) = &config.storage_engine {
        check_engine(
            &format!("{field}.storage_engine"),
            engine,
            EngineKey::Storage,
            version,
            report,
        );
    }
    if let Some(engine) = &config.perpetual_storage_wiggle_engine {
        check_engine(
            &format!("{field}.perpetual_storage_wiggle_engine"),
            engine,
            EngineKey::PerpetualWiggle,
            version,
            report,
        );
    }
    let counts = [
        ("logs", config.logs),
        ("proxies", config.proxies),
        ("commit_proxies", config.commit_proxies),
        ("grv_proxies", config.grv_proxies),
        ("resolvers", config.resolvers),
        ("log_routers", config.log_routers),
        ("remote_logs", config.remote_logs),
        ("storage", config.storage),
    ];
    for (name, value) in counts {
        if let Some(value) = value.filter(|v| *v < -1) {
            report.error(format!(
                "{field}.{name}: {value} is not allowed (use -1 for none, 0 for the default)"
            ));
        }
        if let Some(value) = value {
            check_count_limit(&format!("{field}.{name}"), value, report);
        }
    }
    if let Some(regions) = config.usable_regions {
        check_count_limit(&format!("{field}.usable_regions"), regions, report);
    }
    if let Some(regions) = config.usable_regions.filter(|r| *r < 1) {
        report.error(format!(
            "{field}.usable_regions: {regions} is not allowed (at least 1)"
        ));
    }
}

fn check_process_counts(spec: &FoundationDBClusterSpec, report: &mut ValidationReport) {
    for (class, count) in spec.process_counts.explicit() {
        if count < -1 {
            report.error(format!(
                "spec.processCounts.{class}: {count} is not allowed (use -1 for none, 0 for the default)"
            ));
        }
        check_count_limit(&format!("spec.processCounts.{class}"), count, report);
    }
    if spec.process_counts.get(ProcessClass::Storage) == -1 {
        // Valid in the Go operator, where it serves clusters whose storage runs in
        // another FoundationDBCluster of the same database; on its own, a cluster
        // without storage processes can never configure its database.
        if is_part_of_a_larger_database(spec) {
            report.warnings.push(
                "spec.processCounts.storage: -1 runs no storage processes in this cluster; its database needs them from another FoundationDBCluster (another data center, data hall or region)"
                    .to_owned(),
            );
        } else {
            report.error(
                "spec.processCounts.storage: -1 leaves the cluster without storage processes, so its database can never be configured and the cluster never reconciles; remove it (or use 0) for the default count, or give a positive count (-1 only makes sense when another FoundationDBCluster of a multi-data-center, data-hall or region setup runs the storage)"
                    .to_owned(),
            );
        }
    }
    let storage = spec.process_counts.get(ProcessClass::Storage);
    let mode = spec.redundancy_mode();
    let needed = minimum_fault_domains(&mode);
    if (1..needed).contains(&storage) {
        report.error(format!(
            "spec.processCounts.storage: {storage} storage processes cannot hold {mode} redundancy (it needs at least {needed})"
        ));
    }
    for (name, value) in [
        ("storageServersPerPod", spec.storage_servers_per_pod),
        ("logServersPerPod", spec.log_servers_per_pod),
    ] {
        if let Some(value) = value.filter(|v| *v < 1) {
            report.error(format!("spec.{name}: {value} is not allowed (at least 1)"));
        }
    }
}

fn check_processes(spec: &FoundationDBClusterSpec, report: &mut ValidationReport) {
    for (key, settings) in &spec.processes {
        let known = key == GENERAL_PROCESS_SETTINGS
            || ALL_PROCESS_CLASSES
                .iter()
                .any(|class| class.as_str() == key);
        if !known {
            report.error(format!(
                "spec.processes.{key}: {key:?} is neither \"general\" nor a process class"
            ));
        }
        let field = format!("spec.processes.{key}.customParameters");
        // Unified pods' monitor offers its node's labels as `$NODE_LABEL_*` variables.
        let unified = spec.image_type() == crate::api::cluster::ImageType::Unified;
        report.errors.extend(custom_parameter_errors_for(
            &field,
            &settings.custom_parameters,
            unified,
        ));
    }
}

fn check_coordinator_selection(spec: &FoundationDBClusterSpec, report: &mut ValidationReport) {
    for (index, setting) in spec.coordinator_selection.iter().enumerate() {
        if !setting.process_class.may_host_coordinators() {
            report.error(format!(
                "spec.coordinatorSelection[{index}].processClass: {} processes cannot be coordinators (use storage, log, transaction or coordinator)",
                setting.process_class
            ));
        }
    }
}

fn check_enums(spec: &FoundationDBClusterSpec, report: &mut ValidationReport) {
    use crate::api::cluster::{DeletionMode, PodUpdateStrategy, PublicIpSource};
    let automation = &spec.automation_options;
    let checks: [(&str, Option<&str>, &[&str]); 5] = [
        (
            "spec.imageType",
            spec.image_type
                .as_ref()
                .filter(|v| !v.is_known())
                .map(|v| v.as_str()),
            ImageType::KNOWN,
        ),
        (
            "spec.automationOptions.deletionMode",
            automation
                .deletion_mode
                .as_ref()
                .filter(|v| !v.is_known())
                .map(|v| v.as_str()),
            DeletionMode::KNOWN,
        ),
        (
            "spec.automationOptions.removalMode",
            automation
                .removal_mode
                .as_ref()
                .filter(|v| !v.is_known())
                .map(|v| v.as_str()),
            DeletionMode::KNOWN,
        ),
        (
            "spec.automationOptions.podUpdateStrategy",
            automation
                .pod_update_strategy
                .as_ref()
                .filter(|v| !v.is_known())
                .map(|v| v.as_str()),
            PodUpdateStrategy::KNOWN,
        ),
        (
            "spec.routing.publicIPSource",
            spec.routing
                .public_ip_source
                .as_ref()
                .filter(|v| !v.is_known())
                .map(|v| v.as_str()),
            PublicIpSource::KNOWN,
        ),
    ];
    for (field, value, known) in checks {
        if let Some(value) = value {
            report.error(unknown_value(field, value, known));
        }
    }
}

fn check_replacements(spec: &FoundationDBClusterSpec, report: &mut ValidationReport) {
    report.scoped.extend(
        bounds::replacement_errors(spec)
            .into_iter()
            .map(|error| (ScopedWork::AutomaticReplacements, error)),
    );
}

/// Validates a cluster spec.
pub fn validate_cluster_spec(spec: &FoundationDBClusterSpec) -> ValidationReport {
    let mut report = ValidationReport::default();
    let version = check_version(spec, &mut report);
    check_database_configuration(spec, version, &mut report);
    check_process_counts(spec, &mut report);
    check_processes(spec, &mut report);
    check_coordinator_selection(spec, &mut report);
    check_enums(spec, &mut report);
    check_replacements(spec, &mut report);
    names::check_process_group_id_prefix(spec, &mut report);
    names::check_dns_domain(spec, &mut report);
    names::check_label_settings(spec, &mut report);
    bounds::check_cluster_bounds(spec, &mut report);
    conf_values::check_conf_values(spec, &mut report);
    report.errors.extend(commands::command_value_errors(spec));
    config_map_size::check_config_map_size(spec, &mut report);
    report
}

/// Validates a cluster: its spec ([`validate_cluster_spec`]) and the names derived from
/// its `metadata.name`.
pub fn validate_cluster(cluster: &FoundationDBCluster) -> ValidationReport {
    let mut report = validate_cluster_spec(&cluster.spec);
    names::check_cluster_name(cluster, &mut report);
    // Against the configuration the database last reported (the status).
    if let Some(status) = &cluster.status
        && let Some(live) = &status.database_configuration
    {
        let running = status
            .running_version
            .as_deref()
            .and_then(|v| v.parse::<FdbVersion>().ok());
        if let Some(error) = engine_change_error(&cluster.spec, live, running.as_ref()) {
            report
                .scoped
                .push((ScopedWork::DatabaseConfiguration, error));
        }
    }
    report
}

/// Validates a backup spec: version (when set) and custom parameters.
pub fn validate_backup_spec(spec: &FoundationDBBackupSpec) -> ValidationReport {
    let mut report = ValidationReport::default();
    if spec.cluster_name.is_empty() {
        report.error("spec.clusterName: is required".to_owned());
    }
    if let Some(version) = &spec.version
        && version.parse::<FdbVersion>().is_err()
    {
        report.error(format!(
            "spec.version: {version:?} is not a valid FoundationDB version"
        ));
    }
    if let Some(state) = spec.backup_state.as_ref().filter(|s| !s.is_known()) {
        report.error(unknown_value(
            "spec.backupState",
            state.as_str(),
            crate::api::backup::BackupState::KNOWN,
        ));
    }
    report.errors.extend(custom_parameter_errors(
        "spec.customParameters",
        &spec.custom_parameters,
    ));
    report.errors.extend(bounds::check_backup_bounds(spec));
    report
        .errors
        .extend(backup_values::backup_value_errors(spec, ""));
    report
}

/// Validates a restore spec.
pub fn validate_restore_spec(spec: &FoundationDBRestoreSpec) -> ValidationReport {
    let mut report = ValidationReport::default();
    if spec.destination_cluster_name.is_empty() {
        report.error("spec.destinationClusterName: is required".to_owned());
    }
    report.errors.extend(custom_parameter_errors(
        "spec.customParameters",
        &spec.custom_parameters,
    ));
    report
        .errors
        .extend(backup_values::restore_value_errors(spec, ""));
    report
}

/// A cluster whose spec passed validation; only [`ValidatedCluster::new`] makes one, so
/// code holding it may rely on a supported, parsed version and known enum values.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidatedCluster {
    cluster: FoundationDBCluster,
    version: FdbVersion,
    warnings: Vec<String>,
    scoped: Vec<(ScopedWork, String)>,
}

/// The cluster spec is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid FoundationDBCluster {name}: {}", errors.join("; "))]
pub struct InvalidCluster {
    /// Name of the cluster.
    pub name: String,
    /// Every error found.
    pub errors: Vec<String>,
    /// Every warning found.
    pub warnings: Vec<String>,
}

impl ValidatedCluster {
    /// Validates the cluster.
    pub fn new(cluster: FoundationDBCluster) -> Result<Self, InvalidCluster> {
        let report = validate_cluster(&cluster);
        match (report.is_valid(), cluster.spec.parsed_version()) {
            (true, Ok(version)) => Ok(Self {
                cluster,
                version,
                warnings: report.warnings,
                scoped: report.scoped,
            }),
            _ => Err(InvalidCluster {
                name: cluster.metadata.name.clone().unwrap_or_default(),
                errors: report.all_errors(),
                warnings: report.warnings,
            }),
        }
    }

    /// The cluster.
    pub fn cluster(&self) -> &FoundationDBCluster {
        &self.cluster
    }

    /// The spec.
    pub fn spec(&self) -> &FoundationDBClusterSpec {
        &self.cluster.spec
    }

    /// The desired version, parsed and supported.
    pub fn version(&self) -> FdbVersion {
        self.version
    }

    /// Warnings found during validation.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Invalid fields that stop one piece of work only (see [`ScopedWork`]).
    pub fn scoped_errors(&self) -> &[(ScopedWork, String)] {
        &self.scoped
    }

    /// Gives the cluster back.
    pub fn into_inner(self) -> FoundationDBCluster {
        self.cluster
    }
}

#[cfg(test)]
mod tests;
