//! Prometheus metrics of one sidecar instance (a registry per instance, so that many
//! sidecars can run in one process).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Labels of `fdb_sidecar_http_requests`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// Endpoint (route without its path argument, `other` for unknown paths).
    pub endpoint: String,
    /// HTTP status code.
    pub status: u16,
}

/// Labels of `fdb_sidecar_copies`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActionLabels {
    /// The action (`copy_files`, `copy_binaries`, ..., `cert_reload`).
    pub action: String,
    /// `ok` or `error`.
    pub result: String,
}

/// The metrics of one sidecar.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// HTTP requests by endpoint and status.
    pub requests: Family<RequestLabels, Counter>,
    /// Copy actions and certificate reloads by result.
    pub actions: Family<ActionLabels, Counter>,
    /// Time spent computing file hashes (cache misses).
    pub hash_seconds: Histogram,
    /// Hash requests answered from the cache.
    pub hash_cache_hits: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with all metrics registered.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("fdb_sidecar");
        let requests = Family::<RequestLabels, Counter>::default();
        let actions = Family::<ActionLabels, Counter>::default();
        let hash_seconds =
            Histogram::new([0.0001, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0]);
        let hash_cache_hits = Counter::default();
        registry.register(
            "http_requests",
            "HTTP requests by endpoint and status",
            requests.clone(),
        );
        registry.register(
            "actions",
            "Copy actions and certificate reloads by result",
            actions.clone(),
        );
        registry.register(
            "hash_duration_seconds",
            "Time to compute a file hash",
            hash_seconds.clone(),
        );
        registry.register(
            "hash_cache_hits",
            "Hash requests answered from the cache",
            hash_cache_hits.clone(),
        );
        Self {
            registry,
            requests,
            actions,
            hash_seconds,
            hash_cache_hits,
        }
    }

    /// Counts one action outcome.
    pub fn action(&self, action: &str, ok: bool) {
        self.actions
            .get_or_create(&ActionLabels {
                action: action.to_owned(),
                result: if ok { "ok" } else { "error" }.to_owned(),
            })
            .inc();
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}
