//! The CRD schemas of the simulated API server: every create, update and patch of a
//! custom resource whose CRD the world serves (the three FoundationDB kinds, from
//! `fdb-operator crds`), `/status` included, goes through what apiextensions-apiserver
//! does to it (`pkg/registry/customresource/strategy.go`, `status_strategy.go`,
//! `validator.go`):
//!
//! 1. pruning of unknown fields ([`prune`]),
//! 2. dropping of non-nullable `null`s and defaulting ([`defaults`]),
//! 3. validation of the whole object against the schema ([`validate`]) and of list-type
//!    uniqueness ([`list_types`]), ratcheted on updates,
//!
//! and a refusal is the real `422 Invalid` ([`messages`]).
//!
//! Written here rather than taken from a JSON-schema crate: the work is in the Kubernetes
//! parts (pruning, defaulting, `nullable`, int-or-string, list types, ratcheting, the
//! exact messages and causes), which no general validator does.

pub mod defaults;
pub mod list_types;
pub mod messages;
pub mod prune;
pub mod structural;
pub mod validate;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::errors::ApiError;
use super::resources::ResourceType;
pub use messages::{ErrorType, FieldError};
pub use structural::{Schema, SchemaError};

/// One served version of a custom resource: its kind and schema.
#[derive(Debug, Clone)]
pub struct KindSchema {
    /// `group/version`.
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// The `openAPIV3Schema`.
    pub schema: Schema,
}

/// The schemas of the served CRDs, by group, version and plural.
#[derive(Debug, Clone, Default)]
pub struct CrdSchemas {
    by_resource: BTreeMap<(String, String, String), Arc<KindSchema>>,
}

impl CrdSchemas {
    /// The schemas of `crds` (CustomResourceDefinition objects as JSON), every version.
    pub fn from_crds<'a>(crds: impl IntoIterator<Item = &'a Value>) -> Result<Self, SchemaError> {
        let mut by_resource = BTreeMap::new();
        for crd in crds {
            let text = |pointer: &str| {
                crd.pointer(pointer)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let (group, plural, kind) = (
                text("/spec/group"),
                text("/spec/names/plural"),
                text("/spec/names/kind"),
            );
            let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
            for version in versions.into_iter().flatten() {
                let name = version
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let Some(node) = version.pointer("/schema/openAPIV3Schema") else {
                    continue;
                };
                let schema = Schema::from_json(node, &format!("{plural}.{group}/{name}"))?;
                by_resource.insert(
                    (group.clone(), name.to_owned(), plural.clone()),
                    Arc::new(KindSchema {
                        api_version: format!("{group}/{name}"),
                        kind: kind.clone(),
                        schema,
                    }),
                );
            }
        }
        Ok(Self { by_resource })
    }

    /// The schemas of the CRDs the world serves (`fdb-operator crds`), read once.
    pub fn served() -> Arc<Self> {
        static SERVED: OnceLock<Arc<CrdSchemas>> = OnceLock::new();
        SERVED
            .get_or_init(|| {
                let crds: Vec<Value> = fdb_shared::api::crd::crds()
                    .iter()
                    .filter_map(|crd| serde_json::to_value(crd).ok())
                    .collect();
                match Self::from_crds(&crds) {
                    Ok(schemas) => Arc::new(schemas),
                    Err(error) => {
                        // Covered by a test; a broken generated CRD must not take the
                        // world down, but it is loud.
                        tracing::error!(
                            error = %fdb_shared::error_chain::ErrorChain(&error),
                            "the served CRDs have an unusable schema"
                        );
                        Arc::new(Self::default())
                    }
                }
            })
            .clone()
    }

    /// The schema of `resource`, when it is a served custom resource.
    pub fn for_resource(&self, resource: &ResourceType) -> Option<&KindSchema> {
        self.by_resource
            .get(&(
                resource.group.clone(),
                resource.version.clone(),
                resource.plural.clone(),
            ))
            .map(Arc::as_ref)
    }

    /// The schema of the kind an object's `apiVersion` and `kind` name.
    pub fn for_kind(&self, api_version: &str, kind: &str) -> Option<&KindSchema> {
        self.by_resource
            .values()
            .find(|k| k.api_version == api_version && k.kind == kind)
            .map(Arc::as_ref)
    }

    /// The fields of a request body for `resource` that pruning would drop (none for
    /// kinds without a schema): what `fieldValidation=Strict` refuses.
    pub fn unknown_fields(&self, resource: &ResourceType, body: &Value) -> Vec<String> {
        let Some(kind) = self.for_resource(resource) else {
            return Vec::new();
        };
        let mut pruned = body.clone();
        prune::prune_object(&mut pruned, &kind.schema);
        let mut dropped = Vec::new();
        prune::dropped_fields(body, &pruned, "", &mut dropped);
        dropped
    }

    /// Prunes, defaults and validates `object` (a write of `resource` named `name`;
    /// `old` is the stored object on an update). Kinds without a schema pass unchanged.
    pub fn admit(
        &self,
        resource: &ResourceType,
        name: &str,
        object: &mut Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let Some(kind) = self.for_resource(resource) else {
            return Ok(());
        };
        let errors = check(&kind.schema, object, old);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid_fields(resource, name, &errors))
        }
    }
}

/// What the API server does to a custom resource on its way in: prunes and defaults
/// `object` in place, then returns what refuses it (ratcheted against `old` on an update).
pub fn check(schema: &Schema, object: &mut Value, old: Option<&Value>) -> Vec<FieldError> {
    prune::prune_object(object, schema);
    defaults::default_object(object, schema);
    let mut errors = Vec::new();
    validate::validate(schema, object, old, "", &mut errors);
    let mut duplicates = Vec::new();
    list_types::duplicates(schema, object, "", &mut duplicates);
    if !duplicates.is_empty() {
        let old_had_some = old.is_some_and(|old| {
            let mut before = Vec::new();
            list_types::duplicates(schema, old, "", &mut before);
            !before.is_empty()
        });
        if !old_had_some {
            errors.extend(duplicates);
        }
    }
    errors
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
