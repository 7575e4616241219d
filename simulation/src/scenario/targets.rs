//! What `apply` and `delete` steps aim at: the cluster or a listed backup or restore.

use serde_json::Value;

/// The kinds of FoundationDB resource a scenario lists beside its cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ResourceKind {
    /// A FoundationDBBackup (`backups:`).
    Backup,
    /// A FoundationDBRestore (`restores:`).
    Restore,
}

impl ResourceKind {
    /// The name used in targets and the resource's plural.
    pub fn plural(self) -> &'static str {
        match self {
            Self::Backup => "foundationdbbackups",
            Self::Restore => "foundationdbrestores",
        }
    }

    /// The name used in targets (`foundationdbbackup`, `foundationdbrestore`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Backup => "foundationdbbackup",
            Self::Restore => "foundationdbrestore",
        }
    }

    /// The scenario's list of such manifests.
    pub fn list(self) -> &'static str {
        match self {
            Self::Backup => "backups",
            Self::Restore => "restores",
        }
    }
}

/// A parsed `foundationdbbackup/<name>` or `foundationdbrestore/<name>` target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceTarget {
    /// The kind.
    pub kind: ResourceKind,
    /// The resource's name (in the cluster's namespace).
    pub name: String,
}

impl ResourceTarget {
    /// Parses `foundationdbbackup/<name>` or `foundationdbrestore/<name>`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (kind, name) = text.split_once('/').ok_or_else(|| {
            format!(
                "{text:?} is not of the form foundationdbbackup/<name> or foundationdbrestore/<name>"
            )
        })?;
        let kind = match kind {
            "foundationdbbackup" => ResourceKind::Backup,
            "foundationdbrestore" => ResourceKind::Restore,
            other => {
                return Err(format!(
                    "{other:?} is not a kind this step can name (foundationdbbackup, foundationdbrestore)"
                ));
            }
        };
        if name.is_empty() || name.contains('/') {
            return Err(format!("{text:?} has no valid resource name"));
        }
        Ok(Self {
            kind,
            name: name.to_owned(),
        })
    }
}

/// A targeted `apply` step: the resource and the patch, or the problem (field, message).
pub type TargetedApply = Result<(ResourceTarget, Value), (&'static str, String)>;

/// The prefix of an `apply` target naming one of the scenario's FoundationDBClusters.
pub const CLUSTER_TARGET_PREFIX: &str = "foundationdbcluster/";

/// An `apply` step that targets one of the scenario's clusters by name:
/// `{target: foundationdbcluster/<name>, patch: {...}}` (the cluster and the patch).
pub fn apply_cluster_target(apply: &Value) -> Option<(String, Value)> {
    let object = apply.as_object()?;
    let name = object
        .get("target")?
        .as_str()?
        .strip_prefix(CLUSTER_TARGET_PREFIX)?;
    let patch = object
        .get("patch")
        .cloned()
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    Some((name.to_owned(), patch))
}

/// An `apply` step that targets a backup or restore: `{target: ..., patch: {...}}`
/// (`None` for a plain patch of the first cluster, or one naming a cluster).
pub fn apply_target(apply: &Value) -> Option<TargetedApply> {
    let object = apply.as_object()?;
    let target = object.get("target")?;
    if apply_cluster_target(apply).is_some() {
        return None;
    }
    Some((|| {
        let target = target
            .as_str()
            .ok_or_else(|| ("target", "must be a string".to_owned()))
            .and_then(|t| ResourceTarget::parse(t).map_err(|e| ("target", e)))?;
        if let Some(key) = object.keys().find(|k| *k != "target" && *k != "patch") {
            return Err((
                "",
                format!("has {key:?}: an apply step with a target takes only `target` and `patch`"),
            ));
        }
        let patch = object
            .get("patch")
            .cloned()
            .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
        if !patch.is_object() {
            return Err(("patch", "must be a mapping (a JSON merge patch)".to_owned()));
        }
        Ok((target, patch))
    })())
}
