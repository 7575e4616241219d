//! UpdateSidecarVersions (docs/upgrades.md, "Incompatible upgrades" step 2): during an
//! incompatible upgrade, patches only the sidecar container's image of every live pod that
//! runs, and whose processes all report to the database, to the target's (a pod not running
//! yet, or whose processes do not report, starts them on the running version first). The
//! kubelet restarts that container alone; the new sidecar sees that the main container
//! runs another version, stages `bin/<target>/fdbserver` and `fdbcli` on the shared
//! volume and renders the monitor conf with that binary directory. fdbmonitor restarts
//! nothing (`kill_on_configuration_change = false`): the processes change binary only at
//! the cluster-wide kill (BounceProcesses).
//!
//! Outside an upgrade it also puts back the sidecar image of a pod whose main container is
//! already the desired one (an upgrade abandoned before its kill); pods whose main image
//! differs are recreated by UpdatePods instead.
//!
//! Until a pod's sidecar runs the wanted image it has IncorrectSidecarImage (observed by
//! UpdateStatus), so the upgrade's kill waits for it.

use async_trait::async_trait;
use kube::ResourceExt;

use super::Subreconciler;
use crate::controller::errors::StepError;
use crate::controller::model::pod::SIDECAR_CONTAINER;
use crate::controller::objects::pod_is_running;
use crate::controller::pass::plan::{Action, Barrier, PassFacts, Verdict};
use crate::controller::snapshot::ClusterSnapshot;
use crate::controller::upgrade::{
    pending_upgrade_target, processes_report, restarted_by_the_kill, wanted_main_image,
    wanted_sidecar_image,
};

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct UpdateSidecarVersions;

/// One sidecar image to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SidecarUpdate {
    /// The process group.
    pub group: String,
    /// The pod.
    pub pod: String,
    /// Its sidecar image now.
    pub from: String,
    /// The image it gets.
    pub to: String,
}

/// Decides which pods get a new sidecar image, in status order: live groups' pods that
/// are not being deleted and have a sidecar container whose image is not the wanted one
/// (see the module documentation for the case outside an upgrade); during an upgrade,
/// only pods that run and whose processes all report.
pub(crate) fn decide(snapshot: &ClusterSnapshot) -> Vec<SidecarUpdate> {
    let cluster = snapshot.cluster();
    let upgrading = pending_upgrade_target(cluster).is_some();
    let wanted = wanted_sidecar_image(cluster);
    let wanted_main = wanted_main_image(cluster);
    let mut updates = Vec::new();
    // During an incompatible upgrade, groups being removed whose pod still runs are
    // staged too: the cluster-wide kill restarts them with the others.
    let groups = snapshot.groups().filter(|group| {
        !group.is_marked_for_removal() || (upgrading && restarted_by_the_kill(group))
    });
    for group in groups {
        let (Some(pod), Some(facts)) = (group.pod_head(), group.pod_facts()) else {
            continue;
        };
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        // A pod that does not run yet keeps its sidecar until it does (issue 26, seed
        // 18): its processes start from the conf its sidecar renders, and a target
        // sidecar renders the staged binary, so a pod created during the upgrade would
        // start on the target beside processes on the old version. Started from the
        // running version's sidecar, it joins the cluster and moves at the kill.
        if upgrading && !pod_is_running(pod) {
            continue;
        }
        let Some(live) = facts.sidecar_image.as_deref() else {
            continue;
        };
        if live == wanted {
            continue;
        }
        // Nor is a pod whose processes do not all report staged (issue 26, seed 71): a
        // process that starts after staging runs the target (see [`processes_report`]).
        if upgrading && !processes_report(&group) {
            continue;
        }
        if !upgrading && facts.main_image.as_deref() != Some(wanted_main.as_str()) {
            continue;
        }
        updates.push(SidecarUpdate {
            group: group.id().to_owned(),
            pod: pod.name_any(),
            from: live.to_owned(),
            to: wanted.clone(),
        });
    }
    updates
}

impl SidecarUpdate {
    /// The patch of the pod's sidecar container, as an action.
    pub(crate) fn into_action(self) -> Action {
        Action::SetContainerImage {
            pod: self.pod,
            container: SIDECAR_CONTAINER.to_owned(),
            image: self.to,
        }
    }
}

#[async_trait]
impl Subreconciler for UpdateSidecarVersions {
    fn name(&self) -> &'static str {
        "UpdateSidecarVersions"
    }

    fn barrier(&self) -> Barrier {
        Barrier::Holds
    }

    /// The sidecar patches; the restarted sidecars are confirmed by UpdatePodConfig,
    /// which asks them next.
    fn decide(&self, snapshot: &ClusterSnapshot, _facts: &PassFacts) -> Result<Verdict, StepError> {
        Ok(Verdict::plain(
            decide(snapshot).into_iter().map(SidecarUpdate::into_action),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::fixtures::{Fixture, group, pod, reporting};
    use crate::controller::model::pod::MAIN_CONTAINER;
    use k8s_openapi::api::core::v1::Pod;

    fn with_images(name: &str, id: &str, main: &str, sidecar: &str) -> Pod {
        let mut pod = pod(name, id, "n1", "10.0.0.1");
        if let Some(spec) = pod.spec.as_mut() {
            spec.containers = serde_json::from_value(serde_json::json!([
                {"name": MAIN_CONTAINER, "image": main},
                {"name": SIDECAR_CONTAINER, "image": sidecar}
            ]))
            .unwrap();
        }
        pod
    }

    const MAIN_71: &str = "foundationdb/foundationdb:7.1.57";
    const SIDECAR_71: &str = "foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1";
    const SIDECAR_73: &str = "foundationdb/foundationdb-kubernetes-sidecar:7.3.43-1";

    #[test]
    fn an_incompatible_upgrade_changes_only_sidecars_not_yet_on_the_target() {
        let snapshot = Fixture::new("version: 7.3.43")
            .status(|s| s.running_version = Some("7.1.57".into()))
            .groups([group("log-1"), group("log-2")])
            .pods([
                with_images("sample-log-1", "log-1", MAIN_71, SIDECAR_71),
                with_images("sample-log-2", "log-2", MAIN_71, SIDECAR_73),
            ])
            .database(reporting(&["log-1", "log-2"]))
            .build();
        assert_eq!(
            decide(&snapshot),
            [SidecarUpdate {
                group: "log-1".into(),
                pod: "sample-log-1".into(),
                from: SIDECAR_71.into(),
                to: SIDECAR_73.into(),
            }]
        );
    }

    #[test]
    fn a_pod_not_running_yet_keeps_the_running_versions_sidecar_until_it_runs() {
        // Issue 26, seed 18: a pod created during the upgrade and patched before it
        // started ran its process on the staged target beside the old version.
        let mut pending = with_images("sample-log-1", "log-1", MAIN_71, SIDECAR_71);
        pending.status =
            Some(serde_json::from_value(serde_json::json!({"phase": "Pending"})).unwrap());
        let snapshot = Fixture::new("version: 7.3.43")
            .status(|s| s.running_version = Some("7.1.57".into()))
            .groups([group("log-1")])
            .pods([pending])
            .build();
        assert!(decide(&snapshot).is_empty());
    }

    #[test]
    fn a_pod_whose_process_does_not_report_keeps_the_running_versions_sidecar() {
        // Issue 26, seed 71: a group whose process was missing (and the database without
        // a quorum, so no process reported) was staged; its process came back on the
        // target beside the old version while the database could not run the kill.
        let fixture = Fixture::new("version: 7.3.43")
            .status(|s| s.running_version = Some("7.1.57".into()))
            .groups([group("log-1"), group("log-2")])
            .pods([
                with_images("sample-log-1", "log-1", MAIN_71, SIDECAR_71),
                with_images("sample-log-2", "log-2", MAIN_71, SIDECAR_71),
            ]);
        let one_missing = fixture.clone().database(reporting(&["log-2"])).build();
        let staged: Vec<String> = decide(&one_missing).into_iter().map(|u| u.group).collect();
        assert_eq!(staged, ["log-2"]);
        let no_quorum = fixture.database(reporting(&[])).build();
        assert!(decide(&no_quorum).is_empty());
    }

    #[test]
    fn the_step_plans_one_sidecar_image_change_per_pod_and_no_lock_or_disruption() {
        let snapshot = Fixture::new("version: 7.3.43")
            .status(|s| s.running_version = Some("7.1.57".into()))
            .groups([group("log-1")])
            .pods([with_images("sample-log-1", "log-1", MAIN_71, SIDECAR_71)])
            .database(reporting(&["log-1"]))
            .build();
        let verdict = UpdateSidecarVersions
            .decide(&snapshot, &PassFacts::default())
            .unwrap();
        let Verdict::Act(plan) = &verdict else {
            panic!("{verdict:?}")
        };
        assert!(plan.actions.iter().all(|p| p.lock.is_none() && !p.disrupts));
        assert_eq!(
            verdict.actions(),
            [&Action::SetContainerImage {
                pod: "sample-log-1".into(),
                container: SIDECAR_CONTAINER.into(),
                image: SIDECAR_73.into(),
            }]
        );
    }

    #[test]
    fn patch_upgrades_and_settled_clusters_leave_sidecars_alone() {
        let patch = Fixture::new("version: 7.1.63")
            .status(|s| s.running_version = Some("7.1.57".into()))
            .groups([group("log-1")])
            .pods([with_images("sample-log-1", "log-1", MAIN_71, SIDECAR_71)])
            .build();
        assert!(decide(&patch).is_empty(), "UpdatePods recreates the pod");
        let settled = Fixture::new("version: 7.1.57")
            .status(|s| s.running_version = Some("7.1.57".into()))
            .groups([group("log-1")])
            .pods([with_images("sample-log-1", "log-1", MAIN_71, SIDECAR_71)])
            .build();
        assert!(decide(&settled).is_empty());
    }

    #[test]
    fn an_abandoned_upgrade_puts_the_sidecar_back() {
        let snapshot = Fixture::new("version: 7.1.57")
            .status(|s| s.running_version = Some("7.1.57".into()))
            .groups([group("log-1")])
            .pods([with_images("sample-log-1", "log-1", MAIN_71, SIDECAR_73)])
            .build();
        let updates = decide(&snapshot);
        assert_eq!(updates.len(), 1);
        assert_eq!(updates[0].to, SIDECAR_71);
    }
}
