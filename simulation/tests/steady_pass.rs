//! A steady pass (a reconciled cluster, nothing to change) reads no pod whole from the
//! pods' cache (issue 20): every step decides from the pods' metadata, status and the
//! spec facts the cache derived when it stored each pod, so no pod spec is decoded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use fdb_operator::clock::{Clock, SystemClock};
use fdb_operator::controller::run_pass;
use fdb_operator::controller::{CLUSTER_NAME_LABEL, CacheSelector, ObjectCache};
use fdb_simulation::fleet::Fleet;

const NAMESPACE: &str = "default";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_pass_decodes_no_pod() {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut fleet = Fleet::new(clock.clone());
    fleet.add_cluster(&clock, NAMESPACE, "c0", 20).unwrap();
    let mut ctx = fleet.operator_context(&clock);
    let cache = Arc::new(ObjectCache::spawn(
        &ctx.kube,
        Some(NAMESPACE),
        CacheSelector::parse(CLUSTER_NAME_LABEL),
    ));
    assert!(cache.wait_ready(Duration::from_secs(60)).await);
    ctx.cache = Some(cache.clone());

    // The fleet's cluster at rest: the operator finishes it (services, configuration,
    // status), then finds it reconciled.
    let mut reconciled = false;
    for _ in 0..50 {
        let report = run_pass(&ctx, NAMESPACE, "c0").await.unwrap();
        if report.reconciled && fleet.all_reconciled() {
            reconciled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(reconciled, "the cluster did not reach Reconciled");

    for _ in 0..3 {
        let before = cache.pods_read_whole();
        let report = run_pass(&ctx, NAMESPACE, "c0").await.unwrap();
        assert!(report.reconciled, "{report:?}");
        assert_eq!(
            cache.pods_read_whole() - before,
            0,
            "a steady pass decoded pods"
        );
    }
}
