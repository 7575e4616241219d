//! Leader election on a `coordination.k8s.io/v1` Lease, so that of several replicas of
//! `fdb-operator run` only one reconciles.
//!
//! The protocol is client-go's: the leader writes its identity and `renewTime` into the
//! Lease every retry period with a resourceVersion-conditional replace (a concurrent
//! writer gets 409 and loses the race). Another replica takes the Lease only after the
//! record stayed unchanged for `leaseDuration`, measured on its own monotonic clock (not
//! by comparing wall clocks of different machines). The leader gives up when it could not
//! renew for `renewDeadline`, which is shorter than `leaseDuration`: it stops acting
//! before anyone else may take over.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use tokio::time::Instant;

use crate::clock::Clock;

/// Default `--leader-election-id`: the Lease's name.
pub(crate) const DEFAULT_LEASE_NAME: &str = "fdb-operator-leader";
/// Default lease duration (client-go's).
pub(crate) const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// Default renew deadline (client-go's).
pub(crate) const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// Default retry period (client-go's).
pub(crate) const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// Where the Lease is and how it is held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub lease_name: String,
    /// This replica's identity (`holderIdentity`), unique among the replicas.
    pub identity: String,
    /// How long a Lease that was not renewed keeps others from taking it.
    pub lease_duration: Duration,
    /// How long the leader keeps acting without a successful renewal.
    pub renew_deadline: Duration,
    /// How often the Lease is renewed, or tried by a replica that does not hold it.
    pub retry_period: Duration,
}

/// Why leader election cannot run, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// The durations do not leave the leader time to stop before another takes over.
    #[error(
        "leader election needs retry period ({retry:?}) < renew deadline ({renew:?}) < lease duration ({lease:?})"
    )]
    InvalidDurations {
        /// The lease duration.
        lease: Duration,
        /// The renew deadline.
        renew: Duration,
        /// The retry period.
        retry: Duration,
    },
    /// The identity is empty.
    #[error("leader election needs a non-empty identity (POD_NAME or the host name)")]
    NoIdentity,
    /// A Lease request failed (other than a lost race).
    #[error("lease {namespace}/{name}")]
    Api {
        /// Namespace of the Lease.
        namespace: String,
        /// Name of the Lease.
        name: String,
        /// The API error.
        source: kube::Error,
    },
}

impl LeaderElectionConfig {
    /// A configuration with client-go's default durations.
    pub fn new(namespace: impl Into<String>, identity: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            lease_name: DEFAULT_LEASE_NAME.to_owned(),
            identity: identity.into(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
        }
    }

    /// Checks the identity and that the durations are ordered.
    pub fn validate(&self) -> Result<(), LeaderError> {
        if self.identity.is_empty() {
            return Err(LeaderError::NoIdentity);
        }
        if !(self.retry_period < self.renew_deadline && self.renew_deadline < self.lease_duration) {
            return Err(LeaderError::InvalidDurations {
                lease: self.lease_duration,
                renew: self.renew_deadline,
                retry: self.retry_period,
            });
        }
        Ok(())
    }
}

/// The identity of this replica: `POD_NAME` (the downward API), else the host name.
pub(crate) fn default_identity() -> String {
    std::env::var("POD_NAME")
        .ok()
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|n| !n.is_empty()))
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|name| name.trim().to_owned())
                .filter(|name| !name.is_empty())
        })
        .unwrap_or_default()
}

/// What identifies one version of the Lease record: a change of any of these (any write,
/// through the resourceVersion) is a sign of life of its holder.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RecordKey {
    resource_version: Option<String>,
    holder: Option<String>,
    renew_time: Option<MicroTime>,
    transitions: Option<i32>,
}

impl RecordKey {
    fn of(lease: &Lease) -> Self {
        let spec = lease.spec.clone().unwrap_or_default();
        Self {
            resource_version: lease.metadata.resource_version.clone(),
            holder: spec.holder_identity.filter(|h| !h.is_empty()),
            renew_time: spec.renew_time,
            transitions: spec.lease_transitions,
        }
    }
}

/// A replica's handle on the Lease.
pub(crate) struct LeaseLock {
    api: Api<Lease>,
    config: LeaderElectionConfig,
    clock: Arc<dyn Clock>,
    /// The record last seen and when (local monotonic time) it was first seen so.
    observed: Option<(RecordKey, Instant)>,
}

impl std::fmt::Debug for LeaseLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseLock")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl LeaseLock {
    /// A handle on the Lease of `config` through `client`; `clock` stamps the record.
    pub(crate) fn new(
        client: kube::Client,
        config: LeaderElectionConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, LeaderError> {
        config.validate()?;
        Ok(Self {
            api: Api::namespaced(client, &config.namespace),
            config,
            clock,
            observed: None,
        })
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &LeaderElectionConfig {
        &self.config
    }

    fn api_error(&self, source: kube::Error) -> LeaderError {
        LeaderError::Api {
            namespace: self.config.namespace.clone(),
            name: self.config.lease_name.clone(),
            source,
        }
    }

    fn now(&self) -> MicroTime {
        MicroTime(self.clock.now())
    }

    fn lease_seconds(&self) -> i32 {
        i32::try_from(self.config.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX)
    }

    /// One attempt to take or renew the Lease: `Ok(true)` when this replica holds it
    /// now, `Ok(false)` when another does (or won a race).
    pub(crate) async fn try_acquire_or_renew(&mut self) -> Result<bool, LeaderError> {
        let name = self.config.lease_name.clone();
        let identity = self.config.identity.clone();
        let existing = self
            .api
            .get_opt(&name)
            .await
            .map_err(|e| self.api_error(e))?;
        let Some(mut lease) = existing else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(identity),
                    lease_duration_seconds: Some(self.lease_seconds()),
                    acquire_time: Some(self.now()),
                    renew_time: Some(self.now()),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.observed = Some((RecordKey::of(&created), Instant::now()));
                    Ok(true)
                }
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
                Err(error) => Err(self.api_error(error)),
            };
        };
        let key = RecordKey::of(&lease);
        let now = Instant::now();
        let since = match &self.observed {
            Some((seen, at)) if *seen == key => *at,
            _ => now,
        };
        self.observed = Some((key.clone(), since));
        let mine = key.holder.as_deref() == Some(identity.as_str());
        // Expiry is judged with this replica's own lease duration, as client-go does.
        if !mine && key.holder.is_some() && now.duration_since(since) < self.config.lease_duration {
            return Ok(false);
        }
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        if !mine {
            spec.holder_identity = Some(identity);
            spec.acquire_time = Some(MicroTime(self.clock.now()));
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
        }
        spec.lease_duration_seconds = Some(self.lease_seconds());
        spec.renew_time = Some(MicroTime(self.clock.now()));
        // The replace carries the resourceVersion read above: a concurrent writer makes
        // it fail with 409.
        match self
            .api
            .replace(&self.config.lease_name, &PostParams::default(), &lease)
            .await
        {
            Ok(written) => {
                self.observed = Some((RecordKey::of(&written), Instant::now()));
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(error) => Err(self.api_error(error)),
        }
    }

    /// Waits until this replica holds the Lease, trying every retry period. Failed
    /// requests are logged and retried.
    pub(crate) async fn acquire(&mut self) {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    tracing::info!(
                        identity = %self.config.identity,
                        lease = %self.config.lease_name,
                        "became the leader"
                    );
                    return;
                }
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(error = %fdb_shared::error_chain::ErrorChain(&error), "cannot take the leader lease")
                }
            }
            tokio::time::sleep(self.config.retry_period).await;
        }
    }

    /// Renews the Lease every retry period while this replica holds it; returns when it
    /// was not renewed within the renew deadline (or another replica holds it). The
    /// deadline runs from the start of the last successful renewal, so that the leader
    /// stops before a replica that saw that renewal may take over.
    pub(crate) async fn hold(&mut self) {
        let mut renewed_at = Instant::now();
        loop {
            let deadline = renewed_at + self.config.renew_deadline;
            let next = (Instant::now() + self.config.retry_period).min(deadline);
            tokio::time::sleep_until(next).await;
            if Instant::now() >= deadline {
                tracing::error!(
                    identity = %self.config.identity,
                    "the leader lease was not renewed within the renew deadline"
                );
                return;
            }
            let attempt_started = Instant::now();
            let attempt = tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await;
            match attempt {
                Ok(Ok(true)) => renewed_at = attempt_started,
                Ok(Ok(false)) => {
                    tracing::error!(identity = %self.config.identity, "another replica holds the leader lease");
                    return;
                }
                Ok(Err(error)) => {
                    tracing::warn!(error = %fdb_shared::error_chain::ErrorChain(&error), "cannot renew the leader lease")
                }
                Err(_) => {}
            }
        }
    }

    /// Gives the Lease up (holder cleared, one-second duration) so that another replica
    /// takes over at once after a graceful stop; retried every retry period for up to
    /// `patience` (the API server may be away for a moment). Logged when it fails.
    pub(crate) async fn release_within(&mut self, patience: Duration) {
        let deadline = Instant::now() + patience;
        loop {
            let attempt = tokio::time::timeout_at(deadline, self.release_once()).await;
            match attempt {
                Ok(Ok(())) => return,
                Ok(Err(error)) if Instant::now() + self.config.retry_period < deadline => {
                    tracing::warn!(%error, "cannot release the leader lease yet; retrying");
                    tokio::time::sleep(self.config.retry_period).await;
                }
                Ok(Err(error)) => {
                    tracing::warn!(%error, "cannot release the leader lease");
                    return;
                }
                Err(_) => {
                    tracing::warn!(?patience, "cannot release the leader lease in time");
                    return;
                }
            }
        }
    }

    /// One attempt to release the Lease (nothing to do when another replica holds it).
    async fn release_once(&mut self) -> Result<(), kube::Error> {
        let name = self.config.lease_name.clone();
        let Some(mut lease) = self.api.get_opt(&name).await? else {
            return Ok(());
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(self.clock.now()));
        self.api
            .replace(&name, &PostParams::default(), &lease)
            .await?;
        tracing::info!(identity = %self.config.identity, "released the leader lease");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_must_leave_the_leader_time_to_stop() {
        let mut config = LeaderElectionConfig::new("ns", "a");
        assert!(config.validate().is_ok());
        config.renew_deadline = config.lease_duration;
        assert!(matches!(
            config.validate(),
            Err(LeaderError::InvalidDurations { .. })
        ));
        let nameless = LeaderElectionConfig::new("ns", "");
        assert!(matches!(nameless.validate(), Err(LeaderError::NoIdentity)));
    }
}
