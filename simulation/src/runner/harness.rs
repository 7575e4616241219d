//! Wiring the simulated world to the real operator: the in-memory API server, the
//! simulated database, the world runtime, and an operator [`Context`] whose admin and
//! sidecar clients record what the operator does.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::sidecar::{
    SidecarApi, SidecarClientError, SidecarClientFactory, SidecarClientSettings, SidecarClientTls,
};
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::event_log::EventLog;
use crate::fdb::SimulatedFdb;
use crate::fdbcli::{RoutedTools, SimulatedTools};
use crate::invariants::lock_judge::AdminWriteJudge;
use crate::kube::service::ResponseBody;
use crate::kube::{ActorService, FakeApiServer};
use crate::recording_admin::RecordingAdmin;
use crate::recording_sidecar::RecordingSidecar;
use crate::world::NetworkMap;
use fdb_operator::clock::{Clock, VirtualClock};
use fdb_operator::controller::{AdminClientProvider, Context, SidecarProvider};
use fdb_operator::controller::{CLUSTER_NAME_LABEL, CacheSelector, ObjectCache};
use fdb_operator::controller::{FdbcliAdminProvider, HttpSidecarProvider};
use fdb_operator::fdb::tools::{DEFAULT_FDB_BINARIES_DIR, OPERATOR_LOG_GROUP};
use fdb_operator::fdb::{AdminClient, AdminError, FdbTools, MissingTool};
use fdb_shared::FdbVersion;

/// The actor name of the operator's Kubernetes client.
pub const OPERATOR_ACTOR: &str = "operator";
/// The actor name of scenario `apply` steps (the user).
pub const USER_ACTOR: &str = "user";

/// The minor versions whose tools the operator's image holds (`world.operatorTools`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorTools {
    minors: BTreeSet<String>,
}

impl Default for OperatorTools {
    /// The operator image's: 7.1, 7.3 and 7.4 (images/operator/Dockerfile).
    fn default() -> Self {
        Self::new(["7.1", "7.3", "7.4"].map(str::to_owned))
    }
}

impl OperatorTools {
    /// The tools of these minor versions (`7.3`).
    pub fn new(minors: impl IntoIterator<Item = String>) -> Self {
        Self {
            minors: minors.into_iter().collect(),
        }
    }

    /// The minor versions, in order.
    pub fn minors(&self) -> Vec<String> {
        self.minors.iter().cloned().collect()
    }

    /// `world.operatorTools`, else the image's.
    pub fn of_world(world: &crate::scenario::WorldSettings) -> Self {
        world
            .operator_tools
            .clone()
            .map_or_else(Self::default, Self::new)
    }
}

/// Every cluster talks to the one simulated database as production does: through the
/// production provider (`FdbcliAdminProvider`: the tools of each cluster's version under
/// `/usr/bin/fdb/<minor>/`, chosen by `controller/versions/tool_choice.rs`, a cluster file written
/// from `status.connectionString`) and the production `FdbcliAdminClient` (argument
/// building, output parsing, failure classification), whose tool runs the simulated
/// tools interpret (`crate::fdbcli`) and carry out through the recording wrapper. The
/// image holds the tools of `world.operatorTools` only, and its tools run in the
/// operator image's log group (`FDB_NETWORK_OPTION_TRACE_LOG_GROUP`,
/// `images/operator/Dockerfile`).
#[derive(Debug)]
pub struct SimulatedAdminProvider {
    inner: FdbcliAdminProvider,
    /// Where the cluster files are written; removed with the provider.
    _work_dir: Option<Arc<tempfile::TempDir>>,
}

impl SimulatedAdminProvider {
    /// A provider reaching `fdb` (and the fleet's databases `identity` names) with the
    /// tools of `identity.tools`, recording into `log` as the commands of the operator
    /// instance `identity` is, whose admin writes its judges judge. On a fleet's
    /// database the commands are recorded as issued for that member's cluster.
    pub fn new(fdb: SimulatedFdb, log: EventLog, identity: &OperatorIdentity) -> Self {
        let tools_of =
            |fdb: &SimulatedFdb, issuer: &str, database: &str, judge: Arc<dyn AdminWriteJudge>| {
                let recording: Arc<dyn AdminClient> = Arc::new(
                    RecordingAdmin::new(Arc::new(fdb.clone()), log.clone())
                        .issued_by(issuer, judge),
                );
                SimulatedTools::new(
                    recording,
                    fdb.clone(),
                    identity.tools.minors.iter().cloned(),
                    DEFAULT_FDB_BINARIES_DIR,
                )
                .with_recorder(log.clone(), database)
            };
        let first = tools_of(
            &fdb,
            &identity.cluster,
            &identity.database,
            identity.judge.clone(),
        );
        let others = identity
            .fleet
            .iter()
            .map(|route| {
                tools_of(
                    &route.fdb,
                    &route.cluster,
                    &route.cluster,
                    route.judge.clone(),
                )
            })
            .collect();
        let runner = RoutedTools::new(first, others);
        let work_dir = tempfile::Builder::new()
            .prefix("fdb-simulated-operator")
            .tempdir()
            .ok()
            .map(Arc::new);
        let path = work_dir.as_ref().map_or_else(
            || std::env::temp_dir().join(format!("fdb-simulated-operator-{}", std::process::id())),
            |dir| dir.path().to_owned(),
        );
        Self {
            inner: FdbcliAdminProvider {
                tools: FdbTools::new(DEFAULT_FDB_BINARIES_DIR.into(), None)
                    .with_trace_log_group(Some(OPERATOR_LOG_GROUP.to_owned())),
                work_dir: path,
                tls: None,
                runner: Arc::new(runner),
            },
            _work_dir: work_dir,
        }
    }
}

impl AdminClientProvider for SimulatedAdminProvider {
    fn admin_for(&self, cluster: &FoundationDBCluster) -> Result<Arc<dyn AdminClient>, AdminError> {
        self.inner.admin_for(cluster)
    }

    fn missing_tool(&self, version: &FdbVersion) -> Option<MissingTool> {
        self.inner.missing_tool(version)
    }
}

/// Real-time limit of one request to an in-process sidecar.
///
/// The operator's own limits (5 s for GET, 10 s for POST) are real time: on a loaded
/// machine a request to a healthy simulated sidecar could reach them and turn into
/// `SidecarUnreachable`, making the result depend on the machine. The sidecars are tasks
/// of this process, so this limit is only a watchdog: a request reaching it stops the
/// run with an error ([`crate::event_log::EventLog::record_stall`]) instead
/// of becoming a simulated fault. Injected faults (`sidecarUnreachable`) refuse
/// connections at once and need no timeout.
pub const SIDECAR_REQUEST_WATCHDOG: Duration = Duration::from_secs(600);

/// How the simulated operator talks to the sidecars: the production client with
/// [`SIDECAR_REQUEST_WATCHDOG`] as its limits, and a fresh connection per request, so
/// that no request depends on how long (in real time) a kept-alive connection sat idle
/// (the sidecar closes idle connections after 10 s, and a request racing that close
/// fails).
pub fn simulated_sidecar_client_settings() -> SidecarClientSettings {
    SidecarClientSettings {
        get_timeout: SIDECAR_REQUEST_WATCHDOG,
        post_timeout: SIDECAR_REQUEST_WATCHDOG,
        reuse_connections: false,
    }
}

/// The production HTTP sidecar clients ([`simulated_sidecar_client_settings`]), each
/// wrapped to record its requests. They reach a pod's sidecar where the world serves its
/// pod IP ([`NetworkMap::host_ip`]), as a client inside the cluster network reaches the
/// pod IP.
#[derive(Debug)]
pub struct RecordingSidecarProvider {
    inner: HttpSidecarProvider,
    log: EventLog,
    network: NetworkMap,
}

impl RecordingSidecarProvider {
    /// Sidecar clients recording into `log`, connecting through `network`: plain HTTP,
    /// and https with `tls` to pods whose sidecar runs with `--tls`.
    pub fn new(
        log: EventLog,
        network: NetworkMap,
        tls: Option<&SidecarClientTls>,
    ) -> Result<Self, SidecarClientError> {
        Ok(Self {
            inner: HttpSidecarProvider::new(
                SidecarClientFactory::with_settings(tls, simulated_sidecar_client_settings())?,
                false,
            ),
            log,
            network,
        })
    }
}

impl SidecarProvider for RecordingSidecarProvider {
    fn sidecar_for(
        &self,
        cluster: &FoundationDBCluster,
        pod: &Pod,
    ) -> Result<Arc<dyn SidecarApi>, SidecarClientError> {
        let mut routed = pod.clone();
        // The operator's choice of the pod's address (its family's, with
        // `foundationdb.org/ip-family`), routed to where that pod's sidecar really
        // listens: every IP of a pod maps to the same host address.
        let chosen = address_for_family(pod);
        if let Some(status) = routed.status.as_mut()
            && let Some(ip) = chosen.as_deref().and_then(|ip| ip.parse().ok())
        {
            status.pod_ip = Some(self.network.host_ip(ip).to_string());
            status.pod_ips = None;
            if let Some(annotations) = routed.metadata.annotations.as_mut() {
                annotations.remove("foundationdb.org/ip-family");
            }
        }
        let client = self.inner.sidecar_for(cluster, &routed)?;
        Ok(Arc::new(RecordingSidecar::new(
            client,
            &pod.name_any(),
            self.log.clone(),
        )))
    }
}

/// The pod's address the operator's sidecar client connects to: with the
/// `foundationdb.org/ip-family` annotation its first `status.podIPs` entry of that
/// family (none when it has none), else `status.podIP`.
fn address_for_family(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    let family = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("foundationdb.org/ip-family"))
        .and_then(|f| crate::world::IpFamily::from_number(f.trim().parse().ok()?));
    let Some(family) = family else {
        return status.pod_ip.clone();
    };
    status
        .pod_ips
        .iter()
        .flatten()
        .map(|listed| listed.ip.clone())
        .find(|ip| ip.parse().is_ok_and(|ip| family.holds(ip)))
}

/// The operator's Kubernetes client: refuses every request once the operator has
/// crashed (`restartOperator: {after}`), as a dead process sends nothing more.
#[derive(Clone)]
struct CrashGate {
    inner: ActorService,
    log: EventLog,
    /// Where users' writes queued during an advance land, before each request
    /// (`kube/interleave.rs`).
    api: FakeApiServer,
}

impl tower::Service<http::Request<kube::client::Body>> for CrashGate {
    type Response = http::Response<ResponseBody>;
    type Error = std::convert::Infallible;
    type Future = <ActorService as tower::Service<http::Request<kube::client::Body>>>::Future;

    fn poll_ready(
        &mut self,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(context)
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        if self.log.operator_crashed() {
            let body = serde_json::json!({
                "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 503,
                "reason": "ServiceUnavailable",
                "message": "the operator crashed (simulated restart pending)",
            });
            let mut response = http::Response::new(
                http_body_util::Full::new(bytes::Bytes::from(body.to_string())).boxed_unsync(),
            );
            *response.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
            return Box::pin(std::future::ready(Ok(response)));
        }
        // A user's write that arrived during this pass lands now, between two of the
        // operator's requests, as a real API server applies it on arrival.
        self.api.apply_queued_writes();
        self.inner.call(request)
    }
}

/// The operator's Kubernetes client on `api`, cut off when the operator crashes.
pub fn operator_kube_client(api: &FakeApiServer, log: &EventLog) -> kube::Client {
    kube::Client::new(
        CrashGate {
            inner: api.service(OPERATOR_ACTOR),
            log: log.clone(),
            api: api.clone(),
        },
        "default",
    )
}

/// Who an operator instance is: the cluster it manages (its admin commands are recorded
/// as issued by it) and the judge of its admin writes.
#[derive(Debug, Clone)]
pub struct OperatorIdentity {
    /// The name of the cluster the instance manages.
    pub cluster: String,
    /// Judges its admin writes (`lock-not-held`).
    pub judge: Arc<dyn AdminWriteJudge>,
    /// The tools its image holds (`world.operatorTools`).
    pub tools: OperatorTools,
    /// The cluster whose database `fdb` is (the first cluster's, for the instances of
    /// `clusters:` members that join it).
    pub database: String,
    /// The fleet's other databases, which this operator reconciles too (`fleet:`).
    pub fleet: Vec<FleetRoute>,
}

/// A fleet member's database, which the one operator's tools reach as well.
#[derive(Debug, Clone)]
pub struct FleetRoute {
    /// The member cluster's name (its commands are recorded as issued for it).
    pub cluster: String,
    /// Its database.
    pub fdb: SimulatedFdb,
    /// Judges the admin writes on it (`lock-not-held`).
    pub judge: Arc<dyn AdminWriteJudge>,
}

/// A fresh operator: nothing carried over from a previous one but what is stored in
/// Kubernetes and the database (this is what `restartOperator` relies on).
pub fn new_operator_context(
    kube: kube::Client,
    fdb: &SimulatedFdb,
    clock: &VirtualClock,
    log: &EventLog,
    network: NetworkMap,
    sidecar_tls: Option<&SidecarClientTls>,
    identity: &OperatorIdentity,
) -> Result<Context, SidecarClientError> {
    let clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let mut context = Context::new(
        kube,
        Arc::new(SimulatedAdminProvider::new(
            fdb.clone(),
            log.clone(),
            identity,
        )),
        Arc::new(RecordingSidecarProvider::new(
            log.clone(),
            network,
            sidecar_tls,
        )?),
        clock,
    );
    context.settings.controller_name = "fdb-operator-simulated".to_owned();
    // Passes read from watch caches as in production; the runner lets them catch up
    // with the API server before each pass (see `Runner::sync_operator_cache`).
    context.cache = Some(Arc::new(ObjectCache::spawn(
        &context.kube,
        None,
        CacheSelector::parse(CLUSTER_NAME_LABEL),
    )));
    // One sidecar at a time: concurrent requests would interleave in the events log by
    // timing, and the same scenario and seed must give the same log.
    context.settings.sidecar_concurrency = 1;
    Ok(context)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdb_shared::sidecar::protocol::GET_TIMEOUT;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A stand-in sidecar on loopback answering `GET /ready` after `delay`, keeping
    /// connections open; returns its base URL and the number of connections accepted.
    async fn slow_sidecar(delay: Duration) -> (String, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut buffer = [0u8; 1024];
                    loop {
                        let Ok(n) = stream.read(&mut buffer).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        request.extend_from_slice(&buffer[..n]);
                        if request.windows(4).any(|w| w == b"\r\n\r\n") {
                            request.clear();
                            tokio::time::sleep(delay).await;
                            let answer = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nOK\n";
                            if stream.write_all(answer.as_bytes()).await.is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        });
        (format!("http://{address}"), accepted)
    }

    #[tokio::test]
    async fn a_simulated_sidecar_slower_than_the_operators_limits_is_still_answered() {
        // As on a loaded machine: the answer comes after the operator's 5 s GET limit.
        let (url, _) = slow_sidecar(GET_TIMEOUT + Duration::from_millis(300)).await;
        let factory =
            SidecarClientFactory::with_settings(None, simulated_sidecar_client_settings()).unwrap();
        let client = factory.client(&url).unwrap();
        client.ready().await.unwrap();
    }

    #[tokio::test]
    async fn every_simulated_request_has_its_own_connection() {
        let (url, accepted) = slow_sidecar(Duration::ZERO).await;
        let simulated =
            SidecarClientFactory::with_settings(None, simulated_sidecar_client_settings())
                .unwrap()
                .client(&url)
                .unwrap();
        simulated.ready().await.unwrap();
        simulated.ready().await.unwrap();
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        // The operator's own client keeps its connection (the setting matters).
        let (url, accepted) = slow_sidecar(Duration::ZERO).await;
        let production = SidecarClientFactory::new(None)
            .unwrap()
            .client(&url)
            .unwrap();
        production.ready().await.unwrap();
        production.ready().await.unwrap();
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }
}

#[cfg(test)]
#[path = "interleave_tests.rs"]
mod interleave_tests;
