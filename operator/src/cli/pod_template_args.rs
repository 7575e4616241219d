//! The flags of `fdb-operator run` that restrict what pod templates may ask for
//! ([`crate::controller::model::pod_template_policy`]).

use clap::Args;

use crate::controller::model::pod_template_policy::{PodTemplatePolicy, Restrictions};

/// The volume source kinds of the core v1 `Volume` (Kubernetes 1.31), the names
/// `--allowed-volume-sources` takes.
pub const VOLUME_SOURCE_KINDS: [&str; 29] = [
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephfs",
    "cinder",
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "gitRepo",
    "glusterfs",
    "hostPath",
    "image",
    "iscsi",
    "nfs",
    "persistentVolumeClaim",
    "photonPersistentDisk",
    "portworxVolume",
    "projected",
    "quobyte",
    "rbd",
    "scaleIO",
    "secret",
    "storageos",
];

/// Pod template restrictions, for an operator whose clusters belong to several tenants.
#[derive(Debug, Clone, Default, Args)]
pub struct PodTemplatePolicyArgs {
    /// Refuse clusters and backups whose pod templates ask for the host's network, PID
    /// or IPC namespace, a privileged container, a service account other than `default`,
    /// or a volume source other than configMap, secret, emptyDir, projected,
    /// downwardAPI and persistentVolumeClaim; the --allow* flags below relax one rule
    /// each. A refused object gets a Warning Event `PodTemplateRefused` naming every
    /// field, and nothing is created or changed for it until its templates comply.
    /// Off by default: every template is used as written, as the Go operator does.
    #[arg(long)]
    pub restrict_pod_templates: bool,
    /// With --restrict-pod-templates: allow `hostNetwork: true`.
    #[arg(long, requires = "restrict_pod_templates")]
    pub allow_host_network: bool,
    /// With --restrict-pod-templates: allow `hostPID: true`.
    #[arg(long, requires = "restrict_pod_templates")]
    pub allow_host_pid: bool,
    /// With --restrict-pod-templates: allow `hostIPC: true`.
    #[arg(long, requires = "restrict_pod_templates")]
    pub allow_host_ipc: bool,
    /// With --restrict-pod-templates: allow privileged containers.
    #[arg(long, requires = "restrict_pod_templates")]
    pub allow_privileged: bool,
    /// With --restrict-pod-templates: service accounts (comma-separated) a template may
    /// name besides `default`.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "NAME,...",
        requires = "restrict_pod_templates"
    )]
    pub allowed_service_accounts: Vec<String>,
    /// With --restrict-pod-templates: more volume source kinds (comma-separated, as the
    /// API names them: csi,nfs,...) a template may use.
    #[arg(long, value_delimiter = ',', value_name = "KIND,...", requires = "restrict_pod_templates",
          value_parser = volume_source_kind)]
    pub allowed_volume_sources: Vec<String>,
    /// With --restrict-pod-templates: directories (comma-separated, absolute) whose
    /// contents `hostPath` volumes may name; giving it allows `hostPath` volumes there.
    #[arg(long, value_delimiter = ',', value_name = "DIR,...", requires = "restrict_pod_templates",
          value_parser = host_path_directory)]
    pub allowed_host_paths: Vec<String>,
}

impl PodTemplatePolicyArgs {
    /// The policy the flags ask for.
    pub fn policy(&self) -> PodTemplatePolicy {
        if !self.restrict_pod_templates {
            return PodTemplatePolicy::default();
        }
        let mut restrictions = Restrictions {
            allow_host_network: self.allow_host_network,
            allow_host_pid: self.allow_host_pid,
            allow_host_ipc: self.allow_host_ipc,
            allow_privileged: self.allow_privileged,
            service_accounts: self.allowed_service_accounts.iter().cloned().collect(),
            host_paths: self.allowed_host_paths.clone(),
            ..Restrictions::default()
        };
        restrictions
            .volume_sources
            .extend(self.allowed_volume_sources.iter().cloned());
        if !self.allowed_host_paths.is_empty() {
            restrictions.volume_sources.insert("hostPath".to_owned());
        }
        PodTemplatePolicy {
            restrictions: Some(restrictions),
        }
    }
}

fn volume_source_kind(text: &str) -> Result<String, String> {
    VOLUME_SOURCE_KINDS
        .iter()
        .find(|kind| **kind == text)
        .map(|kind| (*kind).to_owned())
        .ok_or_else(|| {
            format!(
                "{text:?} is not a volume source of the Kubernetes API (one of: {})",
                VOLUME_SOURCE_KINDS.join(", ")
            )
        })
}

fn host_path_directory(text: &str) -> Result<String, String> {
    let valid = text.starts_with('/') && !text.split('/').any(|part| part == "..");
    if valid {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "{text:?} must be an absolute directory without `..`"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        policy: PodTemplatePolicyArgs,
    }

    fn parse(args: &[&str]) -> Result<PodTemplatePolicy, String> {
        Flags::try_parse_from(std::iter::once("run").chain(args.iter().copied()))
            .map(|flags| flags.policy.policy())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn no_flag_is_unrestricted() {
        assert!(!parse(&[]).unwrap().is_restricted());
    }

    #[test]
    fn the_flags_build_the_restrictions() {
        let policy = parse(&[
            "--restrict-pod-templates",
            "--allow-host-network",
            "--allowed-service-accounts",
            "fdb,backup",
            "--allowed-volume-sources",
            "csi",
            "--allowed-host-paths",
            "/mnt/fdb",
        ])
        .unwrap();
        let restrictions = policy.restrictions.unwrap();
        assert!(restrictions.allow_host_network && !restrictions.allow_host_pid);
        assert_eq!(restrictions.service_accounts.len(), 2);
        assert!(restrictions.volume_sources.contains("csi"));
        assert!(restrictions.volume_sources.contains("hostPath"));
        assert!(restrictions.volume_sources.contains("configMap"));
        assert_eq!(restrictions.host_paths, ["/mnt/fdb"]);
    }

    #[test]
    fn relaxing_flags_need_the_restriction_and_typos_are_refused() {
        let error = parse(&["--allow-host-network"]).unwrap_err();
        assert!(error.contains("--restrict-pod-templates"), "{error}");
        let error = parse(&[
            "--restrict-pod-templates",
            "--allowed-volume-sources",
            "hostpath",
        ])
        .unwrap_err();
        assert!(error.contains("not a volume source"), "{error}");
        let error = parse(&[
            "--restrict-pod-templates",
            "--allowed-host-paths",
            "/mnt/../etc",
        ])
        .unwrap_err();
        assert!(error.contains("without `..`"), "{error}");
    }
}
