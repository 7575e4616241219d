//! Reading the install YAML into typed Kubernetes objects, and the facts the Dockerfile
//! documents.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, Namespace, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use serde::de::DeserializeOwned;

/// The namespace the operator runs in.
pub const OPERATOR_NAMESPACE: &str = "fdb-operator-system";

/// A file of the repository.
pub fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// Reads a file of the repository.
pub fn read_repo_file(relative: &str) -> String {
    let path = repo_file(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// A Role or ClusterRole: where it applies (`None`: cluster-wide) and its rules.
#[derive(Debug, Clone)]
pub struct Grant {
    /// `Role` or `ClusterRole`.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// Its namespace (Roles only).
    pub namespace: Option<String>,
    /// Its rules.
    pub rules: Vec<PolicyRule>,
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Debug, Clone)]
pub struct Binding {
    /// `RoleBinding` or `ClusterRoleBinding`.
    pub kind: &'static str,
    /// Its namespace (RoleBindings only).
    pub namespace: Option<String>,
    /// The role it binds.
    pub role_ref: RoleRef,
    /// Who it binds it to.
    pub subjects: Vec<Subject>,
}

/// Every object of one install file, typed.
#[derive(Debug, Default)]
pub struct Install {
    /// The file, for messages.
    pub file: String,
    /// `kind` of each document, in file order.
    pub kinds: Vec<String>,
    /// Namespaces.
    pub namespaces: Vec<Namespace>,
    /// ServiceAccounts.
    pub service_accounts: Vec<ServiceAccount>,
    /// Roles and ClusterRoles.
    pub grants: Vec<Grant>,
    /// RoleBindings and ClusterRoleBindings.
    pub bindings: Vec<Binding>,
    /// Deployments.
    pub deployments: Vec<Deployment>,
    /// Services.
    pub services: Vec<Service>,
}

fn typed<T: DeserializeOwned>(value: serde_yaml_ng::Value, file: &str, index: usize) -> T {
    serde_yaml_ng::from_value(value)
        .unwrap_or_else(|e| panic!("{file}: document {index} is not a valid object: {e}"))
}

impl Install {
    /// Parses an install file of the repository.
    pub fn load(relative: &str) -> Self {
        Self::parse(&read_repo_file(relative), relative)
    }

    /// Parses the YAML stream `text` (named `file` in messages). Every document must be a
    /// kind the install uses; an unknown kind fails, so nothing goes unchecked.
    pub fn parse(text: &str, file: &str) -> Self {
        let mut install = Install {
            file: file.to_owned(),
            ..Install::default()
        };
        for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
            let value = <serde_yaml_ng::Value as serde::Deserialize>::deserialize(document)
                .unwrap_or_else(|e| panic!("{file}: document {index} is not YAML: {e}"));
            if value.is_null() {
                continue;
            }
            let kind = value
                .get("kind")
                .and_then(serde_yaml_ng::Value::as_str)
                .unwrap_or_else(|| panic!("{file}: document {index} has no kind"))
                .to_owned();
            match kind.as_str() {
                "Namespace" => install.namespaces.push(typed(value, file, index)),
                "ServiceAccount" => install.service_accounts.push(typed(value, file, index)),
                "ClusterRole" => {
                    let role: ClusterRole = typed(value, file, index);
                    assert!(
                        role.aggregation_rule.is_none(),
                        "{file}: aggregated ClusterRoles hide their rules"
                    );
                    install.grants.push(Grant {
                        kind: "ClusterRole",
                        name: role.metadata.name.unwrap_or_default(),
                        namespace: None,
                        rules: role.rules.unwrap_or_default(),
                    });
                }
                "Role" => {
                    let role: Role = typed(value, file, index);
                    install.grants.push(Grant {
                        kind: "Role",
                        name: role.metadata.name.unwrap_or_default(),
                        namespace: role.metadata.namespace,
                        rules: role.rules.unwrap_or_default(),
                    });
                }
                "ClusterRoleBinding" => {
                    let binding: ClusterRoleBinding = typed(value, file, index);
                    install.bindings.push(Binding {
                        kind: "ClusterRoleBinding",
                        namespace: None,
                        role_ref: binding.role_ref,
                        subjects: binding.subjects.unwrap_or_default(),
                    });
                }
                "RoleBinding" => {
                    let binding: RoleBinding = typed(value, file, index);
                    install.bindings.push(Binding {
                        kind: "RoleBinding",
                        namespace: binding.metadata.namespace,
                        role_ref: binding.role_ref,
                        subjects: binding.subjects.unwrap_or_default(),
                    });
                }
                "Deployment" => install.deployments.push(typed(value, file, index)),
                "Service" => install.services.push(typed(value, file, index)),
                other => panic!(
                    "{file}: document {index} has kind {other}, which the test does not check"
                ),
            }
            install.kinds.push(kind);
        }
        install
    }

    /// The one Deployment.
    pub fn deployment(&self) -> &Deployment {
        assert_eq!(self.deployments.len(), 1, "{}: one Deployment", self.file);
        &self.deployments[0]
    }

    /// The operator container of the one Deployment.
    pub fn container(&self) -> &Container {
        let containers = &self
            .deployment()
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .unwrap_or_else(|| panic!("{}: the Deployment has no pod spec", self.file))
            .containers;
        assert_eq!(containers.len(), 1, "{}: one container", self.file);
        &containers[0]
    }

    /// The value of environment variable `name` of the operator container.
    pub fn env(&self, name: &str) -> Option<String> {
        self.container()
            .env
            .iter()
            .flatten()
            .find(|var| var.name == name)
            .map(|var| {
                assert!(
                    var.value_from.is_none(),
                    "{}: {name} must be a literal value",
                    self.file
                );
                var.value.clone().unwrap_or_default()
            })
    }
}

/// Facts the Dockerfile states.
#[derive(Debug)]
pub struct DockerfileFacts {
    /// The image it documents (`-t IMAGE` in its build instructions).
    pub image: String,
    /// The base image of the last (runtime) stage.
    pub runtime_base: String,
    /// The last `USER`.
    pub user: String,
    /// The `ENTRYPOINT` (exec form).
    pub entrypoint: Vec<String>,
    /// The `CMD` (exec form).
    pub cmd: Vec<String>,
    /// The `ENV NAME=VALUE` settings.
    pub env: BTreeMap<String, String>,
    /// The whole text, for facts checked by content.
    pub text: String,
}

fn exec_form(line: &str, instruction: &str) -> Vec<String> {
    serde_json::from_str(line.trim())
        .unwrap_or_else(|e| panic!("Dockerfile: {instruction} must be in exec form: {e}"))
}

impl DockerfileFacts {
    /// Reads `images/operator/Dockerfile`.
    pub fn load() -> Self {
        Self::parse(&read_repo_file("images/operator/Dockerfile"))
    }

    /// Parses the Dockerfile text.
    pub fn parse(text: &str) -> Self {
        let images: BTreeSet<&str> = text
            .lines()
            .filter(|line| line.trim_start().starts_with('#'))
            .filter_map(|line| line.split_once(" -t "))
            .filter_map(|(_, rest)| rest.split_whitespace().next())
            .collect();
        assert_eq!(
            images.len(),
            1,
            "Dockerfile: the build instructions must document one image with -t"
        );
        let instruction = |name: &str| {
            text.lines()
                .filter_map(|line| line.strip_prefix(name))
                .filter_map(|rest| rest.strip_prefix(' '))
                .next_back()
                .unwrap_or_else(|| panic!("Dockerfile: no {name}"))
                .to_owned()
        };
        Self {
            image: images.into_iter().collect(),
            runtime_base: instruction("FROM"),
            user: instruction("USER"),
            entrypoint: exec_form(&instruction("ENTRYPOINT"), "ENTRYPOINT"),
            cmd: exec_form(&instruction("CMD"), "CMD"),
            env: text
                .lines()
                .filter_map(|line| line.strip_prefix("ENV "))
                .filter_map(|rest| rest.trim().split_once('='))
                .map(|(name, value)| (name.to_owned(), value.to_owned()))
                .collect(),
            text: text.to_owned(),
        }
    }
}
