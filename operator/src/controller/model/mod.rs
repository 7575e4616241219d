//! The desired Kubernetes objects of a cluster: the pod model, process groups, the
//! `<cluster>-config` ConfigMap and process configuration, what a difference between live
//! and desired objects asks for, and the quantities and template policies they use.

pub(crate) mod config_map;
pub(crate) mod config_map_error;
pub(crate) mod desired;
pub(crate) mod desired_memo;
pub(crate) mod pod;
pub(crate) mod pod_template_policy;
pub(crate) mod process_config;
pub(crate) mod process_groups;
pub(crate) mod quantity;
pub(crate) mod replace_only;
