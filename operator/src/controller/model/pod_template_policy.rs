//! What a cluster's or a backup's pod templates may ask of the nodes, for operators that
//! serve several tenants (`run --restrict-pod-templates`, FoundationDB/fdb-kubernetes-
//! operator#2487). Whoever may edit a FoundationDBCluster can otherwise run a pod with
//! the host's network, process or IPC namespace, any service account of the namespace,
//! a privileged container or the host's disk, with the operator as the creator.
//!
//! Unrestricted (the default) keeps the Go operator's behaviour: every template is used
//! as written. Restricted refuses, naming the field, a template that asks for more than
//! the flags allow; the operator then creates nothing for that object. Only the user's
//! templates are judged: what the operator adds itself (its ConfigMap, PVC and TLS
//! volumes) is not theirs to ask for.

use std::collections::BTreeSet;

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::backup::FoundationDBBackup;
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec, Volume};

/// Volume sources a restricted template may use without `--allowed-volume-sources`:
/// the kinds that read only what the namespace already holds or keep data in the pod.
pub(crate) const DEFAULT_ALLOWED_VOLUME_SOURCES: [&str; 6] = [
    "configMap",
    "secret",
    "emptyDir",
    "projected",
    "downwardAPI",
    "persistentVolumeClaim",
];

/// The service account a restricted template may always name (the namespace's own
/// `default`, which a pod gets when it names none).
const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// What pod templates may ask for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodTemplatePolicy {
    /// `None`: unrestricted, every template as written (the Go operator's behaviour).
    pub restrictions: Option<Restrictions>,
}

/// The limits of a restricted policy; each `allow_*` relaxes one of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restrictions {
    /// `--allow-host-network`: `hostNetwork: true` is allowed.
    pub allow_host_network: bool,
    /// `--allow-host-pid`: `hostPID: true` is allowed.
    pub allow_host_pid: bool,
    /// `--allow-host-ipc`: `hostIPC: true` is allowed.
    pub allow_host_ipc: bool,
    /// `--allow-privileged`: privileged containers are allowed.
    pub allow_privileged: bool,
    /// `--allowed-service-accounts`: service accounts a template may name besides
    /// `default`.
    pub service_accounts: BTreeSet<String>,
    /// Volume source kinds (`configMap`, `hostPath`, ...) a template may use.
    pub volume_sources: BTreeSet<String>,
    /// `--allowed-host-paths`: the directories (and what is below them) a `hostPath`
    /// volume may name, when `hostPath` is an allowed source.
    pub host_paths: Vec<String>,
}

impl Default for Restrictions {
    fn default() -> Self {
        Self {
            allow_host_network: false,
            allow_host_pid: false,
            allow_host_ipc: false,
            allow_privileged: false,
            service_accounts: BTreeSet::new(),
            volume_sources: DEFAULT_ALLOWED_VOLUME_SOURCES
                .iter()
                .map(|kind| (*kind).to_owned())
                .collect(),
            host_paths: Vec::new(),
        }
    }
}

/// A field of a template that asks for more than the policy allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyViolation {
    /// The field, as a path in the object (`spec.processes.storage.podTemplate.spec.hostNetwork`).
    pub field: String,
    /// What it asks for and which flag would allow it.
    pub reason: String,
}

/// Why the operator refuses an object's pod templates.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} (run --restrict-pod-templates): {}", .object, describe(.violations))]
pub struct PodTemplateRefused {
    /// `FoundationDBCluster ns/name` or `FoundationDBBackup ns/name`.
    pub object: String,
    /// Every field refused, in the order of the object.
    pub violations: Vec<PolicyViolation>,
}

fn describe(violations: &[PolicyViolation]) -> String {
    violations
        .iter()
        .map(|v| format!("{}: {}", v.field, v.reason))
        .collect::<Vec<_>>()
        .join("; ")
}

impl PodTemplatePolicy {
    /// Whether any restriction applies.
    pub fn is_restricted(&self) -> bool {
        self.restrictions.is_some()
    }

    /// Checks every pod template of a cluster (`spec.processes.<class>.podTemplate`).
    pub fn check_cluster(&self, cluster: &FoundationDBCluster) -> Result<(), PodTemplateRefused> {
        let Some(restrictions) = &self.restrictions else {
            return Ok(());
        };
        let mut violations = Vec::new();
        for (class, settings) in &cluster.spec.processes {
            if let Some(template) = &settings.pod_template {
                let path = format!("spec.processes.{class}.podTemplate");
                restrictions.check_template(&path, template, &mut violations);
            }
        }
        refuse_if_any("FoundationDBCluster", &cluster.metadata, violations)
    }

    /// Checks a backup's agent pod template (`spec.podTemplateSpec`).
    pub fn check_backup(&self, backup: &FoundationDBBackup) -> Result<(), PodTemplateRefused> {
        let Some(restrictions) = &self.restrictions else {
            return Ok(());
        };
        let mut violations = Vec::new();
        if let Some(template) = &backup.spec.pod_template_spec {
            restrictions.check_template("spec.podTemplateSpec", template, &mut violations);
        }
        refuse_if_any("FoundationDBBackup", &backup.metadata, violations)
    }
}

fn refuse_if_any(
    kind: &str,
    metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    violations: Vec<PolicyViolation>,
) -> Result<(), PodTemplateRefused> {
    if violations.is_empty() {
        return Ok(());
    }
    Err(PodTemplateRefused {
        object: format!(
            "{kind} {}/{}",
            metadata.namespace.as_deref().unwrap_or_default(),
            metadata.name.as_deref().unwrap_or_default()
        ),
        violations,
    })
}

impl Restrictions {
    fn check_template(
        &self,
        path: &str,
        template: &PodTemplateSpec,
        out: &mut Vec<PolicyViolation>,
    ) {
        if let Some(spec) = &template.spec {
            self.check_pod_spec(&format!("{path}.spec"), spec, out);
        }
    }

    fn check_pod_spec(&self, path: &str, spec: &PodSpec, out: &mut Vec<PolicyViolation>) {
        let namespaces = [
            (
                "hostNetwork",
                spec.host_network,
                self.allow_host_network,
                "--allow-host-network",
            ),
            (
                "hostPID",
                spec.host_pid,
                self.allow_host_pid,
                "--allow-host-pid",
            ),
            (
                "hostIPC",
                spec.host_ipc,
                self.allow_host_ipc,
                "--allow-host-ipc",
            ),
        ];
        for (field, asked, allowed, flag) in namespaces {
            if asked == Some(true) && !allowed {
                out.push(PolicyViolation {
                    field: format!("{path}.{field}"),
                    reason: format!("the host's namespace is not allowed ({flag} allows it)"),
                });
            }
        }
        let accounts = [
            ("serviceAccountName", &spec.service_account_name),
            ("serviceAccount", &spec.service_account),
        ];
        for (field, account) in accounts {
            let Some(account) = account.as_deref().filter(|a| !a.is_empty()) else {
                continue;
            };
            if account != DEFAULT_SERVICE_ACCOUNT && !self.service_accounts.contains(account) {
                out.push(PolicyViolation {
                    field: format!("{path}.{field}"),
                    reason: format!(
                        "service account {account:?} is not allowed (--allowed-service-accounts lists the allowed ones)"
                    ),
                });
            }
        }
        for (index, volume) in spec.volumes.iter().flatten().enumerate() {
            self.check_volume(&format!("{path}.volumes[{index}]"), volume, out);
        }
        let init = spec
            .init_containers
            .iter()
            .flatten()
            .enumerate()
            .map(|(index, c)| (format!("{path}.initContainers[{index}]"), c));
        let main = (spec.containers.iter().enumerate())
            .map(|(index, c)| (format!("{path}.containers[{index}]"), c));
        for (container_path, container) in init.chain(main) {
            self.check_container(&container_path, container, out);
        }
    }

    fn check_container(&self, path: &str, container: &Container, out: &mut Vec<PolicyViolation>) {
        let privileged = container
            .security_context
            .as_ref()
            .and_then(|context| context.privileged);
        if privileged == Some(true) && !self.allow_privileged {
            out.push(PolicyViolation {
                field: format!("{path}.securityContext.privileged"),
                reason: "privileged containers are not allowed (--allow-privileged allows them)"
                    .to_owned(),
            });
        }
    }

    fn check_volume(&self, path: &str, volume: &Volume, out: &mut Vec<PolicyViolation>) {
        let Some(kind) = volume_source_kind(volume) else {
            return;
        };
        if !self.volume_sources.contains(&kind) {
            out.push(PolicyViolation {
                field: format!("{path}.{kind}"),
                reason: format!(
                    "volume source {kind} is not allowed (--allowed-volume-sources lists the allowed kinds)"
                ),
            });
            return;
        }
        let Some(host_path) = &volume.host_path else {
            return;
        };
        let within = (self.host_paths.iter()).any(|allowed| is_within(&host_path.path, allowed));
        if !within {
            out.push(PolicyViolation {
                field: format!("{path}.hostPath.path"),
                reason: format!(
                    "host path {:?} is not under an allowed directory (--allowed-host-paths)",
                    host_path.path
                ),
            });
        }
    }
}

/// The source kind of a volume as the API names it (`configMap`, `hostPath`, ...): the
/// one field of the volume besides `name`.
fn volume_source_kind(volume: &Volume) -> Option<String> {
    let value = serde_json::to_value(volume).ok()?;
    value
        .as_object()?
        .keys()
        .find(|key| key.as_str() != "name")
        .cloned()
}

/// Whether `path` is `directory` or below it, component by component; a path with `..`
/// or a relative one is never within.
fn is_within(path: &str, directory: &str) -> bool {
    let components = |text: &str| -> Option<Vec<String>> {
        if !text.starts_with('/') {
            return None;
        }
        let parts: Vec<String> = text
            .split('/')
            .filter(|part| !part.is_empty() && *part != ".")
            .map(str::to_owned)
            .collect();
        (!parts.iter().any(|part| part == "..")).then_some(parts)
    };
    match (components(path), components(directory)) {
        (Some(path), Some(directory)) => path.starts_with(&directory),
        _ => false,
    }
}

#[cfg(test)]
#[path = "pod_template_policy_tests.rs"]
mod tests;
