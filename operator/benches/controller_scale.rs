//! The controller at scale: 10 FoundationDBClusters of 100 process groups at rest in the
//! in-memory API server (each with its own simulated database), the production
//! controller (`fdb-operator run`'s, with its watch caches) run until every cluster is
//! reconciled; then steady passes are timed one by one, and the same for one cluster of
//! 1000 process groups.
//!
//! Run with `cargo bench -p fdb-operator --bench controller_scale`. The last line is
//! `controller-scale: clusters=10 groups=1000 rss_delta_mib=.. pass_cpu_ms_p50=..
//! pass_cpu_ms_1000=..`: the growth of the process's resident memory from the fleet at
//! rest to the controller running over it (the in-memory API server's own growth
//! included), the median CPU time of a steady pass over one 100-group cluster, and the
//! median CPU time of a steady pass over the 1000-group cluster. CPU time is the
//! thread's (the runtime has one thread; the in-memory API server answers on it too, so
//! its share of serving the pass is counted).

use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fdb_operator::clock::{Clock, SystemClock};
use fdb_operator::controller::cache::{CLUSTER_NAME_LABEL, CacheSelector, ObjectCache};
use fdb_operator::controller::production::{RequeuePolicy, RunOptions, run_until};
use fdb_operator::controller::{Context, run_pass};
use fdb_operator::simulation::fleet::{Fleet, FleetSidecars};

type BenchResult<T> = Result<T, Box<dyn Error>>;

const NAMESPACE: &str = "bench";
const CLUSTERS: usize = 10;
const GROUPS: usize = 100;
const LARGE: usize = 1000;
/// Timed passes per cluster (after one untimed).
const ROUNDS: usize = 5;

/// Resident memory of this process, in MiB.
fn rss_mib() -> BenchResult<f64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .ok_or("no VmRSS in /proc/self/status")?
        .parse()?;
    Ok(kib / 1024.0)
}

/// CPU time of this thread.
fn thread_cpu() -> Duration {
    let time = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(time.tv_sec).unwrap_or(0),
        u32::try_from(time.tv_nsec).unwrap_or(0),
    )
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The operator's context over `fleet`, with waits short enough for real time.
fn context(fleet: &Fleet, clock: &Arc<dyn Clock>) -> Context {
    let mut ctx = Context::new(
        fleet.api.client("operator"),
        Arc::new(fleet.databases.clone()),
        Arc::new(FleetSidecars),
        clock.clone(),
    );
    ctx.settings.kube_wait = Duration::from_millis(200);
    ctx.settings.config_map_wait = Duration::from_millis(200);
    ctx.settings.database_wait = Duration::from_millis(200);
    ctx
}

/// A fleet of `count` clusters of `groups` process groups each.
fn fleet(clock: &Arc<dyn Clock>, count: usize, groups: usize) -> BenchResult<Fleet> {
    let mut fleet = Fleet::new(clock.clone());
    for index in 0..count {
        fleet.add_cluster(clock, NAMESPACE, &format!("c{index}"), groups)?;
    }
    Ok(fleet)
}

/// Times steady passes over every cluster of `fleet` (with a cache of its own), after
/// one untimed pass each; every pass must find its cluster reconciled. Milliseconds.
async fn steady_passes(fleet: &Fleet, ctx: &Context) -> BenchResult<Vec<f64>> {
    let mut ctx = ctx.clone();
    let cache = ObjectCache::spawn(
        &ctx.kube,
        Some(NAMESPACE),
        CacheSelector::parse(CLUSTER_NAME_LABEL),
    );
    if !cache.wait_ready(Duration::from_secs(60)).await {
        return Err("the watch caches did not sync".into());
    }
    ctx.cache = Some(Arc::new(cache));
    let mut times = Vec::new();
    for round in 0..=ROUNDS {
        for (namespace, name) in &fleet.clusters {
            let before = thread_cpu();
            let report = run_pass(&ctx, namespace, name).await?;
            let spent = thread_cpu().saturating_sub(before);
            if !report.reconciled {
                return Err(format!(
                    "{name}: a steady pass did not find it reconciled: {report:?}"
                )
                .into());
            }
            if round > 0 {
                times.push(spent.as_secs_f64() * 1000.0);
            }
        }
    }
    Ok(times)
}

/// Runs passes over each cluster until it is reconciled (for the large cluster, which
/// is not run under the controller).
async fn reconcile_directly(fleet: &Fleet, ctx: &Context) -> BenchResult<()> {
    let deadline = Instant::now() + Duration::from_secs(600);
    while !fleet.all_reconciled() {
        if Instant::now() > deadline {
            return Err("the large cluster did not reach Reconciled in 10 minutes".into());
        }
        for (namespace, name) in &fleet.clusters {
            if let Err(error) = run_pass(ctx, namespace, name).await {
                eprintln!("{name}: {error}");
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

async fn bench() -> BenchResult<()> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);

    // 10 x 100 groups under the production controller.
    let started = Instant::now();
    let fleet = fleet(&clock, CLUSTERS, GROUPS)?;
    eprintln!(
        "built {CLUSTERS} clusters of {GROUPS} groups in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let rss_at_rest = rss_mib()?;
    let ctx = context(&fleet, &clock);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let options = RunOptions {
        namespace: Some(NAMESPACE.to_owned()),
        requeue: RequeuePolicy {
            min_delay: Duration::from_millis(10),
            unreconciled: Duration::from_millis(300),
            transient_backoff: Duration::from_millis(200),
            error_backoff: Duration::from_secs(1),
            ..RequeuePolicy::default()
        },
        ..RunOptions::default()
    };
    let controller = tokio::spawn(run_until(ctx.clone(), options, async move {
        let _ = stopped.await;
    }));
    let started = Instant::now();
    while !fleet.all_reconciled() {
        if started.elapsed() > Duration::from_secs(600) {
            return Err("the fleet did not reach Reconciled in 10 minutes".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let to_steady = started.elapsed();
    // Steady: the controller idles on its resync with its caches full.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_delta = rss_mib()? - rss_at_rest;
    let _ = stop.send(());
    controller.await??;
    eprintln!(
        "fleet reconciled in {:.1}s; resident memory {rss_at_rest:.1} MiB at rest, +{rss_delta:.1} MiB with the controller",
        to_steady.as_secs_f64()
    );
    let per_cluster = steady_passes(&fleet, &ctx).await?;
    let p50 = median(per_cluster);
    drop(fleet);

    // One cluster of 1000 groups.
    let started = Instant::now();
    let large = self::fleet(&clock, 1, LARGE)?;
    let large_ctx = context(&large, &clock);
    eprintln!(
        "built one cluster of {LARGE} groups in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    reconcile_directly(&large, &large_ctx).await?;
    let p50_large = median(steady_passes(&large, &large_ctx).await?);

    println!(
        "controller-scale: clusters={CLUSTERS} groups={} rss_delta_mib={rss_delta:.1} pass_cpu_ms_p50={p50:.2} pass_cpu_ms_1000={p50_large:.2}",
        CLUSTERS * GROUPS
    );
    Ok(())
}

fn main() -> BenchResult<()> {
    // One thread: a pass's CPU time is its thread's.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(bench())
}
