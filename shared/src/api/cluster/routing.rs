//! `spec.routing`: how processes are addressed (IPs, services, DNS names).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::open_enum::open_string_enum;

/// The DNS domain of the Kubernetes cluster when `routing.dnsDomain` is not set.
pub const DEFAULT_DNS_DOMAIN: &str = "cluster.local";

open_string_enum! {
    /// Where a process's public IP comes from.
    PublicIpSource {
        /// The pod IP (the default).
        Pod => "pod",
        /// The IP of a per-process-group Service.
        Service => "service",
    }
}

/// `spec.routing`: addressing of the processes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoutingConfig {
    /// Whether a headless Service named like the cluster is created (default: the value
    /// of `useDNSInClusterFile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headless_service: Option<bool>,
    /// Source of the processes' public IPs: `pod` (default) or `service`.
    #[serde(
        default,
        rename = "publicIPSource",
        skip_serializing_if = "Option::is_none"
    )]
    pub public_ip_source: Option<PublicIpSource>,
    /// IP family of the pod IP to use (4 or 6) on dual-stack pods; 0 is unset, as in
    /// the Go operator (`PodIPFamilyUnset`). Read it through [`Self::chosen_pod_ip_family`].
    #[serde(
        default,
        rename = "podIPFamily",
        skip_serializing_if = "Option::is_none"
    )]
    pub pod_ip_family: Option<i32>,
    /// Whether coordinators appear in the cluster file as DNS names
    /// `<pod>.<cluster>.<namespace>.svc.<dnsDomain>` instead of IPs (default true).
    #[serde(
        default,
        rename = "useDNSInClusterFile",
        skip_serializing_if = "Option::is_none"
    )]
    pub use_dns_in_cluster_file: Option<bool>,
    /// Whether processes get the `locality_dns_name` locality (default: the value of
    /// `useDNSInClusterFile`).
    #[serde(
        default,
        rename = "defineDNSLocalityFields",
        skip_serializing_if = "Option::is_none"
    )]
    pub define_dns_locality_fields: Option<bool>,
    /// DNS domain of the Kubernetes cluster (default `cluster.local`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub dns_domain: Option<String>,
}

impl RoutingConfig {
    /// Whether the cluster file uses DNS names (default true).
    pub fn use_dns_in_cluster_file(&self) -> bool {
        self.use_dns_in_cluster_file.unwrap_or(true)
    }

    /// Whether DNS locality fields are defined (default: DNS in the cluster file).
    pub fn define_dns_locality_fields(&self) -> bool {
        self.define_dns_locality_fields
            .unwrap_or_else(|| self.use_dns_in_cluster_file())
    }

    /// Whether the headless Service is created (default: DNS in the cluster file; DNS
    /// names need the Service, so it is always on when they are used).
    pub fn headless_service(&self) -> bool {
        self.use_dns_in_cluster_file() || self.headless_service.unwrap_or(false)
    }

    /// Source of public IPs (default `pod`).
    pub fn public_ip_source(&self) -> PublicIpSource {
        self.public_ip_source.clone().unwrap_or(PublicIpSource::Pod)
    }

    /// The IP family pods are made for, if one is chosen: `podIPFamily` 4 or 6. Absent
    /// and 0 (the Go operator's `PodIPFamilyUnset`, which its `GetPodIPFamily` returns for
    /// an absent field too) choose none: the pods use `status.podIP`.
    pub fn chosen_pod_ip_family(&self) -> Option<i32> {
        self.pod_ip_family.filter(|family| *family != 0)
    }

    /// DNS domain (default `cluster.local`).
    pub fn dns_domain(&self) -> &str {
        self.dns_domain.as_deref().unwrap_or(DEFAULT_DNS_DOMAIN)
    }
}
