//! One progress line for a version or image rollout, read off the world (not the
//! operator): how many sidecars and main containers run the images the spec asks for,
//! and how many processes run `spec.version`. The runner prints it whenever it changes,
//! so a user watching an upgrade sees each phase: sidecars first (staging the new
//! binaries), then every process on the new version at once (the kill), then the main
//! images pod by pod.

use crate::invariants::{ActualWorld, DesiredWorld};
use fdb_operator::controller::{MAIN_CONTAINER as MAIN, SIDECAR_CONTAINER as SIDECAR};

/// The line for the world now, `None` when every pod and process already matches the
/// spec (nothing rolling out).
pub fn rollout_line(desired: &DesiredWorld, actual: &ActualWorld) -> Option<String> {
    let pods: Vec<_> = actual
        .pods
        .iter()
        .filter(|pod| !desired.marked_for_removal.contains(&pod.group))
        .collect();
    let on_image = |container: &str| -> Option<(usize, usize)> {
        let want = desired.images.get(container)?;
        let have = pods
            .iter()
            .filter(|pod| pod.images.get(container) == Some(want))
            .count();
        Some((have, pods.len()))
    };
    let version = desired.version;
    let processes = actual.process_versions.len();
    let on_version = actual
        .process_versions
        .values()
        .filter(|v| **v == version)
        .count();
    let sidecars = on_image(SIDECAR);
    let mains = on_image(MAIN);
    let done = |counts: Option<(usize, usize)>| counts.is_none_or(|(have, all)| have == all);
    if done(sidecars) && done(mains) && on_version == processes {
        return None;
    }
    let mut parts = Vec::new();
    if let Some((have, all)) = sidecars {
        parts.push(format!("sidecar images {have}/{all}"));
    }
    parts.push(format!("processes on {version} {on_version}/{processes}"));
    if let Some((have, all)) = mains {
        parts.push(format!("main images {have}/{all}"));
    }
    Some(format!("rollout to {version}: {}", parts.join(", ")))
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use fdb_shared::api::ProcessClass;

    use super::*;
    use crate::invariants::LivePod;

    fn pod(name: &str, main: &str, sidecar: &str) -> LivePod {
        LivePod {
            name: name.into(),
            group: name.into(),
            class: ProcessClass::Storage,
            images: BTreeMap::from([
                (MAIN.to_owned(), main.to_owned()),
                (SIDECAR.to_owned(), sidecar.to_owned()),
            ]),
            claim: None,
        }
    }

    fn worlds(pods: Vec<LivePod>, versions: &[&str]) -> (DesiredWorld, ActualWorld) {
        let desired = DesiredWorld {
            counts: BTreeMap::new(),
            version: "7.3.43".parse().unwrap(),
            images: BTreeMap::from([
                (MAIN.to_owned(), "fdb:7.3.43".to_owned()),
                (SIDECAR.to_owned(), "sidecar:7.3.43-1".to_owned()),
            ]),
            configuration: Default::default(),
            marked_for_removal: BTreeSet::new(),
            ever_marked: BTreeSet::new(),
        };
        let actual = ActualWorld {
            pods,
            pvcs: BTreeSet::new(),
            process_versions: versions
                .iter()
                .enumerate()
                .map(|(n, v)| (format!("10.0.0.{n}:4501"), v.parse().unwrap()))
                .collect(),
            configuration: None,
            excluded_groups: BTreeSet::new(),
        };
        (desired, actual)
    }

    #[test]
    fn each_phase_of_an_upgrade_shows_and_a_finished_one_is_silent() {
        let (desired, actual) = worlds(
            vec![
                pod("a", "fdb:7.1.57", "sidecar:7.3.43-1"),
                pod("b", "fdb:7.1.57", "sidecar:7.1.57-1"),
            ],
            &["7.1.57", "7.1.57"],
        );
        assert_eq!(
            rollout_line(&desired, &actual).as_deref(),
            Some("rollout to 7.3.43: sidecar images 1/2, processes on 7.3.43 0/2, main images 0/2")
        );
        let (desired, actual) = worlds(
            vec![
                pod("a", "fdb:7.3.43", "sidecar:7.3.43-1"),
                pod("b", "fdb:7.3.43", "sidecar:7.3.43-1"),
            ],
            &["7.3.43", "7.3.43"],
        );
        assert_eq!(rollout_line(&desired, &actual), None);
    }
}
