//! State of one reconcile pass: the snapshot the steps decide from, and the I/O they act
//! through. The snapshot is read when the first step needs it and refreshed before each
//! later step from what the steps before wrote (the rule is in [`super::super::snapshot`]); a
//! read failure is reported by the step about to run, as if it had read the data itself.

use fdb_shared::api::{FoundationDBCluster, FoundationDBClusterStatus};
use fdb_shared::validation::ValidatedCluster;
use jiff::Timestamp;

use std::collections::BTreeMap;

use super::super::cache::{OWN_WRITE_WAIT, ObjectCache};
use super::super::context::Context;
use super::super::errors::StepError;
use super::super::model::config_map::config_map_name;
use super::super::snapshot::{ClusterSnapshot, Fresh, PodSource, SnapshotParts};
use super::io::{Changes, ObjectKind, PassIo};

/// What the pass has observed so far.
#[derive(Debug)]
enum Observed {
    /// Nothing yet: the cluster as validated.
    Nothing(Box<ValidatedCluster>),
    /// The snapshot.
    Snapshot(Box<ClusterSnapshot>),
}

/// The per-pass state.
#[derive(Debug)]
pub(crate) struct PassState {
    now: Timestamp,
    observed: Observed,
    io: PassIo,
}

/// The labels every resource of the cluster carries.
fn match_labels(cluster: &FoundationDBCluster) -> BTreeMap<String, String> {
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    cluster.spec.labels.match_labels(name)
}

/// The label selector of the cluster's resources.
fn label_selector(labels: &BTreeMap<String, String>) -> String {
    labels
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The watch cache, when there is one that holds every object of the cluster and has
/// its first lists; else the pass LISTs.
fn usable_cache<'c>(
    ctx: &'c Context,
    labels: &BTreeMap<String, String>,
) -> Option<&'c ObjectCache> {
    ctx.cache
        .as_deref()
        .filter(|cache| cache.is_ready() && cache.selector().covers(labels))
}

/// The cached pods of the cluster, as the cache keeps them (decoded only when a step
/// asks for a pod's spec).
fn cached_pods(
    cache: &ObjectCache,
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> Vec<PodSource> {
    cache.pod_sources(namespace, labels)
}

/// The cluster's pods, listed.
async fn listed_pods(
    io: &mut PassIo,
    ctx: &Context,
    selector: &str,
) -> Result<Vec<PodSource>, StepError> {
    let pods: Vec<std::sync::Arc<k8s_openapi::api::core::v1::Pod>> =
        io.list(ctx, selector, "pods").await?;
    Ok(pods.into_iter().map(PodSource::Listed).collect())
}

/// The namespace of the cluster.
fn namespace_of(cluster: &FoundationDBCluster) -> &str {
    cluster.metadata.namespace.as_deref().unwrap_or_default()
}

/// `cluster` with `status` (written or staged); the spec and metadata stay those the
/// pass started with, so one pass works on one spec.
fn with_status_of(
    cluster: &ValidatedCluster,
    status: FoundationDBClusterStatus,
) -> Result<ValidatedCluster, StepError> {
    let mut updated = cluster.cluster().clone();
    updated.status = Some(status);
    ValidatedCluster::new(updated).map_err(|e| StepError::InvalidState(e.to_string()))
}

impl PassState {
    /// A pass over `cluster` at `now`.
    pub(crate) fn new(cluster: ValidatedCluster, now: Timestamp) -> Self {
        Self {
            now,
            io: PassIo::new(cluster.cluster()),
            observed: Observed::Nothing(Box::new(cluster)),
        }
    }

    /// The cluster as last read or written.
    pub(crate) fn cluster(&self) -> &FoundationDBCluster {
        if let Some(written) = self.io.written_cluster() {
            return written;
        }
        match &self.observed {
            Observed::Nothing(cluster) => cluster.cluster(),
            Observed::Snapshot(snapshot) => snapshot.cluster(),
        }
    }

    /// Writes the status the steps staged (see [`PassIo::flush_status`]): the pass's
    /// one status write, at its end.
    pub(crate) async fn flush(&mut self, ctx: &Context) -> Result<bool, StepError> {
        self.io.flush_status(ctx).await
    }

    /// The pass's latest status (written or staged); the spec and metadata are
    /// [`PassState::cluster`]'s.
    pub(crate) fn latest_status(&self) -> &FoundationDBClusterStatus {
        self.io.latest_status()
    }

    /// Why a pod a step asked for did not decode (see
    /// [`ClusterSnapshot::decode_failure`]): the pass fails after that step.
    pub(crate) fn decode_failure(&self) -> Option<String> {
        match &self.observed {
            Observed::Snapshot(snapshot) => snapshot.decode_failure().map(str::to_owned),
            Observed::Nothing(_) => None,
        }
    }

    /// Whether the last UpdateStatus of this pass judged the cluster Reconciled.
    pub(crate) fn judged_reconciled(&self) -> Option<bool> {
        self.io.judged_reconciled()
    }

    /// The snapshot for the next step (read, or refreshed from what was written since),
    /// and the I/O to act through.
    pub(crate) async fn prepare(
        &mut self,
        ctx: &Context,
    ) -> Result<(&ClusterSnapshot, &mut PassIo), StepError> {
        let changes = self.io.take_changes();
        match &self.observed {
            Observed::Nothing(cluster) => {
                let parts = read(
                    &mut self.io,
                    ctx,
                    ValidatedCluster::clone(cluster),
                    self.now,
                )
                .await?;
                let snapshot = ClusterSnapshot::new(parts).with_desired_memo(ctx.desired.clone());
                self.observed = Observed::Snapshot(Box::new(snapshot));
            }
            Observed::Snapshot(snapshot) if !changes.is_empty() => {
                let fresh = read_again(&mut self.io, ctx, snapshot, changes).await?;
                if let Observed::Snapshot(snapshot) = &mut self.observed {
                    snapshot.refresh(fresh);
                }
            }
            Observed::Snapshot(_) => {}
        }
        match &self.observed {
            Observed::Snapshot(snapshot) => Ok((snapshot, &mut self.io)),
            // Just read above.
            Observed::Nothing(_) => Err(StepError::InvalidState(
                "the pass has no snapshot of the cluster".to_owned(),
            )),
        }
    }
}

/// Reads everything: pods, PVCs, services, the ConfigMap, then `status json`.
async fn read(
    io: &mut PassIo,
    ctx: &Context,
    cluster: ValidatedCluster,
    now: Timestamp,
) -> Result<SnapshotParts, StepError> {
    let labels = match_labels(cluster.cluster());
    let namespace = namespace_of(cluster.cluster());
    let config_map_name = config_map_name(cluster.cluster());
    let (pods, pvcs, services, config_map) = match usable_cache(ctx, &labels) {
        Some(cache) => (
            cached_pods(cache, namespace, &labels),
            cache.pvcs(namespace, &labels),
            cache.services(namespace, &labels),
            cache.config_map(namespace, &config_map_name),
        ),
        None => {
            let selector = label_selector(&labels);
            (
                listed_pods(io, ctx, &selector).await?,
                io.list(ctx, &selector, "persistentvolumeclaims").await?,
                io.list(ctx, &selector, "services").await?,
                io.get_config_map(ctx, &config_map_name).await?,
            )
        }
    };
    let database = io.read_database(ctx, cluster.cluster()).await;
    let nodes = if cluster
        .spec()
        .automation_options
        .replacements
        .taint_replacement_options
        .is_empty()
    {
        None
    } else {
        let names: std::collections::BTreeSet<String> = pods
            .iter()
            .filter_map(|pod| pod.node_name().map(str::to_owned))
            .collect();
        Some(io.get_nodes(ctx, &names).await)
    };
    Ok(SnapshotParts {
        cluster,
        now,
        pods,
        pvcs,
        services,
        config_map,
        database,
        nodes,
    })
}

/// Reads again what `changes` touched (the rest of `snapshot` stays as it is).
async fn read_again(
    io: &mut PassIo,
    ctx: &Context,
    snapshot: &ClusterSnapshot,
    changes: Changes,
) -> Result<Fresh, StepError> {
    let mut fresh = Fresh::default();
    if let Some(status) = changes.status {
        fresh.cluster = Some(with_status_of(snapshot.validated(), status)?);
    }
    let cluster = fresh
        .cluster
        .as_ref()
        .map_or_else(|| snapshot.cluster(), ValidatedCluster::cluster);
    let labels = match_labels(cluster);
    let selector = label_selector(&labels);
    let namespace = namespace_of(cluster);
    let cache = usable_cache(ctx, &labels);
    for kind in &changes.objects {
        let written = changes
            .expectations
            .get(kind)
            .map(Vec::as_slice)
            .unwrap_or_default();
        // The pass's own writes must show before the cache stands for the kind.
        let cached = match cache {
            Some(cache) => {
                let caught_up = cache
                    .wait_for_writes(*kind, namespace, written, OWN_WRITE_WAIT)
                    .await;
                if !caught_up {
                    tracing::warn!(
                        ?kind,
                        "the watch cache does not show this pass's writes; listing"
                    );
                }
                caught_up.then_some(cache)
            }
            None => None,
        };
        match (kind, cached) {
            (ObjectKind::Pods, Some(cache)) => {
                fresh.pods = Some(cached_pods(cache, namespace, &labels));
            }
            (ObjectKind::Pods, None) => fresh.pods = Some(listed_pods(io, ctx, &selector).await?),
            (ObjectKind::Pvcs, Some(cache)) => fresh.pvcs = Some(cache.pvcs(namespace, &labels)),
            (ObjectKind::Pvcs, None) => {
                fresh.pvcs = Some(io.list(ctx, &selector, "persistentvolumeclaims").await?);
            }
            (ObjectKind::Services, Some(cache)) => {
                fresh.services = Some(cache.services(namespace, &labels));
            }
            (ObjectKind::Services, None) => {
                fresh.services = Some(io.list(ctx, &selector, "services").await?);
            }
            (ObjectKind::ConfigMap, Some(cache)) => {
                fresh.config_map = Some(cache.config_map(namespace, &config_map_name(cluster)));
            }
            (ObjectKind::ConfigMap, None) => {
                let name = config_map_name(cluster);
                fresh.config_map = Some(io.get_config_map(ctx, &name).await?);
            }
        }
    }
    let connection =
        |c: &FoundationDBCluster| c.status.as_ref().and_then(|s| s.connection_string.clone());
    if changes.database || connection(cluster) != connection(snapshot.cluster()) {
        fresh.database = Some(io.read_database(ctx, cluster).await);
    }
    Ok(fresh)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::cluster;

    #[test]
    fn a_status_write_brings_its_status_not_a_newer_spec() {
        let started = ValidatedCluster::new(cluster("version: 7.1.57")).unwrap();
        let mut written = cluster("version: 7.1.60");
        written.metadata.generation = Some(2);
        written.status = Some(fdb_shared::api::FoundationDBClusterStatus {
            connection_string: Some("a:b@10.0.0.1:4501".into()),
            ..Default::default()
        });
        let refreshed =
            with_status_of(&started, written.status.clone().unwrap_or_default()).unwrap();
        assert_eq!(refreshed.spec().version, "7.1.57");
        assert_eq!(refreshed.cluster().metadata.generation, Some(1));
        assert_eq!(
            refreshed
                .cluster()
                .status
                .as_ref()
                .and_then(|s| s.connection_string.as_deref()),
            Some("a:b@10.0.0.1:4501")
        );
    }
}
