//! What the operator does against the Kubernetes API, as RBAC (apiGroup, resource, verb)
//! triples, and what a set of rules grants.

use std::collections::BTreeSet;
use std::path::Path;

use k8s_openapi::api::rbac::v1::PolicyRule;

/// One (apiGroup, resource, verb) permission.
pub type Permission = (String, String, String);

/// A permission the operator needs, and the code that needs it.
#[derive(Debug)]
pub struct Need {
    /// API group (`""` is core).
    pub group: &'static str,
    /// Resource, with `/subresource` when it is one.
    pub resource: &'static str,
    /// Verbs.
    pub verbs: &'static [&'static str],
    /// Where in the code (paths under operator/src/).
    pub source: &'static str,
}

/// Everything `fdb-operator run` does against the API. Update it with the code: the
/// install manifests must grant exactly this (tests below), and
/// `controller_write_calls_match_the_required_list` checks the write verbs against the
/// controller source.
pub const REQUIRED: &[Need] = &[
    // The controller's watch of clusters: Controller::new(Api<FoundationDBCluster>) lists
    // and watches (all namespaces, or WATCH_NAMESPACE).
    Need {
        group: "apps.foundationdb.org",
        resource: "foundationdbclusters",
        verbs: &["list", "watch"],
        source: "controller/production/mod.rs run: Controller::new",
    },
    // Each pass re-reads its cluster.
    Need {
        group: "apps.foundationdb.org",
        resource: "foundationdbclusters",
        verbs: &["get"],
        source: "controller/pass/driver.rs run_pass_inner: Api::get_opt",
    },
    // Status is written as a merge patch of the status subresource.
    Need {
        group: "apps.foundationdb.org",
        resource: "foundationdbclusters/status",
        verbs: &["patch"],
        source: "controller/pass/io/mod.rs PassIo::write_status: Api::patch_status",
    },
    // Owned objects are watched (.owns) and listed by label selector each pass.
    Need {
        group: "",
        resource: "pods",
        verbs: &["list", "watch"],
        source: "controller/production/mod.rs run: .owns(Api<Pod>); controller/pass/io/mod.rs PassIo::list (read by controller/pass/state.rs)",
    },
    Need {
        group: "",
        resource: "pods",
        verbs: &["create"],
        source: "controller/steps/add_pods/mod.rs via controller/pass/io/mod.rs PassIo::create_all: Api::create",
    },
    Need {
        group: "",
        resource: "pods",
        verbs: &["patch"],
        source: "controller/steps/update_labels/mod.rs and update_pod_config.rs via controller/pass/io/mod.rs PassIo::patch (labels, annotations)",
    },
    Need {
        group: "",
        resource: "pods",
        verbs: &["delete"],
        source: "controller/steps/update_pods/mod.rs, delete_pods_for_buggification.rs and remove_incompatible_processes.rs via controller/pass/io/mod.rs PassIo::delete: Api::delete",
    },
    Need {
        group: "",
        resource: "persistentvolumeclaims",
        verbs: &["list", "watch"],
        source: "controller/production/mod.rs run: .owns(Api<PersistentVolumeClaim>); controller/pass/io/mod.rs PassIo::list (read by controller/pass/state.rs)",
    },
    Need {
        group: "",
        resource: "persistentvolumeclaims",
        verbs: &["create"],
        source: "controller/steps/add_pvcs/mod.rs via controller/pass/io/mod.rs PassIo::create_all: Api::create",
    },
    Need {
        group: "",
        resource: "persistentvolumeclaims",
        verbs: &["patch"],
        source: "controller/steps/update_labels/mod.rs via controller/pass/io/mod.rs PassIo::patch (labels)",
    },
    Need {
        group: "",
        resource: "services",
        verbs: &["list", "watch"],
        source: "controller/production/mod.rs run: .owns(Api<Service>); controller/pass/io/mod.rs PassIo::list (read by controller/pass/state.rs)",
    },
    Need {
        group: "",
        resource: "services",
        verbs: &["create"],
        source: "controller/steps/add_services/mod.rs via controller/pass/io/mod.rs PassIo::create_all: Api::create",
    },
    // Removed process groups' objects, and pods in a terminal phase.
    Need {
        group: "",
        resource: "pods",
        verbs: &["delete"],
        source: "controller/steps/remove_pods/mod.rs and delete_terminal_pods.rs via controller/pass/io/mod.rs PassIo::delete: Api::delete",
    },
    Need {
        group: "",
        resource: "persistentvolumeclaims",
        verbs: &["delete"],
        source: "controller/steps/remove_pods/mod.rs via controller/pass/io/mod.rs PassIo::delete: Api::delete",
    },
    Need {
        group: "",
        resource: "services",
        verbs: &["delete"],
        source: "controller/steps/remove_services/mod.rs via controller/pass/io/mod.rs PassIo::delete: Api::delete",
    },
    Need {
        group: "",
        resource: "configmaps",
        verbs: &["list", "watch"],
        source: "controller/production/mod.rs run: .owns(Api<ConfigMap>)",
    },
    Need {
        group: "",
        resource: "configmaps",
        verbs: &["get"],
        source: "controller/pass/io/mod.rs PassIo::get_config_map: Api::get_opt",
    },
    Need {
        group: "",
        resource: "configmaps",
        verbs: &["create", "patch"],
        source: "controller/steps/update_config_map/mod.rs via controller/pass/io/mod.rs PassIo::create, PassIo::patch",
    },
    // kube-runtime 5's Recorder writes events.k8s.io/v1 Events: create, or patch of the
    // series when the same event repeats (kube-runtime src/events.rs, whose docs list
    // exactly these two verbs). Core-group events are not used.
    Need {
        group: "events.k8s.io",
        resource: "events",
        verbs: &["create", "patch"],
        source: "controller/events.rs publish: kube::runtime::events::Recorder::publish",
    },
    // Leader election (--leader-election): the Lease is read, created once, and renewed
    // or taken over with a resourceVersion-conditional replace (an update).
    Need {
        group: "coordination.k8s.io",
        resource: "leases",
        verbs: &["get", "create", "update"],
        source: "controller/production/leader.rs LeaseLock: Api::get_opt, Api::create, Api::replace",
    },
    // The backup and restore controllers watch their resources; each pass re-reads its
    // object and the cluster it names.
    Need {
        group: "apps.foundationdb.org",
        resource: "foundationdbbackups",
        verbs: &["get", "list", "watch"],
        source: "backup/production.rs run_controllers: Controller::new; backup/driver.rs run_backup_pass: Api::get_opt",
    },
    Need {
        group: "apps.foundationdb.org",
        resource: "foundationdbbackups",
        verbs: &["patch"],
        source: "backup/driver.rs set_finalizer: Api::patch",
    },
    Need {
        group: "apps.foundationdb.org",
        resource: "foundationdbbackups/status",
        verbs: &["patch"],
        source: "backup/driver.rs BackupPass::write_status: Api::patch_status",
    },
    Need {
        group: "apps.foundationdb.org",
        resource: "foundationdbrestores",
        verbs: &["get", "list", "watch"],
        source: "backup/production.rs run_controllers: Controller::new; restore/driver.rs restore_pass: Api::get_opt",
    },
    Need {
        group: "apps.foundationdb.org",
        resource: "foundationdbrestores/status",
        verbs: &["patch"],
        source: "restore/driver.rs restore_pass: Api::patch_status",
    },
    Need {
        group: "apps",
        resource: "deployments",
        verbs: &["get", "list", "watch"],
        source: "backup/production.rs run_controllers: .owns(Api<Deployment>); backup/driver.rs BackupPass::observe: Api::get_opt",
    },
    Need {
        group: "apps",
        resource: "deployments",
        verbs: &["create", "update", "delete"],
        source: "backup/driver.rs BackupPass::apply_deployment (Api::create, Api::replace) and finalize (Api::delete)",
    },
];

/// What `fdb-operator run` reads of cluster-scoped objects: a namespaced install grants
/// it with its own ClusterRole (a Role cannot grant it).
pub const CLUSTER_SCOPED: &[Need] = &[
    // The Nodes of the cluster's pods, for taint replacements; read only when
    // `taintReplacementOptions` are set, and a node that cannot be read is skipped.
    Need {
        group: "",
        resource: "nodes",
        verbs: &["get"],
        source: "controller/pass/io/mod.rs PassIo::get_nodes: Api::get_opt (read by controller/pass/state.rs)",
    },
];

fn triples(needs: &[Need]) -> BTreeSet<Permission> {
    needs
        .iter()
        .flat_map(|need| {
            need.verbs.iter().map(|verb| {
                (
                    need.group.to_owned(),
                    need.resource.to_owned(),
                    (*verb).to_owned(),
                )
            })
        })
        .collect()
}

/// [`REQUIRED`] as a set of triples.
pub fn required() -> BTreeSet<Permission> {
    triples(REQUIRED)
}

/// [`CLUSTER_SCOPED`] as a set of triples.
pub fn cluster_scoped() -> BTreeSet<Permission> {
    triples(CLUSTER_SCOPED)
}

/// The code that needs any of `permissions`.
pub fn sources_of(permissions: &BTreeSet<Permission>) -> Vec<&'static str> {
    REQUIRED
        .iter()
        .chain(CLUSTER_SCOPED)
        .filter(|need| {
            permissions.iter().any(|(group, resource, verb)| {
                need.group == group
                    && need.resource == resource
                    && need.verbs.contains(&verb.as_str())
            })
        })
        .map(|need| need.source)
        .collect()
}

/// What `rules` grant, as triples. Rules this check cannot express as triples fail:
/// wildcards (they grant more than any list), `resourceNames` (the operator creates and
/// lists, which names cannot restrict) and `nonResourceURLs` (never needed).
pub fn granted(rules: &[PolicyRule], what: &str) -> BTreeSet<Permission> {
    let mut granted = BTreeSet::new();
    for (index, rule) in rules.iter().enumerate() {
        assert!(
            rule.resource_names.as_ref().is_none_or(Vec::is_empty),
            "{what}: rule {index} restricts resourceNames"
        );
        assert!(
            rule.non_resource_urls.as_ref().is_none_or(Vec::is_empty),
            "{what}: rule {index} grants nonResourceURLs"
        );
        let groups = rule.api_groups.clone().unwrap_or_default();
        let resources = rule.resources.clone().unwrap_or_default();
        for field in [&groups, &resources, &rule.verbs] {
            assert!(
                !field.iter().any(|value| value.contains('*')),
                "{what}: rule {index} uses a wildcard"
            );
        }
        for group in &groups {
            for resource in &resources {
                for verb in &rule.verbs {
                    granted.insert((group.clone(), resource.clone(), verb.clone()));
                }
            }
        }
    }
    granted
}

/// The kube `Api` write methods, the RBAC verb each needs, and the parameter type that
/// tells a kube call from a same-named method of another type.
const WRITE_METHODS: &[(&str, &str, &str)] = &[
    ("create", "create", "PostParams"),
    ("replace", "update", "PostParams"),
    ("replace_status", "update", "PostParams"),
    ("patch", "patch", "PatchParams"),
    ("patch_status", "patch", "PatchParams"),
    ("delete", "delete", "DeleteParams"),
    ("delete_collection", "deletecollection", "DeleteParams"),
    ("evict", "create", "EvictParams"),
];

/// The call text from an opening parenthesis to its match (strings are not special:
/// good enough for argument lists of kube calls).
fn call_arguments(text: &str) -> &str {
    let mut depth = 0usize;
    for (index, character) in text.char_indices() {
        match character {
            '(' => depth += 1,
            ')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return &text[..=index];
                }
            }
            _ => {}
        }
    }
    text
}

/// The RBAC verbs of the kube write calls in `source` (one file's text).
pub fn write_verbs_in(source: &str) -> BTreeSet<&'static str> {
    let mut verbs = BTreeSet::new();
    for (method, verb, params) in WRITE_METHODS {
        let needle = format!(".{method}(");
        for (start, _) in source.match_indices(&needle) {
            let arguments = call_arguments(&source[start + needle.len() - 1..]);
            if arguments.contains(params) {
                verbs.insert(*verb);
            }
        }
    }
    verbs
}

/// The write verbs of every `.rs` file under `dir`, with the files using each.
pub fn write_verbs_under(dir: &Path) -> Vec<(&'static str, String)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry
                .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
                .path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
                for verb in write_verbs_in(&text) {
                    found.push((verb, path.display().to_string()));
                }
            }
        }
    }
    found.sort();
    found
}
