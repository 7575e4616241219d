//! `fdb-operator snapshot`: captures a live cluster through the Kubernetes API and its
//! `status json` (`spec/cli.md`; the format is `spec/simulation.md`, "starting from a live
//! cluster's snapshot").
//!
//! Objects are read as the API server returns them (untyped, so fields this operator does
//! not know survive): the FoundationDBCluster, the pods, PVCs, services and ConfigMaps
//! labelled with its name, every ConfigMap and Secret its pods mount (Secret values
//! replaced by a placeholder unless asked otherwise), the nodes its pods run on, and the
//! backups and restores naming it.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{ConfigMap, Node, PersistentVolumeClaim, Pod, Secret, Service};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::Value;

use crate::controller::context::AdminClientProvider;
use fdb_shared::api::cluster::settings::CLUSTER_NAME_LABEL;
use fdb_shared::api::{FoundationDBBackup, FoundationDBCluster, FoundationDBRestore};

/// What a Secret's values become in a capture without `--include-secret-values`.
pub const SECRET_PLACEHOLDER: &str = "captured-without-value";
/// [`SECRET_PLACEHOLDER`] in base64, as a Secret's `data` holds it.
pub const SECRET_PLACEHOLDER_BASE64: &str = "Y2FwdHVyZWQtd2l0aG91dC12YWx1ZQ==";

/// What to capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureOptions {
    /// The cluster's namespace.
    pub namespace: String,
    /// The FoundationDBCluster's name.
    pub cluster: String,
    /// Keep Secret values as they are (else each becomes [`SECRET_PLACEHOLDER`]).
    pub include_secret_values: bool,
}

/// A captured cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Capture {
    /// The objects, nodes first, as the API server returned them.
    pub objects: Vec<Value>,
    /// The database's `status json`, when it answered.
    pub status: Option<Value>,
}

/// Why a capture failed.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// A Kubernetes request failed.
    #[error("reading {what}")]
    Kube {
        /// What was being read.
        what: String,
        /// The client's error.
        source: kube::Error,
    },
    /// The cluster object cannot be read as a FoundationDBCluster.
    #[error("FoundationDBCluster {namespace}/{name}: {message}")]
    Cluster {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A captured object could not be turned into JSON.
    #[error("{what}")]
    Json {
        /// Which object.
        what: String,
        /// The error.
        source: serde_json::Error,
    },
}

fn kube_error(what: impl Into<String>) -> impl FnOnce(kube::Error) -> CaptureError {
    let what = what.into();
    move |source| CaptureError::Kube { what, source }
}

fn to_value(object: &DynamicObject, what: &str) -> Result<Value, CaptureError> {
    serde_json::to_value(object).map_err(|source| CaptureError::Json {
        what: what.to_owned(),
        source,
    })
}

async fn list<K>(
    client: &kube::Client,
    namespace: &str,
    selector: &str,
    what: &str,
) -> Result<Vec<DynamicObject>, CaptureError>
where
    K: kube::Resource<DynamicType = ()>,
{
    let resource = ApiResource::erase::<K>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    let params = ListParams::default().labels(selector);
    let mut items = api.list(&params).await.map_err(kube_error(what))?.items;
    // A list's items carry no kind; the capture is a stream of whole objects.
    for item in &mut items {
        item.types = Some(kube::api::TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
    }
    Ok(items)
}

async fn get<K>(
    client: &kube::Client,
    namespace: Option<&str>,
    name: &str,
    what: &str,
) -> Result<Option<DynamicObject>, CaptureError>
where
    K: kube::Resource<DynamicType = ()>,
{
    let resource = ApiResource::erase::<K>(&());
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let mut object = api.get_opt(name).await.map_err(kube_error(what))?;
    if let Some(object) = object.as_mut() {
        object.types = Some(kube::api::TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
    }
    Ok(object)
}

/// ConfigMaps and Secrets a pod mounts (volumes and projected sources).
fn mounted(pod: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut config_maps = BTreeSet::new();
    let mut secrets = BTreeSet::new();
    let volumes = pod.pointer("/spec/volumes").and_then(Value::as_array);
    for volume in volumes.into_iter().flatten() {
        if let Some(name) = volume.pointer("/configMap/name").and_then(Value::as_str) {
            config_maps.insert(name.to_owned());
        }
        if let Some(name) = volume.pointer("/secret/secretName").and_then(Value::as_str) {
            secrets.insert(name.to_owned());
        }
        let sources = volume
            .pointer("/projected/sources")
            .and_then(Value::as_array);
        for source in sources.into_iter().flatten() {
            if let Some(name) = source.pointer("/configMap/name").and_then(Value::as_str) {
                config_maps.insert(name.to_owned());
            }
            if let Some(name) = source.pointer("/secret/name").and_then(Value::as_str) {
                secrets.insert(name.to_owned());
            }
        }
    }
    (config_maps, secrets)
}

/// Replaces every value of a Secret by the placeholder (keys stay: pods mount them),
/// wherever a value can hide: `data`, `stringData`, and every annotation (`kubectl apply`
/// keeps the whole object, values included, in
/// `kubectl.kubernetes.io/last-applied-configuration`; other tools keep copies in
/// theirs); `managedFields` (the field manager's record of every key written) is
/// dropped.
fn redact(secret: &mut Value) {
    if let Some(metadata) = secret.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
        if let Some(annotations) = metadata
            .get_mut("annotations")
            .and_then(Value::as_object_mut)
        {
            for value in annotations.values_mut() {
                *value = Value::from(SECRET_PLACEHOLDER);
            }
        }
    }
    if let Some(data) = secret.get_mut("data").and_then(Value::as_object_mut) {
        for value in data.values_mut() {
            *value = Value::from(SECRET_PLACEHOLDER_BASE64);
        }
    }
    if let Some(data) = secret.get_mut("stringData").and_then(Value::as_object_mut) {
        for value in data.values_mut() {
            *value = Value::from(SECRET_PLACEHOLDER);
        }
    }
}

/// Captures the cluster; `progress` receives a line per kind read.
pub async fn capture(
    client: &kube::Client,
    admin: &dyn AdminClientProvider,
    options: &CaptureOptions,
    progress: &dyn Fn(&str),
) -> Result<Capture, CaptureError> {
    let (objects, typed) = capture_objects(client, options, progress).await?;
    let status = match admin.admin_for(&typed) {
        Ok(client) => match client.status().await {
            Ok(status) => serde_json::to_value(&status).ok(),
            Err(error) => {
                progress(&format!(
                    "status json: {} (captured without it)",
                    fdb_shared::error_chain::ErrorChain(&error)
                ));
                None
            }
        },
        Err(error) => {
            progress(&format!(
                "status json: {} (captured without it)",
                fdb_shared::error_chain::ErrorChain(&error)
            ));
            None
        }
    };
    if let Some(status) = &status {
        progress(&status_line(status));
    }
    Ok(Capture { objects, status })
}

/// The progress line of a captured `status json`.
pub fn status_line(status: &Value) -> String {
    let processes = status
        .pointer("/cluster/processes")
        .and_then(Value::as_object)
        .map_or(0, serde_json::Map::len);
    format!("captured status json ({processes} processes)")
}

/// The nodes the pods run on, and the ConfigMaps (those the pods mount and those
/// labelled for the cluster) and Secrets the pods mount (values redacted unless asked).
async fn capture_what_pods_use(
    client: &kube::Client,
    options: &CaptureOptions,
    selector: &str,
    pods: &[Value],
    objects: &mut Vec<Value>,
    progress: &dyn Fn(&str),
) -> Result<(), CaptureError> {
    let namespace = options.namespace.as_str();
    let mut nodes = BTreeSet::new();
    let mut config_map_names = BTreeSet::new();
    let mut secret_names = BTreeSet::new();
    for pod in pods {
        if let Some(node) = pod.pointer("/spec/nodeName").and_then(Value::as_str) {
            nodes.insert(node.to_owned());
        }
        let (config_maps, secrets) = mounted(pod);
        config_map_names.extend(config_maps);
        secret_names.extend(secrets);
    }
    for node in &nodes {
        if let Some(object) = get::<Node>(client, None, node, "a node").await? {
            objects.push(to_value(&object, "a node")?);
        }
    }
    progress(&format!(
        "captured {} pods on {} nodes",
        pods.len(),
        nodes.len()
    ));
    let labelled_config_maps = list::<ConfigMap>(client, namespace, selector, "ConfigMaps").await?;
    for config_map in &labelled_config_maps {
        if let Some(name) = &config_map.metadata.name {
            config_map_names.insert(name.clone());
        }
    }
    for config_map in &config_map_names {
        if let Some(object) =
            get::<ConfigMap>(client, Some(namespace), config_map, "a ConfigMap").await?
        {
            objects.push(to_value(&object, "a ConfigMap")?);
        }
    }
    for secret in &secret_names {
        if let Some(object) = get::<Secret>(client, Some(namespace), secret, "a Secret").await? {
            let mut value = to_value(&object, "a Secret")?;
            if !options.include_secret_values {
                redact(&mut value);
            }
            objects.push(value);
        }
    }
    progress(&format!(
        "captured {} ConfigMaps, {} Secrets{}",
        config_map_names.len(),
        secret_names.len(),
        if options.include_secret_values {
            " (with their values)"
        } else {
            " (values replaced by placeholders)"
        }
    ));
    Ok(())
}

/// The backups and restores that name the cluster.
async fn capture_backups_and_restores(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    objects: &mut Vec<Value>,
    progress: &dyn Fn(&str),
) -> Result<(), CaptureError> {
    for (what, field) in [
        ("backups", "/spec/clusterName"),
        ("restores", "/spec/destinationClusterName"),
    ] {
        let found = if what == "backups" {
            list::<FoundationDBBackup>(client, namespace, "", what).await?
        } else {
            list::<FoundationDBRestore>(client, namespace, "", what).await?
        };
        let mut count = 0;
        for object in &found {
            let value = to_value(object, what)?;
            if value.pointer(field).and_then(Value::as_str) == Some(name) {
                objects.push(value);
                count += 1;
            }
        }
        if count > 0 {
            progress(&format!("captured {count} {what}"));
        }
    }
    Ok(())
}

/// Captures the cluster's objects only (the `status json` is read by the caller, as
/// `kubectl fdb snapshot` does through `pods/exec`); returns them with the cluster, typed.
pub async fn capture_objects(
    client: &kube::Client,
    options: &CaptureOptions,
    progress: &dyn Fn(&str),
) -> Result<(Vec<Value>, FoundationDBCluster), CaptureError> {
    let namespace = options.namespace.as_str();
    let name = options.cluster.as_str();
    let cluster = get::<FoundationDBCluster>(client, Some(namespace), name, "the cluster")
        .await?
        .ok_or_else(|| CaptureError::Cluster {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            message: "not found".to_owned(),
        })?;
    let cluster = to_value(&cluster, "the cluster")?;
    let selector = format!("{CLUSTER_NAME_LABEL}={name}");
    let mut objects = Vec::new();
    let pods = list::<Pod>(client, namespace, &selector, "pods").await?;
    let pods: Vec<Value> = pods
        .iter()
        .map(|p| to_value(p, "a pod"))
        .collect::<Result<_, _>>()?;
    capture_what_pods_use(client, options, &selector, &pods, &mut objects, progress).await?;
    let pvcs = list::<PersistentVolumeClaim>(client, namespace, &selector, "PVCs").await?;
    let services = list::<Service>(client, namespace, &selector, "services").await?;
    progress(&format!(
        "captured {} PVCs, {} services",
        pvcs.len(),
        services.len()
    ));
    for object in pvcs.iter().chain(services.iter()) {
        objects.push(to_value(object, "a PVC or service")?);
    }
    objects.push(cluster.clone());
    objects.extend(pods);
    capture_backups_and_restores(client, namespace, name, &mut objects, progress).await?;
    let typed: FoundationDBCluster =
        serde_json::from_value(cluster).map_err(|error| CaptureError::Cluster {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            message: error.to_string(),
        })?;
    Ok((objects, typed))
}
