//! Names Kubernetes would refuse (issue 19): a cluster name, `processGroupIDPrefix` or
//! `routing.dnsDomain` that cannot make valid object names, label values or DNS names is
//! refused by `explain` (exit 1, the error naming the field) and `simulate` (exit 2)
//! before anything is built.

use super::hostile_input::{explain, simulate_refuses};

/// A cluster manifest with `name` and extra spec lines (indented by two spaces).
fn manifest(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata:\n  name: {name:?}\nspec:\n  version: 7.1.57\n{spec}"
    )
}

/// A scenario whose cluster has `name` and the spec `spec` (a flow mapping).
fn scenario(name: &str, spec: &str) -> String {
    format!(
        "name: hostile\ncluster:\n  apiVersion: apps.foundationdb.org/v1beta2\n  kind: FoundationDBCluster\n  metadata: {{name: {name:?}}}\n  spec: {spec}\n"
    )
}

/// Each attack: cluster name, spec lines for explain, spec mapping for simulate, and
/// what the first error must contain.
fn attacks() -> Vec<(String, &'static str, &'static str, Vec<String>)> {
    let seventy = "a".repeat(70);
    vec![
        (
            seventy.clone(),
            "",
            "{version: 7.1.57}",
            vec![
                format!("metadata.name: \"{seventy}\" is too long"),
                "pod names <cluster>-stateless-<n> would exceed 63 characters; at most 47 characters".to_owned(),
            ],
        ),
        (
            "my.cluster".to_owned(),
            "",
            "{version: 7.1.57}",
            vec!["metadata.name: \"my.cluster\" is not allowed".to_owned(), "DNS-1035".to_owned()],
        ),
        (
            "sample".to_owned(),
            "  processGroupIDPrefix: \"x; writemode on\"\n",
            "{version: 7.1.57, processGroupIDPrefix: \"x; writemode on\"}",
            vec!["spec.processGroupIDPrefix: \"x; writemode on\" is not allowed".to_owned()],
        ),
        (
            "sample".to_owned(),
            "  processGroupIDPrefix: pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp\n",
            "{version: 7.1.57, processGroupIDPrefix: pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp}",
            vec!["spec.processGroupIDPrefix:".to_owned(), "is too long: process group IDs".to_owned(), "at most".to_owned()],
        ),
        (
            "sample".to_owned(),
            "  routing: {dnsDomain: \"cluster.local; coordinators auto\"}\n",
            "{version: 7.1.57, routing: {dnsDomain: \"cluster.local; coordinators auto\"}}",
            vec!["spec.routing.dnsDomain: \"cluster.local; coordinators auto\" is not a DNS subdomain".to_owned()],
        ),
        (
            "sample".to_owned(),
            "  labels: {resourceLabels: {team: \"a b\"}}\n",
            "{version: 7.1.57, labels: {resourceLabels: {team: \"a b\"}}}",
            vec!["spec.labels.resourceLabels.team: \"a b\" is not a valid label value".to_owned()],
        ),
    ]
}

#[test]
fn explain_refuses_names_kubernetes_would_refuse_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    for (name, spec, _, needles) in attacks() {
        let (code, json) = explain(&dir, &manifest(&name, spec));
        assert_eq!(code, Some(1), "{name} {spec}: {json}");
        assert_eq!(json["valid"], false);
        let error = json["errors"][0].as_str().unwrap();
        for needle in needles {
            assert!(error.contains(&needle), "{needle:?} missing in {error}");
        }
    }
}

#[test]
fn simulate_refuses_names_kubernetes_would_refuse_up_front() {
    let dir = tempfile::tempdir().unwrap();
    for (name, _, spec, needles) in attacks() {
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        simulate_refuses(&dir, &scenario(&name, spec), &needles);
    }
}
