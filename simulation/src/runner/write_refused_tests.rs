//! `write-refused`: a write of the operator the API server refuses as invalid is a
//! violation; other refusals (conflicts) and other actors' writes are not.

use std::sync::Arc;

use fdb_operator::clock::VirtualClock;
use serde_json::json;

use super::super::{OPERATOR_ACTOR, USER_ACTOR};
use super::observe_writes;
use crate::event_log::EventLog;
use crate::invariants::WRITE_REFUSED;
use crate::kube::{FakeApiServer, PatchType, ResourceKey};

#[test]
fn an_operator_write_refused_as_invalid_is_a_violation() {
    let clock = Arc::new(VirtualClock::fixed_epoch());
    let api = FakeApiServer::new(clock.clone(), 1);
    let log = EventLog::new(clock);
    observe_writes(&api, &log);
    api.create_as(
        USER_ACTOR,
        json!({"apiVersion": "apps.foundationdb.org/v1beta2", "kind": "FoundationDBCluster",
               "metadata": {"name": "sample", "namespace": "db"},
               "spec": {"version": "7.1.57"}}),
    )
    .unwrap();
    let key = ResourceKey::new(
        "apps.foundationdb.org",
        "v1beta2",
        "foundationdbclusters",
        "db",
        "sample",
    );
    let bad_status = json!({"status": {"databaseConfiguration": {
        "perpetual_storage_wiggle_engine": "x"}}});
    api.patch_as(USER_ACTOR, &key, PatchType::Merge, &bad_status, true)
        .unwrap_err();
    assert!(
        log.take_violations().is_empty(),
        "a user's refusal is not judged"
    );
    let refused = api
        .patch_as(OPERATOR_ACTOR, &key, PatchType::Merge, &bad_status, true)
        .unwrap_err();
    assert_eq!(refused.code, 422);
    let violations = log.take_violations();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(violations[0].0, WRITE_REFUSED);
    assert!(
        violations[0]
            .2
            .contains("status.databaseConfiguration.perpetual_storage_wiggle_engine"),
        "{}",
        violations[0].2
    );
    let good = json!({"status": {"generations": {"reconciled": 1}}});
    api.patch_as(OPERATOR_ACTOR, &key, PatchType::Merge, &good, true)
        .unwrap();
    assert!(log.take_violations().is_empty());
}
