//! The RBAC of unified pods' fdb-kubernetes-monitor (issue 22): a namespaced Role bound
//! to its own service account, granting exactly what the monitor does with its pod.

use std::collections::BTreeSet;

use crate::manifests::Install;
use crate::rbac::{self, Permission};

const MONITOR_RBAC: &str = "images/operator/install/fdb-kubernetes-monitor-rbac.yaml";

/// What the monitor does against the API: reads and watches its pod (a cache filtered to
/// its name lists and watches), patches its annotations.
fn monitor_needs() -> BTreeSet<Permission> {
    ["get", "list", "watch", "patch"]
        .into_iter()
        .map(|verb| (String::new(), "pods".to_owned(), verb.to_owned()))
        .collect()
}

#[test]
fn the_monitor_rbac_grants_its_service_account_exactly_what_it_uses() {
    let install = Install::load(MONITOR_RBAC);
    assert_eq!(install.service_accounts.len(), 1);
    let account = install.service_accounts[0].metadata.name.clone().unwrap();
    assert_eq!(install.grants.len(), 1);
    assert_eq!(install.bindings.len(), 1);
    let (grant, binding) = (&install.grants[0], &install.bindings[0]);
    // Namespaced, applied where the clusters run: never cluster-wide.
    assert_eq!(grant.kind, "Role");
    assert_eq!(binding.kind, "RoleBinding");
    assert_eq!(binding.role_ref.kind, "Role");
    assert_eq!(binding.role_ref.name, grant.name);
    let subjects: Vec<(&str, &str)> = binding
        .subjects
        .iter()
        .map(|s| (s.kind.as_str(), s.name.as_str()))
        .collect();
    assert_eq!(subjects, [("ServiceAccount", account.as_str())]);
    assert_eq!(rbac::granted(&grant.rules, MONITOR_RBAC), monitor_needs());
}
