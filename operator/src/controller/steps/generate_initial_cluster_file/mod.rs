//! GenerateInitialClusterFile: writes the first connection string to
//! `status.connectionString` — `spec.seedConnectionString` when set, else coordinators
//! chosen among the stateful process groups, each in a distinct zone. UpdateConfigMap
//! then puts it in the ConfigMap and UpdatePodConfig into the pods.

use async_trait::async_trait;
use fdb_shared::cluster_math::desired_coordinator_count;
use fdb_shared::connection_string::ConnectionString;
use sha2::{Digest, Sha256};

use super::Subreconciler;
use crate::controller::coordinators::candidates::coordinator_candidates;
use crate::controller::coordinators::select_coordinators;
use crate::controller::errors::StepError;
use crate::controller::events::EventReason;
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict, Wait, WaitOn};
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::status::mutations::StatusMutation;

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct GenerateInitialClusterFile;

/// The connection string description: the cluster name with every character FoundationDB
/// does not allow (anything but letters, digits and `_`) replaced by `_`.
pub fn description_for(name: &str) -> String {
    let description: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if description.is_empty() {
        "fdb".to_owned()
    } else {
        description
    }
}

/// A generation ID derived from the cluster's UID and the time: 16 hex digits, random
/// enough to tell databases apart, and reproducible in simulations.
pub(crate) fn generation_id(uid: &str, now_unix: i64) -> String {
    let digest = Sha256::digest(format!("{uid}/{now_unix}").as_bytes());
    hex::encode(digest)[..16].to_owned()
}

/// What GenerateInitialClusterFile does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InitialFileDecision {
    /// The status has a connection string.
    Nothing,
    /// Stateful pods are not placed yet; the reason says how many.
    WaitForPods(String),
    /// Not enough zones for the coordinators.
    NotEnoughZones(String),
    /// Write this connection string.
    Write(String),
}

/// Decides from the snapshot: the seed connection string, or coordinators chosen among
/// the stateful groups, each in a distinct zone.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> Result<InitialFileDecision, StepError> {
    if snapshot.status().connection_string.is_some() {
        return Ok(InitialFileDecision::Nothing);
    }
    let cluster = snapshot.cluster();
    if let Some(seed) = &cluster.spec.seed_connection_string {
        let parsed = ConnectionString::parse(seed).map_err(|e| {
            StepError::InvalidState(format!(
                "spec.seedConnectionString: {}",
                fdb_shared::error_chain::ErrorChain(&e)
            ))
        })?;
        return Ok(InitialFileDecision::Write(parsed.to_string()));
    }
    let (candidates, gaps) = coordinator_candidates(snapshot, &[], &|_| false);
    if !gaps.waiting.is_empty() {
        return Ok(InitialFileDecision::WaitForPods(format!(
            "waiting for {} stateful pods to be scheduled{} before choosing coordinators",
            gaps.waiting.len(),
            if cluster.spec.routing.use_dns_in_cluster_file() {
                ""
            } else {
                " and get IPs"
            }
        )));
    }
    let wanted = desired_coordinator_count(
        &cluster.spec.redundancy_mode(),
        cluster.spec.usable_regions(),
    );
    let wanted = usize::try_from(wanted).unwrap_or(1);
    let chosen =
        match select_coordinators(&candidates, &cluster.spec.coordinator_selection(), wanted) {
            Ok(chosen) => chosen,
            Err(error) => return Ok(InitialFileDecision::NotEnoughZones(error.to_string())),
        };
    let name = snapshot.name();
    Ok(InitialFileDecision::Write(
        ConnectionString {
            description: description_for(name),
            generation_id: generation_id(
                cluster.metadata.uid.as_deref().unwrap_or(name),
                snapshot.now_unix(),
            ),
            coordinators: chosen.into_iter().map(|c| c.address).collect(),
        }
        .to_string(),
    ))
}

#[async_trait]
impl Subreconciler for GenerateInitialClusterFile {
    fn name(&self) -> &'static str {
        "GenerateInitialClusterFile"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        Ok(verdict(decide(snapshot)?))
    }
}

/// The plan of `decision`: the connection string written at once (the ConfigMap and the
/// pods get it next), its Event, and a short wait so that the ConfigMap carries the new
/// cluster file before the pods are updated.
pub(crate) fn verdict(decision: InitialFileDecision) -> Verdict {
    match decision {
        InitialFileDecision::Nothing => Verdict::Continue,
        InitialFileDecision::WaitForPods(reason) => {
            Verdict::Wait(Wait::new(WaitOn::Kubernetes, reason))
        }
        InitialFileDecision::NotEnoughZones(reason) => {
            Verdict::Wait(Wait::new(WaitOn::KubernetesLong, reason))
        }
        InitialFileDecision::Write(connection_string) => Verdict::plain([
            Action::WriteStatus(vec![StatusMutation::SetConnectionString(
                connection_string.clone(),
            )]),
            Action::Event {
                reason: EventReason::ConnectionStringGenerated,
                action: "GenerateInitialClusterFile".to_owned(),
                note: format!("initial connection string {connection_string}"),
            },
        ])
        .then(Some(Wait::new(
            WaitOn::After(std::time::Duration::from_secs(1)),
            "connection string generated; the ConfigMap is updated next",
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, group, pod};

    #[test]
    fn description_and_generation_id() {
        assert_eq!(description_for("my-cluster.1"), "my_cluster_1");
        let id = generation_id("uid-1", 100);
        assert_eq!(id.len(), 16);
        assert!(id.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(id, generation_id("uid-1", 100));
        assert_ne!(id, generation_id("uid-1", 101));
        let parsed =
            ConnectionString::parse(&format!("{}:{}@10.0.0.1:4501", description_for("a-b"), id));
        assert!(parsed.is_ok());
    }

    fn unscheduled(name: &str, group: &str) -> k8s_openapi::api::core::v1::Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {"foundationdb.org/fdb-process-group-id": group}},
            "spec": {"containers": []},
        }))
        .unwrap()
    }

    #[test]
    fn candidates_need_scheduled_pods() {
        let snapshot = Fixture::new("version: 7.1.57")
            .groups([group("log-1"), group("storage-1"), group("stateless-1")])
            .pods([
                pod("sample-log-1", "log-1", "node-1", "10.0.0.1"),
                unscheduled("sample-storage-1", "storage-1"),
                pod("sample-stateless-1", "stateless-1", "node-3", "10.0.0.3"),
            ])
            .build();
        let (candidates, gaps) = coordinator_candidates(&snapshot, &[], &|_| false);
        assert_eq!(gaps.waiting, ["storage-1"]);
        assert_eq!(candidates.len(), 1);
        assert_eq!(
            candidates[0].address.to_string(),
            "sample-log-1.sample.ns.svc.cluster.local:4501"
        );
        assert_eq!(candidates[0].zone, "node-1");
        let (candidates, _) = coordinator_candidates(&snapshot, &[], &|g| g.id() == "log-1");
        assert!(candidates.is_empty());
        assert_eq!(
            decide(&snapshot).unwrap(),
            InitialFileDecision::WaitForPods(
                "waiting for 1 stateful pods to be scheduled before choosing coordinators".into()
            )
        );
    }

    #[test]
    fn coordinators_in_distinct_zones_or_the_seed() {
        let ids = ["log-1", "log-2", "log-3", "storage-1"];
        let nodes = ["n1", "n1", "n2", "n3"];
        let pods: Vec<_> = ids
            .iter()
            .zip(nodes)
            .enumerate()
            .map(|(i, (id, node))| pod(&format!("sample-{id}"), id, node, &format!("10.0.0.{i}")))
            .collect();
        let fixture = Fixture::new("{version: 7.1.57, routing: {useDNSInClusterFile: false}}")
            .groups(ids.map(group))
            .pods(pods)
            .at(100);
        let InitialFileDecision::Write(text) = decide(&fixture.clone().build()).unwrap() else {
            panic!("coordinators can be chosen");
        };
        let parsed = ConnectionString::parse(&text).unwrap();
        let chosen: Vec<_> = parsed
            .coordinators
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(chosen, ["10.0.0.0:4501", "10.0.0.2:4501", "10.0.0.3:4501"]);
        assert_eq!(parsed.generation_id, generation_id("uid-1", 100));
        let triple = fixture
            .clone()
            .cluster(|c| {
                c.spec.database_configuration.redundancy_mode =
                    Some(fdb_shared::api::RedundancyMode::Triple);
            })
            .build();
        assert!(matches!(
            decide(&triple).unwrap(),
            InitialFileDecision::NotEnoughZones(_)
        ));
        let seeded = fixture
            .cluster(|c| c.spec.seed_connection_string = Some("a:b@10.1.1.1:4501".into()))
            .build();
        assert_eq!(
            decide(&seeded).unwrap(),
            InitialFileDecision::Write("a:b@10.1.1.1:4501".into())
        );
        let Verdict::Act(plan) = GenerateInitialClusterFile
            .decide(&seeded, &PassFacts::default())
            .unwrap()
        else {
            panic!("the seed is written");
        };
        assert_eq!(
            plan.actions[0].action,
            Action::WriteStatus(vec![StatusMutation::SetConnectionString(
                "a:b@10.1.1.1:4501".into()
            )])
        );
        assert!(matches!(
            plan.actions[1].action,
            Action::Event {
                reason: EventReason::ConnectionStringGenerated,
                ..
            }
        ));
        assert!(plan.then.is_some(), "the ConfigMap is updated first");
        assert!(matches!(
            GenerateInitialClusterFile.decide(&triple, &PassFacts::default()),
            Ok(Verdict::Wait(Wait {
                waits_on: WaitOn::KubernetesLong,
                ..
            }))
        ));
    }
}
