//! The passage of time: transitions that happen by time alone (failure detection, the end
//! of a recovery, the completion of a move, maintenance expiry) take effect at their
//! exact virtual time, in order, however late the database is looked at. Every change
//! then goes through [`refresh`], which keeps the derived state (silence, data
//! distribution, recoveries, outages) in step.

use super::availability::assess;
use super::movement::complete;
use super::planner::plan;
use super::records::Outage;
use super::recovery::{self, recovery_end};
use super::regions;
use super::shards::{Candidate, Data, GIB};
use super::state::State;
use super::summary::summarize;

/// Brings the state to `now`: every timed transition up to then, in order.
pub(crate) fn catch_up(state: &mut State, now: i64) {
    let target = (now - state.origin) as f64;
    while let Some(at) = next_event(state).filter(|at| *at <= target) {
        move_data(state, at);
        state.dirty = true;
        let unix = state.origin + at.ceil() as i64;
        refresh(state, unix);
    }
    move_data(state, target);
    refresh(state, now);
    play_workload(state, now);
    super::tool_api::expire_tool_clients(state, now);
}

/// The user workload writes and the backup agents work up to `now` (at the availability
/// of now: the database is looked at whenever the world changes).
fn play_workload(state: &mut State, now: i64) {
    let seconds = now - state.origin;
    if seconds <= state.backups.advanced_until {
        return;
    }
    let available = assess(state).available;
    state.user_data.play(seconds, available);
    let origin = state.origin;
    state
        .backups
        .advance(&mut state.user_data, seconds, available, origin);
}

/// Keeps the derived state in step after a change at `now` (callers set `dirty` when
/// processes, exclusions, the configuration or the maintenance zone changed).
pub(crate) fn refresh(state: &mut State, now: i64) {
    if let Some((_, until)) = &state.maintenance
        && *until <= now
    {
        state.maintenance = None;
        state.dirty = true;
    }
    if failure_outside_maintenance(state, now) {
        state.maintenance = None;
        state.dirty = true;
    }
    if state.configuration.is_some() && state.data.is_none() {
        create_data(state);
    }
    if state.dirty {
        update_silence(state, now);
        plan(state, now);
        state.summary = summarize(state, now);
        state.dirty = false;
    }
    recovery::ensure(state, now);
    state.recovery_reason = None;
    track_outages(state, now);
}

/// Whether data distribution declared a storage server outside the maintenance zone
/// failed since the zone was set: FoundationDB's data distributor then clears the zone
/// (it logs `MaintenanceZoneCleared`), so the zone's own silent servers count as failed
/// too and their data is re-replicated. A server already failed when the zone was set
/// does not clear it: only a failure that happens during maintenance does.
fn failure_outside_maintenance(state: &State, now: i64) -> bool {
    let Some((zone, _)) = &state.maintenance else {
        return false;
    };
    state.disks.iter().any(|(key, disk)| {
        state.held(key) > 0
            && disk.zone() != *zone
            && state
                .failure_time(disk)
                .is_some_and(|at| at >= state.maintenance_since && at <= now)
    })
}

/// The next timed transition (unix seconds, rounded up), including kill restarts.
pub(crate) fn next_due(state: &State) -> Option<i64> {
    let event = next_event(state).map(|at| state.origin + at.ceil() as i64);
    let restart = state.pending_restarts.values().min().copied();
    event.into_iter().chain(restart).min()
}

/// Seconds since the origin of the next timed transition after the current time.
fn next_event(state: &State) -> Option<f64> {
    let relative = |unix: i64| (unix - state.origin) as f64;
    let mut candidates: Vec<f64> = Vec::new();
    candidates.extend(recovery_end(state).map(relative));
    if let Some((_, until)) = &state.maintenance {
        candidates.push(relative(*until));
    }
    for (key, disk) in &state.disks {
        if state.held(key) == 0 {
            continue;
        }
        if let Some(at) = state.failure_time(disk)
            && !state.under_maintenance(&disk.zone(), at)
        {
            candidates.push(relative(at));
        }
    }
    let rate_of = state.source_rates();
    if let Some(seconds) = state.movement.next_completion(&rate_of) {
        candidates.push(state.time + seconds);
    }
    candidates
        .into_iter()
        .filter(|at| *at > state.time)
        .min_by(f64::total_cmp)
}

/// Moves data until `until` (seconds since the origin), applying completed moves.
fn move_data(state: &mut State, until: f64) {
    let seconds = until - state.time;
    if seconds <= 0.0 {
        return;
    }
    let rate_of = state.source_rates();
    let done = state.movement.progress(seconds, &rate_of);
    state.time = until;
    if !done.is_empty() {
        if let Some(data) = state.data.as_mut() {
            complete(data, done);
        }
        state.dirty = true;
    }
}

/// Creates the shards once the configured database has storage servers.
fn create_data(state: &mut State) {
    // With regions the data starts in the preferred datacenter; data distribution copies
    // it to the other usable region.
    let first_dc =
        regions::data_dcs(state.configuration.as_ref()).and_then(|dcs| dcs.into_iter().next());
    let mut candidates: Vec<Candidate> = state
        .eligible()
        .into_iter()
        .filter(|p| State::is_storage(p))
        .filter(|p| first_dc.is_none() || regions::dc_of(p) == first_dc.as_deref())
        .filter_map(|p| {
            Some(Candidate {
                disk: p.disk.clone(),
                zone: state.team_domain(&p.launch)?,
            })
        })
        .collect();
    candidates.dedup_by(|a, b| a.disk == b.disk);
    if candidates.is_empty() {
        return;
    }
    let replication = state.replicas();
    let shards = usize::try_from(state.settings.shards.max(1)).unwrap_or(1);
    let total =
        state.settings.storage_gib.max(0.0) * GIB * candidates.len() as f64 / replication as f64;
    state.data = Some(Data::place(
        &candidates,
        shards,
        total / shards as f64,
        replication,
        state.settings.seed,
    ));
    state.dirty = true;
}

/// Disks holding replicas whose process does not serve start (or keep) their silence;
/// serving ones end it.
fn update_silence(state: &mut State, now: i64) {
    let serving = state.serving_disks();
    let State { disks, data, .. } = state;
    for (key, disk) in disks.iter_mut() {
        let holds = data.as_ref().is_some_and(|d| d.held_by(key) > 0);
        if !holds || serving.contains(key) {
            disk.silent_since = None;
        } else if disk.silent_since.is_none() {
            disk.silent_since = Some(now);
        }
    }
}

/// Opens an outage when the database becomes unavailable (once it has been available),
/// closes it when it is available again.
fn track_outages(state: &mut State, now: i64) {
    let health = assess(state);
    let recovery_seconds = state.recovery_seconds();
    let open = state.outages.last_mut().filter(|o| o.end.is_none());
    match (health.available, open) {
        (true, open) => {
            state.ever_available = true;
            if let Some(outage) = open {
                outage.end = Some(now);
            }
        }
        (false, Some(outage)) => {
            outage.recovery_seconds = outage.recovery_seconds.max(recovery_seconds);
            let cause = health.cause.unwrap_or_default();
            if !outage.cause.ends_with(&cause) {
                outage.cause = format!("{}; then {cause}", outage.cause);
            }
        }
        (false, None) if state.ever_available => state.outages.push(Outage {
            start: now,
            end: None,
            cause: health.cause.unwrap_or_default(),
            recovery_seconds,
        }),
        (false, None) => {}
    }
}
