//! Leader election of `fdb-operator run`: two replicas of the production controller
//! against the in-memory API server, each behind a gate that records the requests that
//! reach the server and can cut the replica off (a network partition).
//!
//! Acting is what reaches the API server other than the Lease itself: the watches and
//! every reconcile's reads and writes. The leases are short (real time) so that the test
//! takes a few seconds.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fdb_operator::clock::SystemClock;
use fdb_operator::controller::HttpSidecarProvider;
use fdb_operator::controller::LeaderElectionConfig;
use fdb_operator::controller::RequeuePolicy;
use fdb_operator::controller::{AdminClientProvider, Context, OperatorSettings};
use fdb_operator::controller::{Health, Phase};
use fdb_operator::controller::{RunError, RunOptions, run_until};
use fdb_operator::fdb::{AdminClient, AdminError};
use fdb_shared::api::FoundationDBCluster;
use fdb_shared::sidecar::SidecarClientFactory;
use fdb_simulation::kube::service::ResponseBody;
use fdb_simulation::kube::{ActorService, FakeApiServer, PatchType, ResourceKey};
use http_body_util::BodyExt;
use serde_json::json;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const LEASE: &str = "fdb-operator-leader";

/// How long after a replica stopped a request it had already issued may still reach
/// the server (the kube client's buffer task dispatches it).
const IN_FLIGHT_GRACE: Duration = Duration::from_millis(100);

/// A request that reached the API server.
#[derive(Debug, Clone)]
struct Seen {
    who: &'static str,
    at: Instant,
    path: String,
    /// Whether the request writes (a Lease renewal is a write).
    writes: bool,
}

impl Seen {
    fn is_lease(&self) -> bool {
        self.path.contains("/leases")
    }
}

/// Records what reaches the server; refuses everything (503) while `cut`.
#[derive(Clone)]
struct Gate {
    inner: ActorService,
    who: &'static str,
    cut: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl tower::Service<http::Request<kube::client::Body>> for Gate {
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
        if self.cut.load(Ordering::SeqCst) {
            let mut response = http::Response::new(
                http_body_util::Full::new(bytes::Bytes::from_static(b"partitioned")).boxed_unsync(),
            );
            *response.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
            return Box::pin(std::future::ready(Ok(response)));
        }
        self.seen.lock().unwrap().push(Seen {
            who: self.who,
            at: Instant::now(),
            path: request.uri().path().to_owned(),
            writes: request.method() != http::Method::GET,
        });
        self.inner.call(request)
    }
}

/// No database: passes fail at the first admin command and back off, which is enough
/// activity to tell who reconciles.
struct NoDatabase;

impl AdminClientProvider for NoDatabase {
    fn admin_for(&self, _: &FoundationDBCluster) -> Result<Arc<dyn AdminClient>, AdminError> {
        Err(AdminError::Unavailable {
            command: "status json".into(),
            output: "no database in this test".into(),
        })
    }
}

/// One replica of the operator.
struct Replica {
    cut: Arc<AtomicBool>,
    health: Arc<Health>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<(Result<(), RunError>, Instant)>,
}

fn election(identity: &str) -> LeaderElectionConfig {
    LeaderElectionConfig {
        namespace: "default".into(),
        lease_name: LEASE.into(),
        identity: identity.into(),
        lease_duration: Duration::from_millis(1200),
        renew_deadline: Duration::from_millis(700),
        retry_period: Duration::from_millis(100),
    }
}

fn start_replica(
    api: &FakeApiServer,
    clock: &SystemClock,
    who: &'static str,
    seen: &Arc<Mutex<Vec<Seen>>>,
) -> Replica {
    let cut = Arc::new(AtomicBool::new(false));
    let gate = Gate {
        inner: api.service(who),
        who,
        cut: cut.clone(),
        seen: seen.clone(),
    };
    let sidecars = HttpSidecarProvider::new(SidecarClientFactory::new(None).unwrap(), false);
    let mut ctx = Context::new(
        kube::Client::new(gate, "default"),
        Arc::new(NoDatabase),
        Arc::new(sidecars),
        Arc::new(*clock),
    );
    ctx.settings = OperatorSettings {
        kube_wait: Duration::from_millis(50),
        config_map_wait: Duration::from_millis(50),
        database_wait: Duration::from_millis(50),
        publish_events: false,
        ..OperatorSettings::default()
    };
    let health = Arc::new(Health::default());
    let options = RunOptions {
        namespace: Some("default".into()),
        requeue: RequeuePolicy {
            min_delay: Duration::from_millis(20),
            transient_backoff: Duration::from_millis(50),
            error_backoff: Duration::from_millis(50),
            unreconciled: Duration::from_millis(50),
            ..RequeuePolicy::default()
        },
        leader_election: Some(election(who)),
        health: health.clone(),
        ..RunOptions::default()
    };
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let result = run_until(ctx, options, async move {
            let _ = stopped.await;
        })
        .await;
        (result, Instant::now())
    });
    Replica {
        cut,
        health,
        stop: Some(stop),
        task,
    }
}

/// The API server and the clock stamping the Lease. The clock is the system's: a renewal
/// must change the record (`renewTime`), or the API server takes it for a no-op and the
/// standby sees no sign of life, exactly as in a real cluster.
fn world() -> (FakeApiServer, SystemClock, Arc<Mutex<Vec<Seen>>>) {
    let clock = SystemClock;
    let api = FakeApiServer::new(Arc::new(clock), 1);
    api.create_as(
        "user",
        json!({
            "apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
            "metadata": {"name": "sample", "namespace": "default"},
            "spec": {"version": "7.1.57", "processCounts": {"storage": 3}}
        }),
    )
    .unwrap();
    (api, clock, Arc::new(Mutex::new(Vec::new())))
}

fn lease_key() -> ResourceKey {
    ResourceKey::new("coordination.k8s.io", "v1", "leases", "default", LEASE)
}

fn holder(api: &FakeApiServer) -> Option<String> {
    api.get(&lease_key())?["spec"]["holderIdentity"]
        .as_str()
        .map(str::to_owned)
}

/// Requests of `who` that reached the server, other than the Lease's.
fn acting(seen: &Arc<Mutex<Vec<Seen>>>, who: &str) -> Vec<Seen> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|s| s.who == who && !s.is_lease())
        .cloned()
        .collect()
}

async fn wait_for(what: &str, limit: Duration, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_never_both_reconcile_and_a_cut_off_leader_stops_before_the_other_takes_over()
{
    let (api, clock, seen) = world();
    let mut a = start_replica(&api, &clock, "replica-a", &seen);
    let mut b = start_replica(&api, &clock, "replica-b", &seen);

    wait_for("a leader", Duration::from_secs(10), || {
        holder(&api).is_some()
    })
    .await;
    let leader = holder(&api).unwrap();
    let (leader_name, standby_name) = if leader == "replica-a" {
        ("replica-a", "replica-b")
    } else {
        ("replica-b", "replica-a")
    };
    if leader_name == "replica-b" {
        std::mem::swap(&mut a, &mut b);
    }
    let (leader, standby) = (a, b);
    wait_for("the leader to reconcile", Duration::from_secs(10), || {
        acting(&seen, leader_name)
            .iter()
            .any(|s| s.path.contains("foundationdbclusters/sample"))
    })
    .await;
    // A while of leading: the standby keeps trying the Lease and does nothing else.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        acting(&seen, standby_name).is_empty(),
        "the standby acted while the leader held the lease: {:?}",
        acting(&seen, standby_name)
    );
    assert_eq!(holder(&api).as_deref(), Some(leader_name));
    assert_eq!(leader.health.phase(), Phase::Ready);
    assert_eq!(standby.health.phase(), Phase::Standby);
    let lease_requests_of_standby = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.who == standby_name && s.is_lease())
        .count();
    assert!(
        lease_requests_of_standby >= 5,
        "the standby tries the lease every retry period ({lease_requests_of_standby})"
    );

    // Cut the leader off: it cannot renew, gives up at its renew deadline, stops acting
    // and stands by (the process goes on, to lead again once it can); the standby takes
    // over only after the lease duration.
    let cut_at = Instant::now();
    let mut leader = leader;
    leader.cut.store(true, Ordering::SeqCst);
    wait_for(
        "the cut-off leader to step down",
        Duration::from_secs(10),
        || leader.health.phase() == Phase::Standby,
    )
    .await;
    let leader_stopped_at = Instant::now();
    wait_for("the standby to take over", Duration::from_secs(10), || {
        !acting(&seen, standby_name).is_empty()
    })
    .await;
    let first_of_standby = acting(&seen, standby_name)[0].at;
    let last_of_leader = acting(&seen, leader_name).last().unwrap().at;
    assert!(
        last_of_leader < cut_at && leader_stopped_at < first_of_standby,
        "the old leader stopped {:?} after the new one started",
        leader_stopped_at.saturating_duration_since(first_of_standby)
    );
    // The lease runs from the leader's last renewal that reached the server, not from
    // the cut: under load that renewal may be well before the cut.
    let last_renewal = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.who == leader_name && s.is_lease() && s.writes && s.at < cut_at)
        .map(|s| s.at)
        .max()
        .unwrap();
    assert!(
        first_of_standby.duration_since(last_renewal) >= Duration::from_millis(1200),
        "the standby took over {:?} after the leader's last renewal, before the lease expired",
        first_of_standby.duration_since(last_renewal)
    );
    assert_eq!(holder(&api).as_deref(), Some(standby_name));

    // A graceful stop releases the lease.
    let mut standby = standby;
    wait_for("the new leader's caches", Duration::from_secs(10), || {
        standby.health.phase() == Phase::Ready
    })
    .await;
    standby.stop.take().unwrap().send(()).unwrap();
    let (result, _) = tokio::time::timeout(Duration::from_secs(10), standby.task)
        .await
        .expect("the leader did not stop on shutdown")
        .unwrap();
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(holder(&api), None, "released on a graceful stop");
    // The old leader, still standing by, stops cleanly too.
    leader.stop.take().unwrap().send(()).unwrap();
    let (result, _) = tokio::time::timeout(Duration::from_secs(10), leader.task)
        .await
        .expect("the standby did not stop on shutdown")
        .unwrap();
    assert!(result.is_ok(), "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_lease_was_taken_stops_acting_at_once() {
    let (api, clock, seen) = world();
    let replica = start_replica(&api, &clock, "replica-a", &seen);
    wait_for("the replica to lead", Duration::from_secs(10), || {
        holder(&api).as_deref() == Some("replica-a")
    })
    .await;
    wait_for("the leader to reconcile", Duration::from_secs(10), || {
        !acting(&seen, "replica-a").is_empty()
    })
    .await;

    // Another holder (a replica that took a lease it saw expire) writes the Lease.
    api.patch_as(
        "intruder",
        &lease_key(),
        PatchType::Merge,
        &json!({"spec": {"holderIdentity": "intruder", "renewTime": "2030-01-01T00:00:00.000000Z"}}),
        false,
    )
    .unwrap();
    let taken_at = Instant::now();
    let mut replica = replica;
    wait_for("the replica to step down", Duration::from_secs(5), || {
        replica.health.phase() == Phase::Standby
    })
    .await;
    let stopped_at = Instant::now();
    assert!(
        stopped_at.duration_since(taken_at) < Duration::from_millis(700),
        "stopped {:?} after the lease was taken (more than a retry period and a renewal)",
        stopped_at.duration_since(taken_at)
    );
    // The kube client hands each request to a buffer task: one the controller issued
    // just before it stopped can still reach the server a moment later. Past that
    // moment nothing may: a controller still acting would reconcile every 50 ms.
    tokio::time::sleep(IN_FLIGHT_GRACE).await;
    let count = acting(&seen, "replica-a").len();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after: Vec<Seen> = acting(&seen, "replica-a")
        .into_iter()
        .filter(|s| s.at > stopped_at + IN_FLIGHT_GRACE)
        .collect();
    assert!(after.is_empty(), "acted after it stopped: {after:?}");
    assert_eq!(acting(&seen, "replica-a").len(), count);
    assert_eq!(
        holder(&api).as_deref(),
        Some("intruder"),
        "not released: not ours"
    );
    assert_eq!(replica.health.phase(), Phase::Standby);
    // The intruder never renews: once its record stayed unchanged for the lease
    // duration, the replica takes the Lease back and reconciles again.
    wait_for("the replica to lead again", Duration::from_secs(5), || {
        holder(&api).as_deref() == Some("replica-a")
    })
    .await;
    wait_for("the replica to act again", Duration::from_secs(5), || {
        acting(&seen, "replica-a").len() > count
    })
    .await;
    replica.stop.take().unwrap().send(()).unwrap();
    let (result, _) = tokio::time::timeout(Duration::from_secs(60), replica.task)
        .await
        .expect("the replica did not stop on shutdown")
        .unwrap();
    assert!(result.is_ok(), "{result:?}");
}
