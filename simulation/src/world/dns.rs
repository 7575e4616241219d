//! Cluster DNS: `<hostname>.<subdomain>.<namespace>.svc.cluster.local` resolves to the
//! pod's IP when the pod sets `spec.hostname` and `spec.subdomain` and a headless Service
//! named like the subdomain exists in the pod's namespace.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, PoisonError, RwLock};

/// The cluster's DNS zone.
pub const CLUSTER_DOMAIN: &str = "cluster.local";

/// A resolver closure for the simulated FoundationDB (DNS names in connection strings).
pub type Resolver = Arc<dyn Fn(&str) -> Option<IpAddr> + Send + Sync>;

/// A pod as DNS sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsPod {
    /// Namespace.
    pub namespace: String,
    /// `spec.hostname`.
    pub hostname: String,
    /// `spec.subdomain`.
    pub subdomain: String,
    /// The pod IP.
    pub ip: IpAddr,
}

/// The cluster DNS records. Cheap to clone; clones see the same (updated) records.
#[derive(Debug, Clone, Default)]
pub struct ClusterDns {
    records: Arc<RwLock<BTreeMap<String, IpAddr>>>,
}

impl ClusterDns {
    /// An empty zone.
    pub fn new() -> Self {
        Self::default()
    }

    /// Rebuilds the records from the pods that have an IP and the headless services
    /// (`(namespace, name)`) that exist. Returns whether anything changed.
    pub fn rebuild(&self, pods: &[DnsPod], headless_services: &[(String, String)]) -> bool {
        let mut records = BTreeMap::new();
        for pod in pods {
            let governed = headless_services
                .iter()
                .any(|(ns, name)| *ns == pod.namespace && *name == pod.subdomain);
            if !governed || pod.hostname.is_empty() || pod.subdomain.is_empty() {
                continue;
            }
            let name = format!(
                "{}.{}.{}.svc.{CLUSTER_DOMAIN}",
                pod.hostname, pod.subdomain, pod.namespace
            );
            records.insert(name, pod.ip);
        }
        let mut current = self.records.write().unwrap_or_else(PoisonError::into_inner);
        let changed = *current != records;
        *current = records;
        changed
    }

    /// The address of `host` (case-insensitive, an absolute name's trailing dot allowed);
    /// an IP literal resolves to itself.
    pub fn resolve(&self, host: &str) -> Option<IpAddr> {
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Some(ip);
        }
        let name = host.trim_end_matches('.').to_ascii_lowercase();
        self.records
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&name)
            .copied()
    }

    /// Every record, name to address.
    pub fn records(&self) -> BTreeMap<String, IpAddr> {
        self.records
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A resolver closure sharing these records.
    pub fn resolver(&self) -> Resolver {
        let dns = self.clone();
        Arc::new(move |host: &str| dns.resolve(host))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(hostname: &str, subdomain: &str, ip: &str) -> DnsPod {
        DnsPod {
            namespace: "default".into(),
            hostname: hostname.into(),
            subdomain: subdomain.into(),
            ip: ip.parse().unwrap(),
        }
    }

    #[test]
    fn names_resolve_only_under_an_existing_headless_service() {
        let dns = ClusterDns::new();
        let pods = [
            pod("sample-storage-1", "sample", "127.0.1.1"),
            pod("other-1", "other", "127.0.1.2"),
        ];
        assert!(dns.rebuild(&pods, &[("default".into(), "sample".into())]));
        let resolver = dns.resolver();
        assert_eq!(
            resolver("sample-storage-1.sample.default.svc.cluster.local."),
            Some("127.0.1.1".parse().unwrap())
        );
        assert_eq!(resolver("other-1.other.default.svc.cluster.local"), None);
        assert_eq!(resolver("127.0.9.9"), Some("127.0.9.9".parse().unwrap()));
        assert!(!dns.rebuild(&pods, &[("default".into(), "sample".into())]));
        dns.rebuild(&pods, &[]);
        assert_eq!(
            resolver("sample-storage-1.sample.default.svc.cluster.local"),
            None
        );
    }
}
