//! `spec.processCounts` and `spec.processes`: how many processes of each class, and how
//! their pods, volumes and command lines look.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodTemplateSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::process_class::{ALL_PROCESS_CLASSES, ProcessClass};

/// The key of `spec.processes` whose settings apply to every class without its own entry.
pub const GENERAL_PROCESS_SETTINGS: &str = "general";

/// `spec.processCounts`: desired number of process groups per class.
///
/// 0 (or unset) means "the default for this class" (see the derived values), -1 means
/// "none of this class". Keys are FoundationDB's snake_case class names.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ProcessCounts {
    /// Storage processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<i32>,
    /// Log processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<i32>,
    /// Transaction-class processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction: Option<i32>,
    /// Stateless processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stateless: Option<i32>,
    /// Dedicated cluster controller processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_controller: Option<i32>,
    /// Dedicated master processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master: Option<i32>,
    /// Dedicated resolver processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<i32>,
    /// Proxy processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<i32>,
    /// Commit proxy processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_proxy: Option<i32>,
    /// GRV proxy processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grv_proxy: Option<i32>,
    /// Ratekeeper processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratekeeper: Option<i32>,
    /// Data distributor processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_distributor: Option<i32>,
    /// Coordinator-only processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinator: Option<i32>,
    /// Backup agent processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<i32>,
    /// Fast restore processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_restore: Option<i32>,
    /// Log router processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<i32>,
    /// Storage cache processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_cache: Option<i32>,
    /// Test processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<i32>,
    /// Tester processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tester: Option<i32>,
    /// Processes without a class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unset: Option<i32>,
}

impl ProcessCounts {
    fn slot(&self, class: ProcessClass) -> &Option<i32> {
        match class {
            ProcessClass::Storage => &self.storage,
            ProcessClass::Log => &self.log,
            ProcessClass::Transaction => &self.transaction,
            ProcessClass::Stateless => &self.stateless,
            ProcessClass::ClusterController => &self.cluster_controller,
            ProcessClass::Master => &self.master,
            ProcessClass::Resolution => &self.resolution,
            ProcessClass::Proxy => &self.proxy,
            ProcessClass::CommitProxy => &self.commit_proxy,
            ProcessClass::GrvProxy => &self.grv_proxy,
            ProcessClass::Ratekeeper => &self.ratekeeper,
            ProcessClass::DataDistributor => &self.data_distributor,
            ProcessClass::Coordinator => &self.coordinator,
            ProcessClass::Backup => &self.backup,
            ProcessClass::FastRestore => &self.fast_restore,
            ProcessClass::Router => &self.router,
            ProcessClass::StorageCache => &self.storage_cache,
            ProcessClass::Test => &self.test,
            ProcessClass::Tester => &self.tester,
            ProcessClass::Unset => &self.unset,
        }
    }

    fn slot_mut(&mut self, class: ProcessClass) -> &mut Option<i32> {
        match class {
            ProcessClass::Storage => &mut self.storage,
            ProcessClass::Log => &mut self.log,
            ProcessClass::Transaction => &mut self.transaction,
            ProcessClass::Stateless => &mut self.stateless,
            ProcessClass::ClusterController => &mut self.cluster_controller,
            ProcessClass::Master => &mut self.master,
            ProcessClass::Resolution => &mut self.resolution,
            ProcessClass::Proxy => &mut self.proxy,
            ProcessClass::CommitProxy => &mut self.commit_proxy,
            ProcessClass::GrvProxy => &mut self.grv_proxy,
            ProcessClass::Ratekeeper => &mut self.ratekeeper,
            ProcessClass::DataDistributor => &mut self.data_distributor,
            ProcessClass::Coordinator => &mut self.coordinator,
            ProcessClass::Backup => &mut self.backup,
            ProcessClass::FastRestore => &mut self.fast_restore,
            ProcessClass::Router => &mut self.router,
            ProcessClass::StorageCache => &mut self.storage_cache,
            ProcessClass::Test => &mut self.test,
            ProcessClass::Tester => &mut self.tester,
            ProcessClass::Unset => &mut self.unset,
        }
    }

    /// The count as written in the spec (0 when unset; -1 means none).
    pub fn get(&self, class: ProcessClass) -> i32 {
        self.slot(class).unwrap_or(0)
    }

    /// Sets the count of a class.
    pub fn set(&mut self, class: ProcessClass, count: i32) {
        *self.slot_mut(class) = Some(count);
    }

    /// Every class with the count written in the spec, unset classes left out.
    pub fn explicit(&self) -> impl Iterator<Item = (ProcessClass, i32)> + '_ {
        ALL_PROCESS_CLASSES
            .into_iter()
            .filter_map(|class| self.slot(class).map(|count| (class, count)))
    }
}

/// Settings for the processes of one class (or of every class, under `general`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessSettings {
    /// Template of the pods; the operator adds its containers, volumes and environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplateSpec>,
    /// Template of the data volume claims of stateful classes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        schema_with = "crate::api::embedded_schema::metadata_optional::<Option<PersistentVolumeClaim>>"
    )]
    pub volume_claim_template: Option<PersistentVolumeClaim>,
    /// Extra `key=value` lines for the fdbserver sections of the monitor conf, e.g.
    /// `knob_disable_posix_kernel_aio=1`. At most 100 of at most 100 characters (the Go
    /// operator's CRD limits).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100), inner(length(max = 100)))]
    pub custom_parameters: Vec<String>,
}

/// `spec.processes`: settings per class name, or `general` for all classes.
pub type ProcessSettingsMap = BTreeMap<String, ProcessSettings>;

/// The settings that apply to a class: its own entry, field by field falling back to the
/// `general` entry.
pub fn settings_for_class(processes: &ProcessSettingsMap, class: ProcessClass) -> ProcessSettings {
    let own = processes.get(class.as_str());
    let general = processes.get(GENERAL_PROCESS_SETTINGS);
    let pick = |field: fn(&ProcessSettings) -> bool| -> Option<&ProcessSettings> {
        own.filter(|settings| field(settings))
            .or_else(|| general.filter(|settings| field(settings)))
    };
    ProcessSettings {
        pod_template: pick(|s| s.pod_template.is_some()).and_then(|s| s.pod_template.clone()),
        volume_claim_template: pick(|s| s.volume_claim_template.is_some())
            .and_then(|s| s.volume_claim_template.clone()),
        custom_parameters: pick(|s| !s.custom_parameters.is_empty())
            .map(|s| s.custom_parameters.clone())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_get_set_and_list_explicit_values() {
        let mut counts: ProcessCounts =
            serde_json::from_str(r#"{"storage": 4, "cluster_controller": 1, "log": -1}"#).unwrap();
        assert_eq!(counts.get(ProcessClass::Storage), 4);
        assert_eq!(counts.get(ProcessClass::Stateless), 0);
        counts.set(ProcessClass::Stateless, 7);
        let explicit: Vec<_> = counts.explicit().collect();
        assert_eq!(
            explicit,
            [
                (ProcessClass::Storage, 4),
                (ProcessClass::Log, -1),
                (ProcessClass::Stateless, 7),
                (ProcessClass::ClusterController, 1)
            ]
        );
    }

    #[test]
    fn class_settings_fall_back_to_general_per_field() {
        let processes: ProcessSettingsMap = serde_json::from_str(
            r#"{"general": {"customParameters": ["knob_a=1"], "podTemplate": {}},
                "storage": {"customParameters": ["knob_b=2"]}}"#,
        )
        .unwrap();
        let storage = settings_for_class(&processes, ProcessClass::Storage);
        assert_eq!(storage.custom_parameters, ["knob_b=2"]);
        assert!(storage.pod_template.is_some());
        let log = settings_for_class(&processes, ProcessClass::Log);
        assert_eq!(log.custom_parameters, ["knob_a=1"]);
    }
}
