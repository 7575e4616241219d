//! `deprecation`: the settings of a cluster's spec that are deprecated (or ignored) and
//! what replaces them, as a diff of the spec against its normalized form, so an SRE can
//! clean a manifest before an operator upgrade or a switch of operators.
//!
//! What is normalized, and why:
//! - `buggify.crashLoop` becomes an entry of `buggify.crashLoopContainers` for the main
//!   container (the same fault, in the form that is kept);
//! - `automationOptions.useManagementAPI`, `labels.filterOnOwnerReference` and
//!   `useExplicitListenAddress` are reported with their replacement; they stay in the
//!   normalized spec because removing them could change what a cluster runs;
//! - with `--use-future-defaults`, the settings whose default the Go operator changed for
//!   its next major version are pinned to that default (`imageType: unified`,
//!   `automationOptions.useLocalitiesForExclusion` and `routing.useDNSInClusterFile`
//!   true) when the spec leaves them unset;
//! - with `--only-show-changes=false`, those same settings are pinned to the values this
//!   operator uses today when unset, so a later default change cannot alter the cluster.

use fdb_shared::api::cluster::{CrashLoopContainerObject, ImageType};
use fdb_shared::api::{FoundationDBCluster, FoundationDBClusterSpec};

use crate::cli::DeprecationArgs;
use crate::error::PluginError;
use crate::session::Session;

/// The container crash-looped by the deprecated `buggify.crashLoop`.
const MAIN_CONTAINER: &str = "foundationdb";

/// How to normalize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NormalizeOptions {
    /// Pin the Go operator's next-major defaults where unset.
    pub use_future_defaults: bool,
    /// Only what changes between versions (`false` also pins today's defaults).
    pub only_show_changes: bool,
}

/// One finding: the field and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The field path (`spec.buggify.crashLoop`).
    pub field: &'static str,
    /// What replaces it.
    pub advice: &'static str,
}

/// The normalized spec and the findings that led to it (pure).
pub fn normalize(
    spec: &FoundationDBClusterSpec,
    options: NormalizeOptions,
) -> (FoundationDBClusterSpec, Vec<Finding>) {
    let mut normalized = spec.clone();
    let mut findings = Vec::new();
    if !normalized.buggify.crash_loop.is_empty() {
        let targets = std::mem::take(&mut normalized.buggify.crash_loop);
        let containers = &mut normalized.buggify.crash_loop_containers;
        let index = match containers
            .iter()
            .position(|c| c.container_name.as_deref() == Some(MAIN_CONTAINER))
        {
            Some(index) => index,
            None => {
                containers.push(CrashLoopContainerObject {
                    container_name: Some(MAIN_CONTAINER.to_owned()),
                    targets: Vec::new(),
                });
                containers.len() - 1
            }
        };
        for target in targets {
            if !containers[index].targets.contains(&target) {
                containers[index].targets.push(target);
            }
        }
        findings.push(Finding {
            field: "spec.buggify.crashLoop",
            advice: "use spec.buggify.crashLoopContainers (containerName: foundationdb)",
        });
    }
    if spec.automation_options.use_management_api.is_some() {
        findings.push(Finding {
            field: "spec.automationOptions.useManagementAPI",
            advice: "deprecated (the Go operator uses databaseInteractionMode); this operator ignores it: remove it",
        });
    }
    if spec.labels.filter_on_owner_reference.is_some() {
        findings.push(Finding {
            field: "spec.labels.filterOnOwnerReference",
            advice: "deprecated, to be removed in the Go operator's next major version; this operator ignores it: remove it",
        });
    }
    if spec.use_explicit_listen_address.is_some() {
        findings.push(Finding {
            field: "spec.useExplicitListenAddress",
            advice: "deprecated, to be removed in the Go operator's next major version (processes always get an explicit listen address): remove it once it is true",
        });
    }
    if options.use_future_defaults {
        pin_defaults(&mut normalized, ImageType::Unified, true, true);
    }
    if !options.only_show_changes {
        pin_defaults(
            &mut normalized,
            spec.image_type(),
            spec.automation_options.use_localities_for_exclusion(),
            spec.routing.use_dns_in_cluster_file(),
        );
    }
    (normalized, findings)
}

/// Sets the three settings whose defaults move between versions, where they are unset.
fn pin_defaults(
    spec: &mut FoundationDBClusterSpec,
    image_type: ImageType,
    localities_for_exclusion: bool,
    dns_in_cluster_file: bool,
) {
    spec.image_type.get_or_insert(image_type);
    spec.automation_options
        .use_localities_for_exclusion
        .get_or_insert(localities_for_exclusion);
    spec.routing
        .use_dns_in_cluster_file
        .get_or_insert(dns_in_cluster_file);
}

/// The spec as the YAML the diff compares (only what is set).
fn spec_yaml(spec: &FoundationDBClusterSpec) -> String {
    serde_yaml_ng::to_string(spec).unwrap_or_default()
}

/// What one cluster's check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterReport {
    /// The findings.
    pub findings: Vec<Finding>,
    /// The spec before, as YAML.
    pub before: String,
    /// The normalized spec, as YAML.
    pub after: String,
}

impl ClusterReport {
    /// Whether the cluster has anything to change.
    pub fn has_deprecations(&self) -> bool {
        !self.findings.is_empty() || self.before != self.after
    }
}

/// Checks one cluster (pure).
pub fn check(cluster: &FoundationDBCluster, options: NormalizeOptions) -> ClusterReport {
    let (normalized, findings) = normalize(&cluster.spec, options);
    ClusterReport {
        findings,
        before: spec_yaml(&cluster.spec),
        after: spec_yaml(&normalized),
    }
}

/// Runs `deprecation`; exits 1 when a cluster has deprecations.
pub async fn run(session: &Session, args: &DeprecationArgs) -> Result<u8, PluginError> {
    let clusters = if args.clusters.is_empty() {
        session.all_clusters().await?
    } else {
        let mut clusters = Vec::new();
        for name in &args.clusters {
            clusters.push(session.cluster(name).await?);
        }
        clusters
    };
    let options = NormalizeOptions {
        use_future_defaults: args.use_future_defaults,
        only_show_changes: args.only_show_changes,
    };
    let mut with_deprecations = 0;
    for cluster in &clusters {
        let name = cluster.metadata.name.as_deref().unwrap_or_default();
        let report = check(cluster, options);
        if !report.has_deprecations() {
            if !args.show_cluster_spec {
                println!("Cluster {name} has no deprecation");
            }
            continue;
        }
        with_deprecations += 1;
        if args.show_cluster_spec {
            println!("---\n# {name}\n{}", report.after.trim_end());
            continue;
        }
        println!("Cluster {name} has deprecations");
        for finding in &report.findings {
            println!("  {}: {}", finding.field, finding.advice);
        }
        let diff = similar::TextDiff::from_lines(&report.before, &report.after)
            .unified_diff()
            .header("spec", "normalized spec")
            .to_string();
        if !diff.is_empty() {
            println!("{}", diff.trim_end());
        }
    }
    if with_deprecations > 0 {
        println!(
            "{with_deprecations}/{} cluster(s) with deprecations",
            clusters.len()
        );
        return Ok(1);
    }
    println!("{} cluster(s) without deprecations", clusters.len());
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(spec: serde_json::Value) -> FoundationDBCluster {
        serde_json::from_value(json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample"}, "spec": spec,
        }))
        .unwrap()
    }

    const DEFAULT: NormalizeOptions = NormalizeOptions {
        use_future_defaults: false,
        only_show_changes: true,
    };

    #[test]
    fn crash_loop_moves_to_the_main_container_entry_once() {
        let cluster = cluster(json!({"version": "7.1.57", "buggify": {
            "crashLoop": ["storage-1", "log-1"],
            "crashLoopContainers": [{"containerName": "foundationdb", "targets": ["log-1"]}]}}));
        let (spec, findings) = normalize(&cluster.spec, DEFAULT);
        assert!(spec.buggify.crash_loop.is_empty());
        assert_eq!(spec.buggify.crash_loop_containers.len(), 1);
        assert_eq!(
            spec.buggify.crash_loop_containers[0].targets,
            ["log-1", "storage-1"]
        );
        assert_eq!(findings[0].field, "spec.buggify.crashLoop");
        let report = check(&cluster, DEFAULT);
        assert!(report.has_deprecations());
        assert!(report.before.contains("crashLoop:"));
        assert!(!report.after.contains("crashLoop:"));
    }

    #[test]
    fn a_clean_spec_has_none_and_defaults_are_pinned_only_when_asked() {
        let clean = cluster(json!({"version": "7.1.57"}));
        assert!(!check(&clean, DEFAULT).has_deprecations());
        let pinned = check(
            &clean,
            NormalizeOptions {
                use_future_defaults: false,
                only_show_changes: false,
            },
        );
        assert!(
            pinned.after.contains("imageType: split"),
            "{}",
            pinned.after
        );
        let future = check(
            &clean,
            NormalizeOptions {
                use_future_defaults: true,
                only_show_changes: false,
            },
        );
        assert!(
            future.after.contains("imageType: unified"),
            "{}",
            future.after
        );
        assert!(future.after.contains("useLocalitiesForExclusion: true"));
    }

    #[test]
    fn ignored_settings_are_named_and_kept() {
        let cluster = cluster(
            json!({"version": "7.1.57", "useExplicitListenAddress": false,
            "labels": {"filterOnOwnerReference": true},
            "automationOptions": {"useManagementAPI": true}}),
        );
        let report = check(&cluster, DEFAULT);
        let fields: Vec<_> = report.findings.iter().map(|f| f.field).collect();
        assert_eq!(
            fields,
            [
                "spec.automationOptions.useManagementAPI",
                "spec.labels.filterOnOwnerReference",
                "spec.useExplicitListenAddress"
            ]
        );
        assert_eq!(report.before, report.after);
        assert!(report.has_deprecations());
    }
}
