//! The pods' network: the pod IPs handed out (`127.<ip block>.y.z`), the loopback block
//! the sidecars really listen in ([`network`](super::network)), and the cluster DNS over
//! the running pods.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;

use super::WorldError;
use super::dns::ClusterDns;
use super::ip_families::IpFamilies;
use super::network::{BlockLease, HostBlock, NetworkMap};

/// Pod IPs, where the sidecars listen, and the cluster DNS.
pub(super) struct PodNetwork {
    /// The loopback block held for the sidecars, for the world's life.
    lease: BlockLease,
    map: NetworkMap,
    /// Second octet of the pod IPs.
    ip_block: u8,
    /// Pod IPs handed out so far.
    next_ip: u32,
    /// Pod IPs handed out before the pods start (a snapshot's pods), by namespace/name.
    reserved: BTreeMap<(String, String), Ipv4Addr>,
    dns: ClusterDns,
}

impl PodNetwork {
    /// Pod IPs in `ip_block` (in `families`); the sidecars' block as `host_block` asks, held until the
    /// network is dropped.
    pub(super) fn new(
        host_block: HostBlock,
        ip_block: u8,
        families: IpFamilies,
    ) -> Result<Self, WorldError> {
        let lease = BlockLease::acquire(host_block, ip_block)?;
        let map = NetworkMap::new(ip_block, lease.block()).with_families(families);
        Ok(Self {
            lease,
            map,
            ip_block,
            next_ip: 0,
            reserved: BTreeMap::new(),
            dns: ClusterDns::new(),
        })
    }

    /// How pod IPs map to the host addresses the sidecars listen on.
    pub(super) fn map(&self) -> NetworkMap {
        self.map
    }

    /// The loopback block held for the sidecars, and its lock file.
    pub(super) fn host_block(&self) -> (u8, &Path) {
        (self.lease.block(), self.lease.path())
    }

    /// The next pod IP (`127.<pod block>.y.z`, `y >= 1`).
    pub(super) fn allocate_ip(&mut self) -> Ipv4Addr {
        let n = self.next_ip;
        self.next_ip += 1;
        let y = 1 + (n / 254) % 254;
        let z = 1 + n % 254;
        Ipv4Addr::new(127, self.ip_block, y as u8, z as u8)
    }

    /// Hands the pod `namespace/name` its IP before it starts (the same IP when asked
    /// again).
    pub(super) fn reserve_ip(&mut self, namespace: &str, name: &str) -> Ipv4Addr {
        let key = (namespace.to_owned(), name.to_owned());
        if let Some(ip) = self.reserved.get(&key) {
            return *ip;
        }
        let ip = self.allocate_ip();
        self.reserved.insert(key, ip);
        ip
    }

    /// The IP of a starting pod: the one reserved for it, else the next.
    pub(super) fn ip_for_start(&mut self, namespace: &str, name: &str) -> Ipv4Addr {
        let reserved = self
            .reserved
            .remove(&(namespace.to_owned(), name.to_owned()));
        reserved.unwrap_or_else(|| self.allocate_ip())
    }

    /// The cluster DNS.
    pub(super) fn dns(&self) -> &ClusterDns {
        &self.dns
    }

    /// The cluster DNS, to rebuild.
    pub(super) fn dns_mut(&mut self) -> &mut ClusterDns {
        &mut self.dns
    }
}
