//! Tests of the install manifests (images/operator/install/) against the operator's code,
//! its command line and the image's Dockerfile.

// Test-only crate: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod manifests;
mod monitor_rbac;
mod rbac;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clap::{CommandFactory, FromArgMatches};
use fdb_operator::cli::run::RunArgs;
use fdb_operator_cli::{Cli, Command};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use manifests::{DockerfileFacts, Install, OPERATOR_NAMESPACE, read_repo_file, repo_file};
use rbac::{Permission, required};

const CLUSTER_WIDE: &str = "images/operator/install/fdb-operator.yaml";
const NAMESPACED: &str = "images/operator/install/namespaced/fdb-operator.yaml";
/// The watched namespace of the namespaced variant, and its marker for `sed`.
const WATCHED: &str = "fdb # WATCHED";

/// Variables the container may set besides those `fdb-operator run` reads.
const OTHER_ENV: &[&str] = &["RUST_LOG"];

fn both_variants() -> [Install; 2] {
    [Install::load(CLUSTER_WIDE), Install::load(NAMESPACED)]
}

fn describe(set: &BTreeSet<Permission>) -> Vec<String> {
    set.iter()
        .map(|(group, resource, verb)| format!("{verb} {resource}.{group}"))
        .collect()
}

/// Checks that `install` grants its service account exactly [`rbac::REQUIRED`], in the
/// scope the operator watches (`None`: all namespaces).
fn assert_exact_rbac(install: &Install, watched: Option<&str>) {
    let file = &install.file;
    // A namespaced install grants what is cluster-scoped with a second, ClusterRole.
    let roles = if watched.is_some() { 2 } else { 1 };
    assert_eq!(install.grants.len(), roles, "{file}: roles");
    assert_eq!(install.bindings.len(), roles, "{file}: bindings");
    let (grant, binding) = (&install.grants[0], &install.bindings[0]);
    let (role_kind, binding_kind) = match watched {
        None => ("ClusterRole", "ClusterRoleBinding"),
        Some(_) => ("Role", "RoleBinding"),
    };
    assert_eq!(grant.kind, role_kind, "{file}");
    assert_eq!(binding.kind, binding_kind, "{file}");
    assert_eq!(
        grant.namespace.as_deref(),
        watched,
        "{file}: role namespace"
    );
    assert_eq!(
        binding.namespace.as_deref(),
        watched,
        "{file}: binding namespace"
    );
    assert_eq!(binding.role_ref.api_group, "rbac.authorization.k8s.io");
    assert_eq!(binding.role_ref.kind, grant.kind, "{file}: roleRef kind");
    assert_eq!(binding.role_ref.name, grant.name, "{file}: roleRef name");

    let granted = rbac::granted(&grant.rules, file);
    let mut required = required();
    match watched {
        None => required.extend(rbac::cluster_scoped()),
        Some(_) => assert_cluster_scoped_grant(install),
    }
    let missing: BTreeSet<_> = required.difference(&granted).cloned().collect();
    let extra: BTreeSet<_> = granted.difference(&required).cloned().collect();
    assert!(
        missing.is_empty(),
        "{file}: the operator needs {:?} (used by: {:?})",
        describe(&missing),
        rbac::sources_of(&missing)
    );
    assert!(
        extra.is_empty(),
        "{file}: grants more than the operator uses: {:?}",
        describe(&extra)
    );
}

/// The namespaced install's ClusterRole: exactly [`rbac::CLUSTER_SCOPED`], bound to the
/// same service account as its Role.
fn assert_cluster_scoped_grant(install: &Install) {
    let file = &install.file;
    let (grant, binding) = (&install.grants[1], &install.bindings[1]);
    assert_eq!(grant.kind, "ClusterRole", "{file}");
    assert_eq!(binding.kind, "ClusterRoleBinding", "{file}");
    assert_eq!(binding.role_ref.kind, "ClusterRole", "{file}");
    assert_eq!(binding.role_ref.name, grant.name, "{file}: roleRef name");
    assert_eq!(binding.subjects, install.bindings[0].subjects, "{file}");
    assert_eq!(
        rbac::granted(&grant.rules, file),
        rbac::cluster_scoped(),
        "{file}: the ClusterRole grants exactly the cluster-scoped reads"
    );
}

#[test]
fn cluster_wide_install_grants_exactly_what_the_operator_uses() {
    let install = Install::load(CLUSTER_WIDE);
    assert_exact_rbac(&install, None);
    assert_eq!(install.env("WATCH_NAMESPACE"), None);
    assert_eq!(effective_run_args(&install).namespace, None);
}

#[test]
fn namespaced_install_grants_exactly_what_the_operator_uses_where_it_watches() {
    let install = Install::load(NAMESPACED);
    assert_exact_rbac(&install, Some("fdb"));
    assert_eq!(
        effective_run_args(&install).namespace.as_deref(),
        Some("fdb")
    );
}

#[test]
fn the_documented_namespace_substitution_keeps_the_namespaced_install_consistent() {
    // The file's header tells users: sed 's/fdb # WATCHED/my-ns # WATCHED/'.
    let text = read_repo_file(NAMESPACED);
    assert!(
        text.contains("sed 's/fdb # WATCHED/my-ns # WATCHED/'"),
        "{NAMESPACED}: the documented substitution changed; update this test"
    );
    let (header, body) = text.split_at(text.find("apiVersion:").unwrap());
    assert_eq!(
        body.matches(WATCHED).count(),
        3,
        "{NAMESPACED}: three marked values"
    );
    let replaced = format!("{header}{}", body.replace(WATCHED, "my-ns # WATCHED"));
    let install = Install::parse(&replaced, "namespaced install for my-ns");
    assert_exact_rbac(&install, Some("my-ns"));
    assert_eq!(
        effective_run_args(&install).namespace.as_deref(),
        Some("my-ns")
    );
}

#[test]
fn the_variants_differ_only_in_rbac_and_watch_namespace() {
    let [cluster_wide, namespaced] = both_variants();
    assert_eq!(cluster_wide.namespaces, namespaced.namespaces);
    assert_eq!(cluster_wide.service_accounts, namespaced.service_accounts);
    assert_eq!(cluster_wide.services, namespaced.services);
    let mut without_watch = namespaced.deployment().clone();
    let container = &mut without_watch
        .spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap()
        .containers[0];
    container
        .env
        .as_mut()
        .unwrap()
        .retain(|var| var.name != "WATCH_NAMESPACE");
    assert_eq!(cluster_wide.deployment(), &without_watch);
}

#[test]
fn objects_live_in_the_operator_namespace_which_is_created_first() {
    for install in both_variants() {
        let file = &install.file;
        assert_eq!(
            install.kinds.first().map(String::as_str),
            Some("Namespace"),
            "{file}"
        );
        assert_eq!(install.namespaces.len(), 1, "{file}");
        assert_eq!(
            install.namespaces[0].metadata.name.as_deref(),
            Some(OPERATOR_NAMESPACE)
        );
        let namespaces = install
            .service_accounts
            .iter()
            .map(|o| &o.metadata)
            .chain(install.deployments.iter().map(|o| &o.metadata))
            .chain(install.services.iter().map(|o| &o.metadata))
            .map(|meta| meta.namespace.as_deref());
        for namespace in namespaces {
            assert_eq!(namespace, Some(OPERATOR_NAMESPACE), "{file}");
        }
    }
}

#[test]
fn the_binding_names_the_deployments_service_account() {
    for install in both_variants() {
        let file = &install.file;
        let pod = install
            .deployment()
            .spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap();
        let account = pod
            .service_account_name
            .as_deref()
            .expect("serviceAccountName");
        assert_ne!(pod.automount_service_account_token, Some(false), "{file}");
        assert_eq!(install.service_accounts.len(), 1, "{file}");
        let defined = &install.service_accounts[0].metadata;
        assert_eq!(defined.name.as_deref(), Some(account), "{file}");
        let subjects = &install.bindings[0].subjects;
        assert_eq!(subjects.len(), 1, "{file}");
        assert_eq!(subjects[0].kind, "ServiceAccount", "{file}");
        assert_eq!(subjects[0].name, account, "{file}");
        assert_eq!(
            subjects[0].namespace.as_deref(),
            Some(OPERATOR_NAMESPACE),
            "{file}"
        );
    }
}

/// The `run` arguments the container gets: its args, then each variable of its env that
/// a `run` flag reads (`env = ...`) added as that flag unless the args set it (clap's
/// precedence), parsed by the real command line with environment lookup turned off so
/// the test's own environment cannot leak in.
fn effective_run_args(install: &Install) -> RunArgs {
    let file = &install.file;
    let container = install.container();
    let args = container.args.clone().unwrap_or_default();
    assert_eq!(
        args.first().map(String::as_str),
        Some("run"),
        "{file}: args start with run"
    );
    let run = Cli::command();
    let run = run.find_subcommand("run").unwrap();
    let env_flags: BTreeMap<String, String> = run
        .get_arguments()
        .filter_map(|arg| {
            let variable = arg.get_env()?.to_str()?.to_owned();
            Some((variable, arg.get_long()?.to_owned()))
        })
        .collect();
    let mut argv = vec!["fdb-operator".to_owned()];
    argv.extend(args.iter().cloned());
    for var in container.env.iter().flatten() {
        match env_flags.get(&var.name) {
            Some(long) => {
                let given = args
                    .iter()
                    .any(|a| a == &format!("--{long}") || a.starts_with(&format!("--{long}=")));
                if !given {
                    argv.push(format!("--{long}={}", install.env(&var.name).unwrap()));
                }
            }
            None => assert!(
                OTHER_ENV.contains(&var.name.as_str()),
                "{file}: `fdb-operator run` does not read {}",
                var.name
            ),
        }
    }
    let command = Cli::command().mut_subcommand("run", |run| run.mut_args(|arg| arg.env(None)));
    let matches = command
        .try_get_matches_from(&argv)
        .unwrap_or_else(|e| panic!("{file}: `fdb-operator run` rejects {argv:?}: {e}"));
    match Cli::from_arg_matches(&matches).unwrap().command {
        Command::Run(run) => *run,
        other => panic!("{file}: not the run subcommand: {other:?}"),
    }
}

fn port_number(port: &IntOrString, container_port: (&str, i32), what: &str) -> i32 {
    match port {
        IntOrString::Int(number) => *number,
        IntOrString::String(name) => {
            assert_eq!(name, container_port.0, "{what}: names an unknown port");
            container_port.1
        }
    }
}

#[test]
fn the_deployment_runs_run_with_flags_its_command_line_accepts() {
    for install in both_variants() {
        let file = &install.file;
        let run = effective_run_args(&install);
        let container = install.container();
        let dockerfile = DockerfileFacts::load();
        // No command: the image's ENTRYPOINT (the binary) runs.
        assert!(
            container.command.is_none() || container.command == Some(dockerfile.entrypoint.clone()),
            "{file}: command overrides the image's entrypoint"
        );

        // Metrics: the port the flag binds is the container's `metrics` port, which the
        // probes and the Service use.
        let ports = container.ports.as_deref().unwrap_or_default();
        let metrics = ports
            .iter()
            .find(|p| p.name.as_deref() == Some("metrics"))
            .unwrap_or_else(|| panic!("{file}: no port named metrics"));
        assert_eq!(
            i32::from(run.metrics_address.port()),
            metrics.container_port,
            "{file}: --metrics-address and the metrics port"
        );
        assert!(
            run.metrics_address.ip().is_unspecified(),
            "{file}: metrics on all addresses"
        );
        let named = ("metrics", metrics.container_port);
        for (what, probe) in [
            ("liveness", container.liveness_probe.as_ref()),
            ("readiness", container.readiness_probe.as_ref()),
        ] {
            let probe = probe.unwrap_or_else(|| panic!("{file}: no {what} probe"));
            let port = match (&probe.http_get, &probe.tcp_socket) {
                (Some(http), None) => {
                    // production.rs serves /healthz for liveness, /readyz for readiness.
                    let wanted = if what == "liveness" {
                        "/healthz"
                    } else {
                        "/readyz"
                    };
                    assert_eq!(http.path.as_deref(), Some(wanted), "{file}: {what} path");
                    &http.port
                }
                (None, Some(tcp)) => &tcp.port,
                _ => panic!("{file}: the {what} probe must be HTTP or TCP"),
            };
            assert_eq!(
                port_number(port, named, what),
                metrics.container_port,
                "{file}: {what}"
            );
        }
        assert_eq!(install.services.len(), 1, "{file}");
        let service = install.services[0].spec.as_ref().unwrap();
        let pod_labels = install
            .deployment()
            .spec
            .as_ref()
            .unwrap()
            .template
            .metadata
            .as_ref();
        let pod_labels = pod_labels
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        for (key, value) in service.selector.iter().flatten() {
            assert_eq!(
                pod_labels.get(key),
                Some(value),
                "{file}: the Service selects the pod"
            );
        }
        let service_port = &service.ports.as_deref().unwrap()[0];
        let target = service_port
            .target_port
            .clone()
            .unwrap_or(IntOrString::Int(service_port.port));
        assert_eq!(
            port_number(&target, named, "Service"),
            metrics.container_port,
            "{file}"
        );

        // The tools of each minor version are where the image puts them, and the
        // operator's connections carry the log group the client check ignores.
        assert!(
            dockerfile
                .runtime_base
                .starts_with("foundationdb/foundationdb:")
        );
        assert_eq!(run.fdbcli, None, "{file}: --fdbcli would pin one version");
        assert_eq!(
            dockerfile.env.get("FDB_BINARY_DIR").map(PathBuf::from),
            Some(run.fdb_binaries_dir.clone()),
            "{file}: --fdb-binaries-dir"
        );
        for minor in ["7.1", "7.3", "7.4"] {
            let copied = format!("/usr/bin/fdbrestore /usr/bin/fdb/{minor}/");
            assert!(
                dockerfile.text.contains(&copied),
                "the image holds the {minor} tools"
            );
        }
        assert_eq!(
            dockerfile
                .env
                .get("FDB_NETWORK_OPTION_TRACE_LOG_GROUP")
                .map(String::as_str),
            Some("fdb-kubernetes-operator")
        );
        assert!(run.sidecar_ca_file.is_none() && run.sidecar_client_certificate.is_none());

        // The work dir must be writable: on a volume when the root filesystem is read-only.
        let security = container.security_context.as_ref().unwrap();
        if security.read_only_root_filesystem == Some(true) {
            let mounted = container.volume_mounts.iter().flatten().any(|mount| {
                mount.read_only != Some(true)
                    && run.work_dir.starts_with(Path::new(&mount.mount_path))
            });
            assert!(
                mounted,
                "{file}: --work-dir {} is on the read-only root",
                run.work_dir.display()
            );
        }
        assert_eq!(security.allow_privilege_escalation, Some(false), "{file}");
    }
}

#[test]
fn one_replica_replaced_by_recreate() {
    // No leader election: two operators must never reconcile at once.
    for install in both_variants() {
        let spec = install.deployment().spec.as_ref().unwrap();
        assert_eq!(spec.replicas, Some(1), "{}", install.file);
        let strategy = spec.strategy.as_ref().and_then(|s| s.type_.as_deref());
        assert_eq!(strategy, Some("Recreate"), "{}", install.file);
    }
}

#[test]
fn the_image_is_the_one_the_dockerfile_documents() {
    let dockerfile = DockerfileFacts::load();
    let (_, tag) = dockerfile
        .image
        .rsplit_once(':')
        .expect("the documented image has a tag");
    assert_eq!(
        tag,
        env!("CARGO_PKG_VERSION"),
        "the image tag is the operator's version"
    );
    assert_eq!(dockerfile.entrypoint, ["/usr/bin/fdb-operator"]);
    assert_eq!(dockerfile.cmd, ["run"]);
    let (user, group) = dockerfile.user.split_once(':').expect("USER uid:gid");
    for install in both_variants() {
        let file = &install.file;
        assert_eq!(
            install.container().image.as_deref(),
            Some(dockerfile.image.as_str()),
            "{file}"
        );
        let pod = install
            .deployment()
            .spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap();
        let security = pod.security_context.as_ref().unwrap();
        assert_eq!(security.run_as_non_root, Some(true), "{file}");
        assert_eq!(
            security.run_as_user.map(|u| u.to_string()).as_deref(),
            Some(user),
            "{file}"
        );
        assert_eq!(
            security.run_as_group.map(|g| g.to_string()).as_deref(),
            Some(group),
            "{file}"
        );
    }
}

#[test]
fn controller_write_calls_match_the_required_list() {
    let mut used = rbac::write_verbs_under(&repo_file("operator/src/controller"));
    used.extend(rbac::write_verbs_under(&repo_file("operator/src/backup")));
    used.extend(rbac::write_verbs_under(&repo_file("operator/src/restore")));
    let used_verbs: BTreeSet<&str> = used.iter().map(|(verb, _)| *verb).collect();
    // Events are written inside kube's Recorder, not by a call in the controller.
    let listed: BTreeSet<&str> = rbac::REQUIRED
        .iter()
        .filter(|need| need.group != "events.k8s.io")
        .flat_map(|need| need.verbs.iter().copied())
        .filter(|verb| !["get", "list", "watch"].contains(verb))
        .collect();
    for (verb, file) in &used {
        assert!(
            listed.contains(verb),
            "{file} calls the API with verb {verb}, which tests/install/rbac.rs REQUIRED \
             (and so the install RBAC) lacks"
        );
    }
    for verb in &listed {
        assert!(
            used_verbs.contains(verb),
            "REQUIRED lists {verb}, but no controller code calls it: drop it from REQUIRED and the install RBAC"
        );
    }
}

#[test]
fn write_verb_scan_tells_kube_calls_from_other_methods() {
    let source = "api.delete(&name, &DeleteParams::default()).await;\n\
                  name.replace('_', \"-\");\n\
                  api\n    .patch_status(\n        &name,\n        &PatchParams::default(),\n        &p)";
    assert_eq!(
        rbac::write_verbs_in(source),
        BTreeSet::from(["delete", "patch"])
    );
}

#[test]
fn the_required_cluster_resource_is_the_crd_with_a_status_subresource() {
    let text = read_repo_file("crds/foundationdb-crds.yaml");
    let crd = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| <serde_yaml_ng::Value as serde::Deserialize>::deserialize(doc).unwrap())
        .find(|doc| doc["spec"]["names"]["kind"].as_str() == Some("FoundationDBCluster"))
        .expect("the FoundationDBCluster CRD");
    let group = crd["spec"]["group"].as_str().unwrap();
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap();
    let required = required();
    assert!(required.contains(&(group.into(), plural.into(), "watch".into())));
    assert!(required.contains(&(group.into(), format!("{plural}/status"), "patch".into())));
    let versions = crd["spec"]["versions"].as_sequence().unwrap();
    assert!(
        versions
            .iter()
            .any(|v| v["storage"].as_bool() == Some(true) && !v["subresources"]["status"].is_null()),
        "the stored version has a status subresource"
    );
}

#[test]
fn the_install_readme_uses_server_side_apply_for_the_crds() {
    let readme = read_repo_file("images/operator/install/README.md");
    assert!(readme.contains("kubectl apply --server-side -f crds/foundationdb-crds.yaml"));
    assert!(readme.contains("kubectl apply -f images/operator/install/fdb-operator.yaml"));
    let dockerfile = DockerfileFacts::load();
    assert!(
        readme.contains(&dockerfile.image),
        "the README names the image"
    );
}
