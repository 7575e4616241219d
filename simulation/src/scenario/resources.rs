//! The backups and restores a scenario lists (`backups:`, `restores:`), and the steps
//! that name them: each manifest must be a valid resource of its kind with a unique
//! name, and every target and `expect` entry must name a listed one.

use std::collections::BTreeSet;

use fdb_shared::api::{FoundationDBBackup, FoundationDBRestore};
use fdb_shared::unknown_fields::decode_reporting_unknown_fields;
use serde_json::Value;

use super::Scenario;
use super::limits::Problem;
use super::steps::{ResourceKind, ResourceTarget, StepSpec, apply_target};

/// The names of the listed backups and restores.
#[derive(Debug, Default)]
pub(super) struct ResourceNames {
    backups: BTreeSet<String>,
    restores: BTreeSet<String>,
}

fn check_manifest(
    kind: ResourceKind,
    index: usize,
    manifest: &Value,
    names: &mut BTreeSet<String>,
) -> Result<(), Problem> {
    let field = format!("{}[{index}]", kind.list());
    let (expected_kind, name) = match kind {
        ResourceKind::Backup => (
            "FoundationDBBackup",
            decode_reporting_unknown_fields::<FoundationDBBackup>(manifest)
                .map(|(backup, _)| backup.metadata.name)
                .map_err(|e| (field.clone(), e.to_string()))?,
        ),
        ResourceKind::Restore => (
            "FoundationDBRestore",
            decode_reporting_unknown_fields::<FoundationDBRestore>(manifest)
                .map(|(restore, _)| restore.metadata.name)
                .map_err(|e| (field.clone(), e.to_string()))?,
        ),
    };
    if manifest.get("kind").and_then(Value::as_str) != Some(expected_kind) {
        return Err((format!("{field}.kind"), format!("must be {expected_kind}")));
    }
    if manifest.get("apiVersion").and_then(Value::as_str) != Some("apps.foundationdb.org/v1beta2") {
        return Err((
            format!("{field}.apiVersion"),
            "must be apps.foundationdb.org/v1beta2".to_owned(),
        ));
    }
    let name = name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| (format!("{field}.metadata.name"), "must be set".to_owned()))?;
    if !names.insert(name.clone()) {
        return Err((
            format!("{field}.metadata.name"),
            format!("{name:?} is listed twice"),
        ));
    }
    Ok(())
}

impl ResourceNames {
    /// Checks the lists; returns the names.
    pub(super) fn of(scenario: &Scenario) -> Result<Self, Problem> {
        let mut names = Self::default();
        for (index, manifest) in scenario.backups.iter().enumerate() {
            check_manifest(ResourceKind::Backup, index, manifest, &mut names.backups)?;
        }
        for (index, manifest) in scenario.restores.iter().enumerate() {
            check_manifest(ResourceKind::Restore, index, manifest, &mut names.restores)?;
        }
        Ok(names)
    }

    fn check(&self, field: &str, kind: ResourceKind, name: &str) -> Result<(), Problem> {
        let listed = match kind {
            ResourceKind::Backup => &self.backups,
            ResourceKind::Restore => &self.restores,
        };
        if listed.contains(name) {
            Ok(())
        } else {
            Err((
                field.to_owned(),
                format!(
                    "{}/{name} is not in the scenario's `{}` list",
                    kind.as_str(),
                    kind.list()
                ),
            ))
        }
    }

    fn check_target(&self, field: &str, target: &ResourceTarget) -> Result<(), Problem> {
        self.check(field, target.kind, &target.name)
    }

    /// Checks what a step names.
    pub(super) fn check_step(&self, step: &StepSpec) -> Result<(), Problem> {
        if let Some(Some(Ok((target, _)))) = step.apply.as_ref().map(apply_target) {
            self.check_target("apply.target", &target)?;
        }
        if let Some(delete) = &step.delete
            && let Ok(target) = ResourceTarget::parse(&delete.target)
        {
            self.check_target("delete.target", &target)?;
        }
        if let Some(expect) = &step.expect {
            for name in expect.backups.iter().flat_map(|m| m.keys()) {
                self.check("expect.backups", ResourceKind::Backup, name)?;
            }
            for name in expect.restores.iter().flat_map(|m| m.keys()) {
                self.check("expect.restores", ResourceKind::Restore, name)?;
            }
            if let Some(name) = &expect.data_matches_backup {
                self.check("expect.dataMatchesBackup", ResourceKind::Backup, name)?;
            }
        }
        Ok(())
    }
}
