use super::*;
use crate::validation::{ValidatedCluster, validate_cluster};

fn cluster(name: &str, spec_yaml: &str) -> FoundationDBCluster {
    let spec = serde_yaml_ng::from_str(&format!("version: 7.1.57\n{spec_yaml}")).unwrap();
    let mut cluster = FoundationDBCluster::new(name, spec);
    cluster.metadata.namespace = Some("fdb".to_owned());
    cluster
}

fn errors(name: &str, spec_yaml: &str) -> Vec<String> {
    validate_cluster(&cluster(name, spec_yaml)).errors
}

#[test]
fn the_rules_match_the_api_servers() {
    assert_eq!(dns1123_label_error("a-1"), None);
    assert_eq!(dns1123_label_error("1a"), None);
    for bad in ["", "-a", "a-", "A", "a.b", "a_b", "é"] {
        assert!(dns1123_label_error(bad).is_some(), "{bad:?}");
    }
    assert!(dns1123_label_error(&"a".repeat(64)).unwrap().contains("63"));
    assert_eq!(dns1123_subdomain_error("a.b-c.d"), None);
    for bad in ["", "a..b", ".a", "a.", "a.-b", "A.b"] {
        assert!(dns1123_subdomain_error(bad).is_some(), "{bad:?}");
    }
    assert!(
        dns1123_subdomain_error(&"a".repeat(254))
            .unwrap()
            .contains("253")
    );
    assert_eq!(dns1035_label_error("a1"), None);
    assert!(dns1035_label_error("1a").is_some());
    assert_eq!(label_value_error(""), None);
    assert_eq!(label_value_error("A.b_c-1"), None);
    for bad in ["-a", "a_", "a b", "a;b", "a/b"] {
        assert!(label_value_error(bad).is_some(), "{bad:?}");
    }
    assert_eq!(
        qualified_name_error("foundationdb.org/fdb-cluster-name"),
        None
    );
    assert_eq!(qualified_name_error("Tier_1"), None);
    for bad in ["", "/a", "a/", "A_B/c", "a/b/c", "a b"] {
        assert!(qualified_name_error(bad).is_some(), "{bad:?}");
    }
}

#[test]
fn a_cluster_name_that_cannot_fit_is_refused_naming_the_limit() {
    assert_eq!(errors("sample", ""), Vec::<String>::new());
    let long = "a".repeat(70);
    let found = errors(&long, "");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with(&format!(
            "metadata.name: \"{long}\" is too long: pod names <cluster>-"
        )),
        "{found:?}"
    );
    assert!(
        found[0].contains("would exceed 63 characters; at most"),
        "{found:?}"
    );
    // The longest class the cluster runs decides (by default: stateless); explicit
    // cluster controllers need more room.
    let fits = "a".repeat(47);
    assert_eq!(errors(&fits, ""), Vec::<String>::new());
    let controllers = errors(&fits, "processCounts: {cluster_controller: 1}");
    assert!(
        controllers[0].contains("<cluster>-cluster-controller-<n>")
            && controllers[0].contains("at most 38 characters"),
        "{controllers:?}"
    );
    assert!(errors(&"a".repeat(48), "")[0].contains("<cluster>-stateless-<n>"));
}

#[test]
fn cluster_names_with_dots_capitals_or_a_leading_digit_are_refused() {
    for name in ["my.cluster", "Sample", "sample_1", "-sample"] {
        let found = errors(name, "");
        assert!(
            found.len() == 1
                && found[0].starts_with(&format!("metadata.name: {name:?} is not allowed")),
            "{name}: {found:?}"
        );
    }
    // A leading digit only matters for Service names.
    assert!(errors("1sample", "")[0].contains("DNS-1035"));
    assert_eq!(
        errors(
            "1sample",
            "routing: {useDNSInClusterFile: false, headlessService: false}"
        ),
        Vec::<String>::new()
    );
    let invalid = ValidatedCluster::new(cluster("my.cluster", "")).unwrap_err();
    assert!(invalid.errors[0].starts_with("metadata.name"));
}

#[test]
fn pod_dns_names_must_fit_in_253_characters() {
    let mut long_namespace = cluster("sample", "");
    long_namespace.metadata.namespace = Some("n".repeat(63));
    let domain = format!("{}.local", "d".repeat(150));
    long_namespace.spec.routing.dns_domain = Some(domain);
    let found = validate_cluster(&long_namespace).errors;
    assert!(
        found.len() == 1 && found[0].contains("too long for the DNS names in the cluster file"),
        "{found:?}"
    );
}

#[test]
fn the_prefix_must_be_a_label_value_with_room_for_class_and_number() {
    assert_eq!(
        errors("sample", "processGroupIDPrefix: dc1.Zone_a"),
        Vec::<String>::new()
    );
    for prefix in ["\"a; b\"", "\"x\\ny\"", "-a", "a_", "\"a\\\"\""] {
        let found = errors("sample", &format!("processGroupIDPrefix: {prefix}"));
        assert!(
            found.len() == 1
                && found[0].starts_with("spec.processGroupIDPrefix: ")
                && found[0].contains("is not allowed"),
            "{prefix}: {found:?}"
        );
    }
    let long = "p".repeat(70);
    let found = errors("sample", &format!("processGroupIDPrefix: {long}"));
    assert!(
        found.len() == 1
            && found[0].contains("is too long: process group IDs <prefix>-")
            && found[0].contains("at most"),
        "{found:?}"
    );
}

#[test]
fn the_dns_domain_must_be_a_subdomain() {
    assert_eq!(
        errors("sample", "routing: {dnsDomain: cluster.example}"),
        Vec::<String>::new()
    );
    for domain in ["\"a;b\"", "\"a b\"", "Cluster.Local", "\"a..b\"", "\"-a\""] {
        let found = errors("sample", &format!("routing: {{dnsDomain: {domain}}}"));
        assert!(
            found.len() == 1
                && found[0].starts_with("spec.routing.dnsDomain: ")
                && found[0].contains("is not a DNS subdomain"),
            "{domain}: {found:?}"
        );
    }
}

#[test]
fn label_settings_must_be_valid_keys_and_values() {
    let found = errors(
        "sample",
        "labels: {matchLabels: {\"a b\": x}, resourceLabels: {team: \"x;y\"}, processClassLabels: [\"/k\"], processGroupIDLabels: [ok]}",
    );
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].starts_with("spec.labels.matchLabels: \"a b\" is not a valid label key"));
    assert!(
        found[1].starts_with("spec.labels.resourceLabels.team: \"x;y\" is not a valid label value")
    );
    assert!(found[2].starts_with("spec.labels.processClassLabels[0]: \"/k\""));
}
