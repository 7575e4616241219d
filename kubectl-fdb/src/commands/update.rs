//! `update connection-string`: the emergency repair of what the operator keeps as the
//! cluster's connection string (its status and the `cluster-file` key of its ConfigMap),
//! as the Go plugin does. The text is parsed and written back from the parsed value, so
//! what lands in the ConfigMap (and from there in every pod's cluster file) is a
//! well-formed connection string, never the raw argument.

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::api::cluster::{CLUSTER_FILE_KEY, config_map_name};
use fdb_shared::connection_string::ConnectionString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::cli::UpdateConnectionStringArgs;
use crate::error::PluginError;
use crate::session::Session;

/// What `update connection-string` will write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionStringChange {
    /// The cluster's connection string now (if its status has one).
    pub current: Option<String>,
    /// The new one, as parsed and written back.
    pub new: String,
    /// The ConfigMap whose `cluster-file` key is updated.
    pub config_map: String,
}

/// Checks the new connection string and describes the change (pure); `None` when the
/// cluster already has it.
pub fn plan(
    cluster: &FoundationDBCluster,
    text: &str,
) -> Result<Option<ConnectionStringChange>, PluginError> {
    // A cluster file may hold comment lines; an argument is one line, nothing else.
    if text.trim().contains(['\n', '\r']) {
        return Err(PluginError::Usage(format!(
            "connection string {text:?} is not valid: it must be one line"
        )));
    }
    let parsed = ConnectionString::parse(text.trim()).map_err(|error| {
        PluginError::Usage(format!(
            "connection string {text:?} is not valid: {}",
            fdb_shared::error_chain::ErrorChain(&error)
        ))
    })?;
    let new = parsed.to_string();
    let current = cluster
        .status
        .as_ref()
        .and_then(|status| status.connection_string.clone());
    if current.as_deref() == Some(new.as_str()) {
        return Ok(None);
    }
    Ok(Some(ConnectionStringChange {
        current,
        new,
        config_map: config_map_name(cluster),
    }))
}

/// Runs `update connection-string`.
pub async fn connection_string(
    session: &Session,
    args: &UpdateConnectionStringArgs,
) -> Result<u8, PluginError> {
    let cluster = session.cluster(&args.cluster).await?;
    let Some(change) = plan(&cluster, &args.connection_string)? else {
        println!(
            "FoundationDBCluster {}/{} already has the connection string {}",
            session.namespace,
            args.cluster,
            args.connection_string.trim()
        );
        return Ok(0);
    };
    let description = format!(
        "FoundationDBCluster {}/{}: connection string {} -> {}\nConfigMap {}: key {CLUSTER_FILE_KEY} set to the same",
        session.namespace,
        args.cluster,
        change.current.as_deref().unwrap_or("(none)"),
        change.new,
        change.config_map,
    );
    if args.dry_run {
        println!("{description}\nDry run: nothing was changed");
        return Ok(0);
    }
    session.confirm(&description)?;
    write_connection_string(session, &args.cluster, &change).await?;
    println!("Updated the connection string of {}", args.cluster);
    Ok(0)
}

/// Writes `change` through the Kubernetes API: the cluster's status, then its ConfigMap's
/// `cluster-file` key (shared with `fix-coordinator-ips`).
pub async fn write_connection_string(
    session: &Session,
    cluster: &str,
    change: &ConnectionStringChange,
) -> Result<(), PluginError> {
    let clusters: Api<FoundationDBCluster> =
        Api::namespaced(session.client.clone(), &session.namespace);
    clusters
        .patch_status(
            &crate::names::segment(cluster),
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"connectionString": change.new}})),
        )
        .await
        .map_err(|error| {
            session.error(
                error,
                &format!("update the status of FoundationDBCluster {cluster}"),
            )
        })?;
    let config_maps: Api<ConfigMap> = Api::namespaced(session.client.clone(), &session.namespace);
    config_maps
        .patch(
            &crate::names::segment(&change.config_map),
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {CLUSTER_FILE_KEY: change.new}})),
        )
        .await
        .map_err(|error| {
            session.error(error, &format!("update ConfigMap {}", change.config_map))
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster() -> FoundationDBCluster {
        serde_json::from_value(json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample", "namespace": "db"},
            "spec": {"version": "7.1.57"},
            "status": {"connectionString": "sample:abc@10.0.0.1:4501,10.0.0.2:4501,10.0.0.3:4501"},
        }))
        .unwrap()
    }

    #[test]
    fn a_new_string_is_written_back_from_its_parsed_form() {
        let change = plan(
            &cluster(),
            " sample:abc@10.0.0.9:4501,10.0.0.2:4501,10.0.0.3:4501\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            change.new,
            "sample:abc@10.0.0.9:4501,10.0.0.2:4501,10.0.0.3:4501"
        );
        assert_eq!(change.config_map, "sample-config");
        assert_eq!(
            change.current.as_deref(),
            Some("sample:abc@10.0.0.1:4501,10.0.0.2:4501,10.0.0.3:4501")
        );
    }

    #[test]
    fn the_same_string_changes_nothing_and_garbage_is_refused() {
        assert_eq!(
            plan(
                &cluster(),
                "sample:abc@10.0.0.1:4501,10.0.0.2:4501,10.0.0.3:4501"
            )
            .unwrap(),
            None
        );
        for bad in [
            "",
            "no-at-sign",
            "sample:abc@",
            "sample:abc@10.0.0.1:4501\nrm -rf /",
        ] {
            let error = plan(&cluster(), bad).unwrap_err();
            assert!(matches!(error, PluginError::Usage(_)), "{bad:?}: {error}");
        }
    }
}
