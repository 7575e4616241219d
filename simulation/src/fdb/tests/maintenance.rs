//! Maintenance as data distribution sees it: team trackers count a silent server's
//! replicas until it is declared failed (never inside the maintenance zone), and a
//! failure outside the zone clears it.

use super::*;

fn team_state(fdb: &SimulatedFdb) -> (bool, String) {
    let status = fdb.render_status_json();
    let trackers = status["cluster"]["data"]["team_trackers"]
        .as_array()
        .unwrap();
    assert_eq!(trackers.len(), 1);
    let state = &trackers[0]["state"];
    (
        state["healthy"].as_bool().unwrap(),
        state["name"].as_str().unwrap().to_owned(),
    )
}

fn data_healthy(fdb: &SimulatedFdb) -> bool {
    fdb.render_status_json()["cluster"]["data"]["state"]["healthy"]
        .as_bool()
        .unwrap()
}

#[tokio::test]
async fn team_trackers_stay_healthy_until_a_silent_server_is_declared_failed() {
    let (fdb, clock) = configured_cluster().await;
    fdb.stop_process(&address(21));
    advance(&fdb, &clock, 30);
    // The replicas are not served (the data state says so at once), but data
    // distribution has not declared the server failed yet.
    assert!(!data_healthy(&fdb));
    assert_eq!(team_state(&fdb), (true, "healthy".to_owned()));
    assert!(fdb.snapshot().teams_healthy);
    advance(&fdb, &clock, 30);
    let (healthy, name) = team_state(&fdb);
    assert!(!healthy, "{name}");
    assert_eq!(name, "healing");
    assert!(!fdb.snapshot().teams_healthy);
}

#[tokio::test]
async fn team_trackers_stay_healthy_while_the_silent_server_is_in_the_maintenance_zone() {
    let (fdb, clock) = configured_cluster().await;
    fdb.set_maintenance_zone("zone-1", 240).await.unwrap();
    fdb.stop_process(&address(21));
    advance(&fdb, &clock, 200);
    assert!(!data_healthy(&fdb));
    assert_eq!(team_state(&fdb), (true, "healthy".to_owned()));
    // The zone times out: the server is long silent, so it is failed at once.
    advance(&fdb, &clock, 40);
    assert_eq!(fdb.snapshot().maintenance_zone, None);
    assert!(!team_state(&fdb).0);
}

#[tokio::test]
async fn a_failure_outside_the_maintenance_zone_clears_it() {
    let (fdb, clock) = configured_cluster().await;
    fdb.set_maintenance_zone("zone-1", 7200).await.unwrap();
    fdb.stop_process(&address(21));
    advance(&fdb, &clock, 120);
    fdb.stop_process(&address(22));
    advance(&fdb, &clock, 59);
    assert_eq!(fdb.snapshot().maintenance_zone.as_deref(), Some("zone-1"));
    assert!(team_state(&fdb).0, "storage-2 is not failed yet");
    advance(&fdb, &clock, 1);
    assert_eq!(
        fdb.snapshot().maintenance_zone,
        None,
        "cleared by the failure"
    );
    let (healthy, name) = team_state(&fdb);
    assert!(!healthy, "{name}");
}

#[tokio::test]
async fn a_failure_from_before_the_maintenance_zone_does_not_clear_it() {
    let (fdb, clock) = configured_cluster().await;
    fdb.stop_process(&address(22));
    advance(&fdb, &clock, 90);
    fdb.set_maintenance_zone("zone-1", 7200).await.unwrap();
    fdb.stop_process(&address(21));
    advance(&fdb, &clock, 600);
    assert_eq!(fdb.snapshot().maintenance_zone.as_deref(), Some("zone-1"));
}
