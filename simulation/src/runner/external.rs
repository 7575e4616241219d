//! `simulate --serve --external-operator`: the world without its own operator. An
//! operator run outside it (`fdb-operator run`) reconciles through the served API; its
//! writes arrive under [`OPERATOR_ACTOR`] (through a listener of its own) and are
//! judged after each tick as the world judges an operator pass.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use jiff::Timestamp;
use serde_json::Value;

use crate::fdb::SimulatedFdb;
use crate::fdbcli::{RoutedTools, SimulatedTools};
use crate::kube::FakeApiServer;
use crate::recording_admin::RecordingAdmin;
use crate::serve::tools::ServedTools;
use crate::world::network::FREE_BLOCKS;
use crate::world::{HostBlock, World, WorldError, WorldOptions};

use super::databases::Databases;
use fdb_operator::clock::VirtualClock;
use fdb_operator::fdb::tools::DEFAULT_FDB_BINARIES_DIR;

use super::{OPERATOR_ACTOR, RunError, Runner};
use crate::scenario::{Actor, Scenario, Step};

/// Why a scenario cannot run without the world's operator: the first step (or field)
/// that needs it, named.
pub(super) fn check_scenario(scenario: &Scenario) -> Result<(), RunError> {
    if !scenario.clusters.is_empty() {
        return Err(RunError::ExternalOperator(
            "clusters: the members of `clusters:` are created by the world's operator \
             instances; with --external-operator the scenario may have only `cluster:`"
                .to_owned(),
        ));
    }
    // `fleet:` members are created by the world as the user and are each their own
    // database: the stand-in tools reach each one through its cluster file
    // (`serve/tools.rs`), as one `fdb-operator run` reconciles every cluster it watches.
    for (index, spec) in scenario.steps.iter().enumerate() {
        let Some(step) = spec.to_step() else { continue };
        let needs = match &step {
            Step::Reconcile(_) => Some("reconcile"),
            Step::RestartOperator { .. } => Some("restartOperator"),
            Step::Expect(_) => Some("expect"),
            Step::Act {
                actor: Actor::Operator,
                ..
            } => Some("act as operator"),
            _ => None,
        };
        if let Some(kind) = needs {
            return Err(RunError::ExternalOperator(format!(
                "steps[{index}] ({kind}) needs the world's own operator; with \
                 --external-operator the steps may only set up the world and make user \
                 changes (apply, advance, fault, heal, delete, act as user)"
            )));
        }
    }
    Ok(())
}

/// The instant the world's clock starts at: the real current time (whole seconds) with
/// an external operator, which reads the wall clock; the fixed epoch otherwise.
pub(super) fn start_time(external_operator: bool) -> Option<Timestamp> {
    external_operator
        .then(|| Timestamp::from_second(Timestamp::now().as_second()).ok())
        .flatten()
}

/// A world (driving `databases`: the first cluster's and each fleet member's) whose
/// sidecars listen on the pods' own IPs (`127.N.y.z`, N the given block or
/// the first free one), so that an operator outside the process reaches them where the
/// API says the pods are.
pub(super) fn world_at_pod_ips(
    mut options: WorldOptions,
    fixed: Option<u8>,
    api: &FakeApiServer,
    databases: &Arc<Databases>,
    clock: &VirtualClock,
) -> Result<World, RunError> {
    options.host_block = HostBlock::PodIps;
    let blocks = match fixed {
        Some(block) => block..=block,
        None => FREE_BLOCKS,
    };
    let mut last = None;
    for block in blocks {
        options.ip_block = block;
        match World::new(
            options.clone(),
            api.clone(),
            databases.clone(),
            clock.clone(),
        ) {
            Ok(world) => return Ok(world),
            Err(error @ WorldError::BlockInUse { .. }) if fixed.is_none() => last = Some(error),
            Err(error) => return Err(error.into()),
        }
    }
    Err(last.map_or_else(|| RunError::Act("no IP block".to_owned()), RunError::from))
}

/// What the serve loop remembers between two looks at the external operator's writes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct ExternalMark {
    /// The external operator's writes so far (create, update, patch, delete).
    writes: u64,
}

impl Runner {
    /// The external operator's writes so far.
    pub(super) fn external_mark(&self) -> ExternalMark {
        let writes = self
            .api
            .request_counts()
            .get(OPERATOR_ACTOR)
            .map_or(0, |c| c.create + c.update + c.patch + c.delete)
            + self
                .operators
                .external_tool_changes()
                .load(Ordering::Relaxed);
        ExternalMark { writes }
    }

    /// The minor versions of the operator's tools (`world.operatorTools`, else the
    /// image's).
    pub(super) fn tool_minors(&self) -> Vec<String> {
        super::OperatorTools::of_world(&self.scenario.world).minors()
    }

    /// What the external operator's stand-in tools reach: the first cluster's database
    /// and each fleet member's, a run going to the one its cluster file leads to,
    /// through admin interfaces that record and judge their commands as the operator's
    /// (for the cluster whose database it is).
    pub(super) fn served_tools(&self, turn: &Arc<tokio::sync::Mutex<()>>) -> ServedTools {
        let changes = self.operators.external_tool_changes().clone();
        let minors = self.tool_minors();
        let tools_of = |fdb: &SimulatedFdb, issuer: &str, judge| {
            let admin = RecordingAdmin::new(Arc::new(fdb.clone()), self.log.clone())
                .issued_by(issuer, judge);
            let changes = changes.clone();
            SimulatedTools::new(
                Arc::new(admin),
                fdb.clone(),
                minors.clone(),
                DEFAULT_FDB_BINARIES_DIR,
            )
            .with_on_change(Arc::new(move || {
                changes.fetch_add(1, Ordering::Relaxed);
            }))
        };
        let first = tools_of(&self.fdb, &self.name, self.operators.lock_judge());
        let fleet = self
            .fleet_routes()
            .into_iter()
            .map(|route| tools_of(&route.fdb, &route.cluster, route.judge))
            .collect();
        ServedTools {
            tools: RoutedTools::new(first, fleet),
            minors: minors.into_iter().collect(),
            turn: turn.clone(),
        }
    }

    /// When the external operator wrote since `seen`: judges what it did since `before`
    /// as an operator pass (deletions, fault tolerance, lost data, outages, refused
    /// writes), and the world against the spec when the cluster's status says the
    /// current generation is reconciled; then each fleet member whose cluster object
    /// changed, in its own view (`fleet_members.rs`). Returns the new mark.
    pub(super) async fn judge_external_writes(
        &mut self,
        seen: ExternalMark,
        before: &super::observe::Tracked,
        events_before: usize,
    ) -> Result<ExternalMark, RunError> {
        let now = self.external_mark();
        if now == seen {
            return Ok(seen);
        }
        self.judge_action(before, events_before, OPERATOR_ACTOR, true)
            .await?;
        self.report_noted_violations();
        let reconciled = self
            .api
            .get(&self.cluster_key())
            .is_some_and(|cluster| reports_reconciled(&cluster));
        self.check_after_pass(reconciled)?;
        self.judge_external_fleet(reports_reconciled)?;
        Ok(now)
    }
}

/// Whether a FoundationDBCluster's status says its current generation is reconciled
/// (what the operator writes at the end of a pass that reached Reconciled): the
/// generations hold the current one as `reconciled` and nothing else. `reconciled` is
/// the last generation fully reconciled; a pass that finds work left at the same
/// generation keeps it and adds what is pending (`needsPodDeletion`, ...), as the Go
/// operator's `CheckReconciliation` does (api/v1beta2/foundationdbcluster_types.go), so
/// `reconciled` alone equal to the generation is not a pass reporting Reconciled.
fn reports_reconciled(cluster: &Value) -> bool {
    let generation = cluster
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    let Some(generations) = cluster
        .pointer("/status/generations")
        .and_then(Value::as_object)
    else {
        return false;
    };
    let pending = generations
        .iter()
        .any(|(key, value)| key != "reconciled" && !value.is_null());
    let reconciled = generations.get("reconciled").and_then(Value::as_i64);
    generation.is_some() && generation == reconciled && !pending
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(yaml: &str) -> Scenario {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn steps_that_need_the_worlds_operator_are_refused_by_name() {
        let ok = scenario("cluster: {}\nsteps:\n  - advance: 10\n  - apply: {spec: {}}\n");
        assert!(check_scenario(&ok).is_ok());
        let reconcile = scenario("cluster: {}\nsteps:\n  - advance: 10\n  - reconcile: {}\n");
        let error = check_scenario(&reconcile).unwrap_err().to_string();
        assert!(error.contains("steps[1] (reconcile)"), "{error}");
        let restart = scenario("cluster: {}\nsteps:\n  - restartOperator: {}\n");
        let error = check_scenario(&restart).unwrap_err().to_string();
        assert!(error.contains("steps[0] (restartOperator)"), "{error}");
        let fleet = scenario("cluster: {}\nfleet: [{}]\n");
        assert!(
            check_scenario(&fleet).is_ok(),
            "each member its own database"
        );
        let clusters = scenario("cluster: {}\nclusters: [{}]\n");
        let error = check_scenario(&clusters).unwrap_err().to_string();
        assert!(
            error.starts_with("--external-operator: clusters:"),
            "{error}"
        );
    }

    #[test]
    fn a_reconciled_status_is_the_current_generations() {
        let cluster = serde_json::json!({"metadata": {"generation": 2},
            "status": {"generations": {"reconciled": 2}}});
        assert!(reports_reconciled(&cluster));
        let pending = serde_json::json!({"metadata": {"generation": 2},
            "status": {"generations": {"reconciled": 2, "needsPodDeletion": 2}}});
        assert!(
            !reports_reconciled(&pending),
            "work left at the same generation"
        );
        let behind = serde_json::json!({"metadata": {"generation": 3},
            "status": {"generations": {"reconciled": 2}}});
        assert!(!reports_reconciled(&behind));
        assert!(!reports_reconciled(&serde_json::json!({})));
    }

    #[test]
    fn the_clock_starts_at_the_real_time_only_for_an_external_operator() {
        assert!(start_time(false).is_none());
        let start = start_time(true).unwrap();
        assert!((Timestamp::now().as_second() - start.as_second()).abs() < 60);
    }
}
