//! The boot of a scenario's `snapshot`: the captured objects go into the API server as
//! they were, each pod gets its IP of the run's block (every captured occurrence of its
//! old IP mapped to it), the world starts the pods on their captured nodes, and the
//! simulated database becomes the captured one once their processes run.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Boot, RunError};
use crate::kube::FakeApiServer;
use crate::scenario::snapshot::{Captured, SnapshotSpec, remap_ips};
use crate::scenario::snapshot_secrets::{fill_tls_placeholders, is_tls_placeholder_secret};
use crate::tls::SimulatedPki;

/// The certificates a run puts in place of the placeholders of the capture's TLS
/// Secrets (`scenario/snapshot_secrets.rs`), when it has such Secrets.
pub(super) fn placeholder_pki(
    spec: &SnapshotSpec,
    cluster: &str,
) -> Result<Option<SimulatedPki>, RunError> {
    let captured = spec
        .check()
        .map_err(|(field, message)| RunError::InvalidCluster(format!("{field}: {message}")))?;
    if !captured.objects.iter().any(is_tls_placeholder_secret) {
        return Ok(None);
    }
    Ok(Some(SimulatedPki::generate(cluster)?))
}

/// Puts the capture into the world; returns a summary line for the progress output.
pub(super) async fn boot(
    spec: &SnapshotSpec,
    api: &FakeApiServer,
    boot: Boot<'_>,
) -> Result<String, RunError> {
    let Boot {
        world,
        fdb,
        placeholder_pki,
    } = boot;
    let Captured {
        mut objects,
        mut status,
        cluster,
    } = spec
        .check()
        .map_err(|(field, message)| RunError::InvalidCluster(format!("{field}: {message}")))?;
    let filled = match placeholder_pki {
        Some(pki) => fill_tls_placeholders(&mut objects, pki),
        None => Vec::new(),
    };
    let mut pods: Vec<(String, String, Option<String>)> = objects
        .iter()
        .filter(|o| kind(o) == "Pod")
        .map(|o| {
            (
                text(o, "/metadata/namespace").unwrap_or_else(|| "default".to_owned()),
                text(o, "/metadata/name").unwrap_or_default(),
                text(o, "/status/podIP"),
            )
        })
        .collect();
    pods.sort();
    let mut ip_map = BTreeMap::new();
    for (namespace, name, captured_ip) in &pods {
        let ip = world.reserve_ip(namespace, name);
        if let Some(captured_ip) = captured_ip {
            ip_map.insert(captured_ip.clone(), ip.to_string());
        }
    }
    for object in &mut objects {
        remap_ips(object, &ip_map);
    }
    if let Some(status) = status.as_mut() {
        remap_ips(status, &ip_map);
    }
    // Nodes first (the pods run on them), then everything else as captured.
    for (index, object) in objects.iter().enumerate() {
        if kind(object) == "Node" {
            restore(api, index, object)?;
            world.adopt_node(&text(object, "/metadata/name").unwrap_or_default());
        }
    }
    for (index, object) in objects.iter().enumerate() {
        if kind(object) != "Node" {
            restore(api, index, object)?;
        }
    }
    world.settle().await?;
    let mut cluster = cluster;
    remap_ips(&mut cluster, &ip_map);
    let status = match status {
        Some(status) => status,
        None => synthesized_status(&cluster),
    };
    let report = fdb
        .seed_from_status(status)
        .map_err(|error| RunError::InvalidCluster(format!("snapshot.{error}")))?;
    world.settle().await?;
    let certificates = if filled.is_empty() {
        String::new()
    } else {
        format!(
            ", certificates generated for the run in the placeholders of {}",
            filled.join(", ")
        )
    };
    Ok(format!(
        "snapshot: {} objects, {} pods (IPs mapped into the run's block), {} exclusions, \
         {} clients, {:.2} GiB per storage process, {}{certificates}",
        objects.len(),
        pods.len(),
        report.exclusions,
        report.clients,
        report.storage_gib.unwrap_or(0.0),
        if report.roles_kept {
            "transaction roles as captured"
        } else {
            "transaction roles recruited anew"
        }
    ))
}

/// A `status json` for a capture without one: the cluster's own status says how the
/// database is configured; the rest is a healthy database.
fn synthesized_status(cluster: &Value) -> Value {
    let configuration = cluster
        .pointer("/status/databaseConfiguration")
        .cloned()
        .unwrap_or_else(|| json!({}));
    json!({
        "client": {},
        "cluster": {
            "configuration": configuration,
            "connection_string": cluster.pointer("/status/connectionString"),
        }
    })
}

fn restore(api: &FakeApiServer, index: usize, object: &Value) -> Result<(), RunError> {
    api.restore(object.clone()).map(|_| ()).map_err(|error| {
        RunError::InvalidCluster(format!(
            "snapshot.objects[{index}] {} {}/{}: {error}",
            kind(object),
            text(object, "/metadata/namespace").unwrap_or_default(),
            text(object, "/metadata/name").unwrap_or_default(),
        ))
    })
}

fn kind(object: &Value) -> &str {
    object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn text(object: &Value, pointer: &str) -> Option<String> {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
}
