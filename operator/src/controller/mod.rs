//! The operator's controller: the desired Kubernetes objects of a cluster (pod model,
//! ConfigMap) and, as they are added, the reconciliation steps that apply them.

pub mod config_map;
pub mod pod_model;
