//! The operator's side of the sidecar protocol: endpoint paths and bodies, and an HTTP
//! client for one sidecar per pod.

pub mod client;
pub mod peer_rules;
pub mod protocol;

pub use client::{
    SidecarApi, SidecarClient, SidecarClientError, SidecarClientFactory, SidecarClientSettings,
    SidecarClientTls,
};
