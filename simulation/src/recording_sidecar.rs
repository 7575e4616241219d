//! A [`SidecarApi`] wrapper that records every request the operator sends to a sidecar.
//!
//! A request that got no answer on a connection it made (timed out, or closed by a
//! real-time limit of the sidecar) is also noted as a stall ([`EventLog::record_stall`]):
//! the in-process sidecars answer unless the machine itself stalls, and the runner stops
//! such a run instead of recording a real-time accident as a simulated outcome. Simulated
//! faults refuse the connection.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use fdb_shared::sidecar::{SidecarApi, SidecarClientError};

use super::event_log::EventLog;
use super::result::EventSource;

/// Records each request (method, path, outcome) as an `http` event on `sidecar/<pod>`.
pub struct RecordingSidecar {
    inner: Arc<dyn SidecarApi>,
    target: String,
    log: EventLog,
}

impl std::fmt::Debug for RecordingSidecar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingSidecar")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl RecordingSidecar {
    /// Wraps the client of `pod`'s sidecar.
    pub fn new(inner: Arc<dyn SidecarApi>, pod: &str, log: EventLog) -> Self {
        Self {
            inner,
            target: format!("sidecar/{pod}"),
            log,
        }
    }

    /// Refuses every request once the operator has crashed (`restartOperator: {after}`).
    fn alive(&self) -> Result<(), SidecarClientError> {
        if self.log.operator_crashed() {
            return Err(SidecarClientError::InvalidResponse {
                url: self.target.clone(),
                reason: "the operator crashed (simulated restart pending)".to_owned(),
            });
        }
        Ok(())
    }

    fn record<T>(&self, request: &str, result: &Result<T, SidecarClientError>, answer: &str) {
        self.log.count_sidecar_request();
        if let Err(error) = result
            && error.is_unreachable()
            && !error.is_connect()
        {
            // A simulated unreachable sidecar refuses the connection (nothing listens).
            // The sidecar is a task of this process: a connection that then fails or
            // times out means the machine stalled (a real-time limit was reached), not
            // that the simulated pod failed.
            self.log.record_stall(&format!(
                "{request} to {} got no answer: {}",
                self.target,
                fdb_shared::error_chain::ErrorChain(error)
            ));
        }
        let detail = match result {
            Ok(_) => format!("{request} -> {answer}"),
            Err(error) if error.is_unreachable() => format!("{request} -> unreachable"),
            Err(error) => match error.status() {
                Some(code) => format!("{request} -> {code}"),
                None => format!("{request} -> error: {error}"),
            },
        };
        self.log
            .record(EventSource::Sidecar, "http", &self.target, &detail);
    }
}

#[async_trait]
impl SidecarApi for RecordingSidecar {
    async fn ready(&self) -> Result<(), SidecarClientError> {
        self.alive()?;
        let result = self.inner.ready().await;
        self.record("GET /ready", &result, "200");
        result
    }

    async fn substitutions(&self) -> Result<BTreeMap<String, String>, SidecarClientError> {
        self.alive()?;
        let result = self.inner.substitutions().await;
        self.record("GET /substitutions", &result, "200");
        result
    }

    async fn check_hash(&self, rel: &str) -> Result<Option<String>, SidecarClientError> {
        self.alive()?;
        let result = self.inner.check_hash(rel).await;
        let answer = match &result {
            Ok(Some(hash)) => format!("200 {}", hash.get(..12).unwrap_or(hash)),
            _ => "404".to_owned(),
        };
        self.record(&format!("GET /check_hash/{rel}"), &result, &answer);
        result
    }

    async fn is_present(&self, rel: &str) -> Result<bool, SidecarClientError> {
        self.alive()?;
        let result = self.inner.is_present(rel).await;
        let answer = if matches!(result, Ok(true)) {
            "200"
        } else {
            "404"
        };
        self.record(&format!("GET /is_present/{rel}"), &result, answer);
        result
    }

    async fn copy_files(&self) -> Result<(), SidecarClientError> {
        self.alive()?;
        let result = self.inner.copy_files().await;
        self.record("POST /copy_files", &result, "200");
        result
    }

    async fn copy_binaries(&self) -> Result<(), SidecarClientError> {
        self.alive()?;
        let result = self.inner.copy_binaries().await;
        self.record("POST /copy_binaries", &result, "200");
        result
    }

    async fn copy_libraries(&self) -> Result<(), SidecarClientError> {
        self.alive()?;
        let result = self.inner.copy_libraries().await;
        self.record("POST /copy_libraries", &result, "200");
        result
    }

    async fn copy_monitor_conf(&self) -> Result<(), SidecarClientError> {
        self.alive()?;
        let result = self.inner.copy_monitor_conf().await;
        self.record("POST /copy_monitor_conf", &result, "200");
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdb_operator::clock::{Clock, VirtualClock};
    use fdb_shared::sidecar::SidecarClient;

    #[tokio::test]
    async fn an_unreachable_sidecar_is_recorded_as_such() {
        let clock: Arc<dyn Clock> = Arc::new(VirtualClock::fixed_epoch());
        let log = EventLog::new(clock);
        // Port 9 on loopback: nothing listens there.
        let client = SidecarClient::new("http://127.0.0.1:9", None).unwrap();
        let sidecar = RecordingSidecar::new(Arc::new(client), "sample-storage-1", log.clone());
        assert!(sidecar.copy_files().await.is_err());
        let events = log.events();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].target, "sidecar/sample-storage-1");
        assert_eq!(events[0].detail, "POST /copy_files -> unreachable");
        assert_eq!(log.counters().sidecar_requests, 1);
        assert_eq!(
            log.take_stall(),
            None,
            "a refused connection is a simulated fault"
        );
    }

    #[tokio::test]
    async fn a_request_without_an_answer_in_time_is_a_stall() {
        let clock: Arc<dyn Clock> = Arc::new(VirtualClock::fixed_epoch());
        let log = EventLog::new(clock);
        // Accepts, and never answers.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            drop(stream);
        });
        let settings = fdb_shared::sidecar::SidecarClientSettings {
            get_timeout: std::time::Duration::from_millis(100),
            ..Default::default()
        };
        let client = fdb_shared::sidecar::SidecarClientFactory::with_settings(None, settings)
            .unwrap()
            .client(&format!("http://{address}"))
            .unwrap();
        let sidecar = RecordingSidecar::new(Arc::new(client), "sample-storage-1", log.clone());
        assert!(sidecar.check_hash("fdb.cluster").await.is_err());
        let stall = log.take_stall().unwrap();
        assert!(
            stall.starts_with("GET /check_hash/fdb.cluster to sidecar/sample-storage-1"),
            "{stall}"
        );
        assert_eq!(log.take_stall(), None);
        server.abort();
    }

    #[tokio::test]
    async fn a_connection_closed_without_an_answer_is_a_stall() {
        // As a sidecar closes a connection whose request came later than its header
        // timeout (real time).
        let log = EventLog::new(Arc::new(VirtualClock::fixed_epoch()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                drop(stream);
            }
        });
        let client = SidecarClient::new(&format!("http://{address}"), None).unwrap();
        let sidecar = RecordingSidecar::new(Arc::new(client), "sample-log-1", log.clone());
        assert!(sidecar.copy_files().await.is_err());
        assert!(log.take_stall().is_some());
        server.abort();
    }
}
