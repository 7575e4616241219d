//! Database faults: timeouts that may have applied, io_error messages, healing.

use super::*;

#[tokio::test]
async fn a_timed_out_mutation_may_or_may_not_have_taken_effect() {
    let (fdb, _clock) = configured_cluster().await;
    fdb.set_timeout_rate(1.0);
    for n in 0..40 {
        let target = ExclusionTarget::instance_id(&format!("gone-{n}")).unwrap();
        let error = fdb.exclude(&[target], false).await.unwrap_err();
        assert!(matches!(error, AdminError::Timeout { .. }), "{error}");
    }
    assert!(fdb.status().await.is_err(), "reads time out too");
    fdb.heal_all();
    let applied = fdb.snapshot().excluded.len();
    assert!(0 < applied && applied < 40, "{applied} of 40 applied");
}

#[tokio::test]
async fn io_error_is_reported_until_healed() {
    let (fdb, _clock) = configured_cluster().await;
    fdb.set_io_error("storage-2", true);
    let status = fdb.status().await.unwrap();
    assert!(process_for(&status, 22).unwrap().has_message("io_error"));
    assert!(!process_for(&status, 21).unwrap().has_message("io_error"));
    fdb.heal_group("storage-2");
    let status = fdb.status().await.unwrap();
    assert!(!process_for(&status, 22).unwrap().has_message("io_error"));

    fdb.set_io_error("log-1", true);
    fdb.set_io_error("log-2", true);
    fdb.set_io_error("log-2", false);
    let status = fdb.status().await.unwrap();
    assert!(process_for(&status, 11).unwrap().has_message("io_error"));
    assert!(!process_for(&status, 12).unwrap().has_message("io_error"));
    fdb.heal_all();
    let status = fdb.status().await.unwrap();
    assert!(!process_for(&status, 11).unwrap().has_message("io_error"));
}
