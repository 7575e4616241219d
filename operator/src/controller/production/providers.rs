//! Production providers: fdbcli admin clients over a cluster file written from
//! `status.connectionString`, and HTTP(S) sidecar clients at `<pod IP>:8080`.

use std::io::Write as _;
use std::net::IpAddr;
use std::os::unix::fs::{
    DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fdb_shared::FdbVersion;
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::sidecar::protocol::base_url;
use fdb_shared::sidecar::{SidecarApi, SidecarClientError, SidecarClientFactory};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use super::super::context::{AdminClientProvider, SidecarProvider};
use super::super::model::pod::SIDECAR_CONTAINER;
use super::super::versions::tool_choice::tool_versions;
use crate::fdb::{
    AdminClient, AdminError, FdbTool, FdbTools, FdbcliAdminClient, FdbcliConfig, MissingTool,
    TlsFiles, ToolRunner,
};

/// Builds fdbcli admin clients: the cluster file of `<namespace>/<name>` is written to
/// `<work_dir>/<namespace>.<name>.cluster` from `status.connectionString` each time a
/// client is made (fdbcli may rewrite it after a coordinator change; the status wins).
/// The tools are those of the cluster's running version, with the upgrade target's as
/// the fallback during an incompatible upgrade ([`tool_versions`]), chosen anew for
/// every client (one per pass).
#[derive(Debug, Clone)]
pub struct FdbcliAdminProvider {
    /// Where the tools of each version are, and the log group they run with.
    pub tools: FdbTools,
    /// Where cluster files are written.
    pub work_dir: PathBuf,
    /// TLS files for fdbcli, when the clusters use TLS.
    pub tls: Option<TlsFiles>,
    /// Runs the tools: child processes in production ([`crate::fdb::ProcessRunner`]).
    pub runner: Arc<dyn ToolRunner>,
}

/// The command named in errors of choosing a cluster's tools.
const CHOOSE_TOOLS: &str = "choose the FoundationDB tools";

impl FdbcliAdminProvider {
    /// How to run the tools of `version` at `fdbcli` against `cluster_file`.
    fn config(&self, fdbcli: PathBuf, cluster_file: PathBuf, version: FdbVersion) -> FdbcliConfig {
        let mut config = FdbcliConfig::new(fdbcli, cluster_file);
        config.tls = self.tls.clone();
        config.version = Some(version);
        config.trace_log_group = self.tools.trace_log_group.clone();
        config
    }

    /// Writes the cluster file of `cluster` from its connection string.
    fn write_cluster_file(&self, cluster: &FoundationDBCluster) -> Result<PathBuf, AdminError> {
        let name = format!(
            "{}.{}.cluster",
            cluster.namespace().unwrap_or_default(),
            cluster.name_any()
        );
        let command = format!("write cluster file {name}");
        let connection = cluster
            .status
            .as_ref()
            .and_then(|s| s.connection_string.clone())
            .ok_or_else(|| AdminError::Unavailable {
                command: command.clone(),
                output: "the cluster has no connection string yet".to_owned(),
            })?;
        let path = self.work_dir.join(&name);
        private_dir(&self.work_dir)
            .and_then(|()| replace_file(&self.work_dir, &name, &format!("{connection}\n")))
            .map_err(|source| AdminError::Spawn {
                command,
                program: path.display().to_string(),
                source,
            })?;
        Ok(path)
    }
}

impl AdminClientProvider for FdbcliAdminProvider {
    fn admin_for(&self, cluster: &FoundationDBCluster) -> Result<Arc<dyn AdminClient>, AdminError> {
        let versions = tool_versions(cluster).map_err(|reason| AdminError::Rejected {
            command: CHOOSE_TOOLS.to_owned(),
            reason,
        })?;
        let layout = &self.tools.layout;
        let installed = |path: &Path| self.runner.is_installed(path);
        let fdbcli = layout
            .find_with(FdbTool::Fdbcli, &versions.running, &installed)
            .map_err(|missing| AdminError::MissingTool {
                command: CHOOSE_TOOLS.to_owned(),
                missing,
            })?;
        let cluster_file = self.write_cluster_file(cluster)?;
        let mut client = FdbcliAdminClient::new(self.config(
            fdbcli.clone(),
            cluster_file.clone(),
            versions.running,
        ))
        .with_runner(self.runner.clone());
        // A missing target tool is reported by CheckClientCompatibility (`missing_tool`),
        // which holds the upgrade before anything is staged.
        if let Some(target) = versions.upgrade_target
            && let Ok(target_fdbcli) = layout.find_with(FdbTool::Fdbcli, &target, &installed)
            && target_fdbcli != fdbcli
        {
            client = client.with_fallback(self.config(target_fdbcli, cluster_file, target));
        }
        Ok(Arc::new(client))
    }

    fn missing_tool(&self, version: &FdbVersion) -> Option<MissingTool> {
        let installed = |path: &Path| self.runner.is_installed(path);
        self.tools
            .layout
            .find_with(FdbTool::Fdbcli, version, &installed)
            .err()
    }
}

/// Makes `dir` the operator's private directory (issue 40): created 0700 when missing;
/// an existing one must be a real directory (not a symlink) owned by this user, and is
/// made 0700 (the default `/tmp/fdb-operator` is in a shared directory, where another
/// user could have made it first to swap the cluster files fdbcli reads).
pub(crate) fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a directory but a link or a file", dir.display()),
        ));
    }
    if meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} belongs to another user (uid {}); choose another --work-dir",
                dir.display(),
                meta.uid()
            ),
        ));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Replaces `dir/name` with `text` through a new file renamed into place: a symlink
/// planted at the name is replaced, never written through.
fn replace_file(dir: &Path, name: &str, text: &str) -> std::io::Result<()> {
    let partial = dir.join(format!(".{name}.{}.partial", std::process::id()));
    let _ = std::fs::remove_file(&partial);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)?;
    file.write_all(text.as_bytes())?;
    std::fs::rename(&partial, dir.join(name)).inspect_err(|_| {
        let _ = std::fs::remove_file(&partial);
    })
}

/// Builds sidecar clients at `http(s)://<pod IP>:8080`: https for pods whose sidecar
/// runs with `--tls` (as the Go operator decides per pod), or for every pod when built
/// with `tls`.
#[derive(Debug)]
pub struct HttpSidecarProvider {
    factory: SidecarClientFactory,
    tls: bool,
}

impl HttpSidecarProvider {
    /// A provider using `factory`; `tls` selects https for every pod, else only for pods
    /// whose sidecar serves TLS.
    pub fn new(factory: SidecarClientFactory, tls: bool) -> Self {
        Self { factory, tls }
    }
}

/// Whether the pod's sidecar container runs with `--tls` (it then serves only https).
pub(crate) fn sidecar_serves_tls(pod: &Pod) -> bool {
    pod.spec
        .iter()
        .flat_map(|spec| spec.containers.iter())
        .filter(|container| container.name == SIDECAR_CONTAINER)
        .flat_map(|container| {
            container
                .command
                .iter()
                .flatten()
                .chain(container.args.iter().flatten())
        })
        .any(|arg| arg == "--tls")
}

impl SidecarProvider for HttpSidecarProvider {
    fn sidecar_for(
        &self,
        _cluster: &FoundationDBCluster,
        pod: &Pod,
    ) -> Result<Arc<dyn SidecarApi>, SidecarClientError> {
        let ip = crate::controller::objects::pod_ip(pod).unwrap_or_default();
        let ip: IpAddr = ip.parse().map_err(|_| SidecarClientError::InvalidUrl {
            url: format!("pod {} IP {ip:?}", pod.name_any()),
            reason: "the pod has no valid IP".to_owned(),
        })?;
        let tls = self.tls || sidecar_serves_tls(pod);
        Ok(Arc::new(self.factory.client(&base_url(ip, tls))?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_provider_writes_the_cluster_file() {
        let dir = tempfile::tempdir().unwrap();
        let provider = FdbcliAdminProvider {
            tools: FdbTools::new(dir.path().to_owned(), Some("fdbcli".into())),
            work_dir: dir.path().join("clusters"),
            tls: None,
            runner: crate::fdb::ProcessRunner::shared(),
        };
        let mut cluster = crate::controller::fixtures::cluster("version: 7.1.57");
        cluster.metadata.namespace = Some("ns".into());
        assert!(provider.admin_for(&cluster).is_err());
        cluster.status = Some(fdb_shared::api::FoundationDBClusterStatus {
            connection_string: Some("sample:abc@10.0.0.1:4501".into()),
            ..Default::default()
        });
        provider.admin_for(&cluster).unwrap();
        let written =
            std::fs::read_to_string(dir.path().join("clusters/ns.sample.cluster")).unwrap();
        assert_eq!(written, "sample:abc@10.0.0.1:4501\n");
    }

    #[test]
    fn the_work_dir_is_private_and_a_planted_link_is_not_followed() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let work_dir = dir.path().join("work");
        // A shared, world-writable directory (as someone else might have left it).
        std::fs::create_dir(&work_dir).unwrap();
        std::fs::set_permissions(&work_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, work_dir.join("ns.sample.cluster")).unwrap();
        let provider = FdbcliAdminProvider {
            tools: FdbTools::new(dir.path().to_owned(), Some("fdbcli".into())),
            work_dir: work_dir.clone(),
            tls: None,
            runner: crate::fdb::ProcessRunner::shared(),
        };
        let mut cluster = crate::controller::fixtures::cluster("version: 7.1.57");
        cluster.metadata.namespace = Some("ns".into());
        cluster.status = Some(fdb_shared::api::FoundationDBClusterStatus {
            connection_string: Some("sample:abc@10.0.0.1:4501".into()),
            ..Default::default()
        });
        provider.admin_for(&cluster).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        let mode = std::fs::metadata(&work_dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        // A work dir that is a link is refused.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&work_dir, &link).unwrap();
        assert!(private_dir(&link).is_err());
    }

    #[test]
    fn sidecar_provider_needs_a_pod_ip() {
        let provider = HttpSidecarProvider::new(SidecarClientFactory::new(None).unwrap(), false);
        let cluster = FoundationDBCluster::new("sample", Default::default());
        let mut pod = Pod::default();
        assert!(provider.sidecar_for(&cluster, &pod).is_err());
        pod.status = Some(k8s_openapi::api::core::v1::PodStatus {
            pod_ip: Some("127.0.0.9".into()),
            ..Default::default()
        });
        assert!(provider.sidecar_for(&cluster, &pod).is_ok());
    }

    #[test]
    fn https_is_chosen_per_pod_from_the_sidecar_arguments() {
        let plain: Pod = serde_json::from_value(serde_json::json!({
            "spec": {"containers": [
                {"name": "foundationdb", "args": ["--tls"]},
                {"name": "foundationdb-kubernetes-sidecar", "args": ["--copy-file", "fdb.cluster"]}
            ]}
        }))
        .unwrap();
        assert!(
            !sidecar_serves_tls(&plain),
            "the main container's args do not count"
        );
        let tls: Pod = serde_json::from_value(serde_json::json!({
            "spec": {"containers": [
                {"name": "foundationdb-kubernetes-sidecar", "args": ["--copy-file", "fdb.cluster", "--tls"]}
            ]}
        }))
        .unwrap();
        assert!(sidecar_serves_tls(&tls));
    }
}
