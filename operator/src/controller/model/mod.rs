//! The desired Kubernetes objects of a cluster: the pod model, process groups, the
//! `<cluster>-config` ConfigMap and process configuration, what a difference between live
//! and desired objects asks for, and the quantities and template policies they use.

pub mod config_map;
pub mod config_map_error;
pub mod desired;
pub mod desired_memo;
pub mod pod;
pub mod pod_template_policy;
pub mod process_config;
pub mod process_groups;
pub mod quantity;
pub mod replace_only;
