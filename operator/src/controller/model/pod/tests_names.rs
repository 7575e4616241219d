//! The names and label values built for a cluster: a property test over arbitrary
//! `metadata.name`, `processGroupIDPrefix` and `routing.dnsDomain` values (either
//! validation refuses the cluster, or every name the operator builds for it is one the
//! API server accepts), and the check of process group IDs read from the status.

use fdb_shared::api::ProcessClass;
use fdb_shared::cluster_math::desired_process_counts;
use fdb_shared::validation::ValidatedCluster;
use fdb_shared::validation::names::{
    dns1035_label_error, dns1123_label_error, dns1123_subdomain_error, label_value_error,
    qualified_name_error,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::tests::{cluster, group};
use super::*;
use crate::controller::events::event_name_prefix;
use crate::controller::model::config_map::build_config_map;

/// Characters that make names interesting: valid ones, separators, and ones no name may
/// hold.
const ALPHABET: &[char] = &[
    'a', 'b', 'z', 'q', '0', '9', '-', '-', '.', '_', 'A', 'Z', ';', ' ', '/', '\n', 'é', '"',
];

fn arbitrary(rng: &mut ChaCha8Rng) -> String {
    let length = match rng.random_range(0..4) {
        0 => rng.random_range(1..8),
        1 => rng.random_range(8..40),
        2 => rng.random_range(40..70),
        _ => rng.random_range(70..300),
    };
    (0..length)
        .map(|_| {
            // Mostly lowercase letters, so that many values are valid and get built.
            if rng.random_bool(0.7) {
                char::from(rng.random_range(b'a'..=b'z'))
            } else {
                ALPHABET[rng.random_range(0..ALPHABET.len())]
            }
        })
        .collect()
}

fn assert_name(what: &str, name: &str, problem: Option<String>) {
    assert!(problem.is_none(), "{what} {name:?}: {problem:?}");
}

fn assert_labels(what: &str, metadata: &ObjectMeta) {
    for (key, value) in metadata.labels.iter().flatten() {
        assert_name(what, key, qualified_name_error(key));
        assert_name(what, value, label_value_error(value));
    }
}

/// Builds every object of the cluster for the first and the highest group number the
/// checks leave room for, and checks their names and labels.
fn assert_everything_built_is_valid(cluster: &FoundationDBCluster) {
    let classes = desired_process_counts(&cluster.spec).positive();
    for class in classes.keys().copied() {
        for n in [1, 99_999] {
            let group = group(class, &names::process_group_id(cluster, class, n));
            let pod = build_pod(cluster, &group, &PodOptions::default()).expect("pod");
            let pod_name = pod.metadata.name.clone().unwrap_or_default();
            assert_name("pod", &pod_name, dns1123_label_error(&pod_name));
            assert_labels("pod", &pod.metadata);
            if let Some(pvc) = build_pvc(cluster, &group).expect("pvc") {
                let name = pvc.metadata.name.clone().unwrap_or_default();
                assert_name("pvc", &name, dns1123_subdomain_error(&name));
                assert_labels("pvc", &pvc.metadata);
            }
            if let Some(service) = build_process_group_service(cluster, &group).expect("service") {
                let name = service.metadata.name.clone().unwrap_or_default();
                assert_name("service", &name, dns1035_label_error(&name));
                assert_labels("service", &service.metadata);
            }
            let dns = names::pod_dns_name(cluster, &group).expect("dns name");
            assert_name("pod DNS name", &dns, dns1123_subdomain_error(&dns));
        }
    }
    if let Some(service) = build_headless_service(cluster) {
        let name = service.metadata.name.clone().unwrap_or_default();
        assert_name("headless service", &name, dns1035_label_error(&name));
        assert_labels("headless service", &service.metadata);
    }
    let config_map =
        build_config_map(cluster, Some("sample:abc@10.1.1.1:4501"), None).expect("config map");
    let name = config_map.metadata.name.clone().unwrap_or_default();
    assert_name("config map", &name, dns1123_subdomain_error(&name));
    assert_labels("config map", &config_map.metadata);
    let event = format!(
        "{}.{:x}",
        event_name_prefix(cluster.metadata.name.as_deref().unwrap_or_default()),
        u64::MAX
    );
    assert_name("event", &event, dns1123_subdomain_error(&event));
}

#[test]
fn arbitrary_names_prefixes_and_domains_are_refused_or_build_valid_objects() {
    let mut rng = ChaCha8Rng::seed_from_u64(19);
    let (mut accepted, mut refused) = (0, 0);
    for case in 0..1500 {
        let mut cluster = cluster(if rng.random_bool(0.5) {
            "routing: {publicIPSource: service}"
        } else {
            ""
        });
        match case % 3 {
            0 => cluster.metadata.name = Some(arbitrary(&mut rng)),
            1 => cluster.spec.process_group_id_prefix = Some(arbitrary(&mut rng)),
            _ => cluster.spec.routing.dns_domain = Some(arbitrary(&mut rng)),
        }
        if cluster.metadata.name.as_deref() == Some("") {
            // Not a name at all: the API server requires one, and builders refuse.
            continue;
        }
        match ValidatedCluster::new(cluster.clone()) {
            Ok(_) => {
                accepted += 1;
                assert_everything_built_is_valid(&cluster);
            }
            Err(_) => refused += 1,
        }
    }
    // Both sides of the property were exercised.
    assert!(accepted > 200 && refused > 200, "{accepted} {refused}");
}

#[test]
fn a_status_id_that_cannot_name_a_pod_is_refused_before_building() {
    let cluster = cluster("");
    for id in ["Storage;1", &format!("{}-storage-1", "a".repeat(60)), "x y"] {
        let group = group(ProcessClass::Storage, id);
        let error = build_pod(&cluster, &group, &PodOptions::default()).unwrap_err();
        assert!(
            matches!(error, PodModelError::InvalidName { .. }),
            "{id}: {error}"
        );
        assert!(build_pvc(&cluster, &group).is_err(), "{id}");
    }
    // A Go-operator ID with an unusual prefix but a valid label value builds.
    let group = group(ProcessClass::Storage, "dc1.Zone_a-storage-3");
    let pod = build_pod(&cluster, &group, &PodOptions::default()).unwrap();
    assert_eq!(pod.metadata.name.as_deref(), Some("sample-storage-3"));
}

#[test]
fn names_that_no_object_can_have_never_reach_an_api_path() {
    assert!(checked_object_name("sample-storage-1", "delete pod").is_ok());
    for name in ["sample-x/../secrets/s", "a?watch=1", "", "Sample"] {
        let error = checked_object_name(name, "delete pod").unwrap_err();
        assert!(
            error.to_string().starts_with("delete pod: "),
            "{name}: {error}"
        );
    }
}
