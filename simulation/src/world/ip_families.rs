//! `world.ipFamilies`: the address families the pod network offers, and each pod's
//! addresses in them.
//!
//! A pod holds one *slot*, its IPv4 address `127.<pod block>.y.z` (what the sidecars'
//! host addresses are derived from, in `network.rs`). What Kubernetes shows depends on
//! the families: the slot itself for IPv4, `fd00::<pod block>:y:z` for IPv6, in the
//! order of the families. A dual-stack cluster lists the pod's IPs in `status.podIPs`
//! with the primary family (the first of the cluster CIDRs) first and repeats that first
//! one in `status.podIP` (Kubernetes' `pkg/kubelet/kubelet_pods.go`, `generateAPIPodStatus`
//! sorting the sandbox IPs by the node's primary family); IPv6 addresses are written in
//! the canonical compressed form of RFC 5952, as Go's `net.IP.String` prints them.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The first 16 bits of the pods' IPv6 addresses (a unique local address block).
const IPV6_PREFIX: u16 = 0xfd00;

/// One address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpFamily {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

impl IpFamily {
    /// The family of `number` (`4` or `6`, as `routing.podIPFamily` writes it).
    pub fn from_number(number: i64) -> Option<Self> {
        match number {
            4 => Some(Self::V4),
            6 => Some(Self::V6),
            _ => None,
        }
    }

    /// Whether `ip` is of this family.
    pub fn holds(self, ip: IpAddr) -> bool {
        matches!(
            (self, ip),
            (Self::V4, IpAddr::V4(_)) | (Self::V6, IpAddr::V6(_))
        )
    }
}

impl fmt::Display for IpFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::V4 => "IPv4",
            Self::V6 => "IPv6",
        })
    }
}

/// The families the pod network offers, primary first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IpFamilies {
    /// IPv4 only (the default).
    #[default]
    V4,
    /// IPv6 only.
    V6,
    /// Dual-stack, IPv4 primary.
    V4V6,
    /// Dual-stack, IPv6 primary.
    V6V4,
}

impl IpFamilies {
    /// The families `world.ipFamilies` lists (`[4]`, `[6]`, `[4, 6]`, `[6, 4]`); an
    /// error naming what is wrong otherwise.
    pub fn from_numbers(numbers: &[i64]) -> Result<Self, String> {
        match numbers {
            [4] => Ok(Self::V4),
            [6] => Ok(Self::V6),
            [4, 6] => Ok(Self::V4V6),
            [6, 4] => Ok(Self::V6V4),
            [] => Err("must list at least one family (4 or 6)".to_owned()),
            other => Err(format!(
                "{other:?} is not a set of IP families: one of 4 and 6, or both once each"
            )),
        }
    }

    /// The families, primary first.
    pub fn list(self) -> &'static [IpFamily] {
        match self {
            Self::V4 => &[IpFamily::V4],
            Self::V6 => &[IpFamily::V6],
            Self::V4V6 => &[IpFamily::V4, IpFamily::V6],
            Self::V6V4 => &[IpFamily::V6, IpFamily::V4],
        }
    }

    /// Whether the network offers `family`.
    pub fn offers(self, family: IpFamily) -> bool {
        self.list().contains(&family)
    }

    /// The addresses of the pod in `slot`, primary first (`status.podIPs`).
    pub fn addresses(self, slot: Ipv4Addr) -> Vec<IpAddr> {
        self.list()
            .iter()
            .map(|family| match family {
                IpFamily::V4 => IpAddr::V4(slot),
                IpFamily::V6 => IpAddr::V6(ipv6_of_slot(slot)),
            })
            .collect()
    }

    /// The pod's primary address (`status.podIP`).
    pub fn primary(self, slot: Ipv4Addr) -> IpAddr {
        match self.list().first() {
            Some(IpFamily::V6) => IpAddr::V6(ipv6_of_slot(slot)),
            _ => IpAddr::V4(slot),
        }
    }

    /// The addresses as the downward API gives `status.podIPs` to an environment
    /// variable: comma-separated, primary first.
    pub fn env_list(self, slot: Ipv4Addr) -> String {
        self.addresses(slot)
            .iter()
            .map(IpAddr::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The IPv6 address of the pod in `slot` `127.b.y.z`: `fd00::b:y:z`.
pub fn ipv6_of_slot(slot: Ipv4Addr) -> Ipv6Addr {
    let [_, b, y, z] = slot.octets();
    Ipv6Addr::new(IPV6_PREFIX, 0, 0, 0, 0, b.into(), y.into(), z.into())
}

/// The slot of a pod IPv6 address in `pod_block` (the inverse of [`ipv6_of_slot`]).
pub fn slot_of_ipv6(ip: Ipv6Addr, pod_block: u8) -> Option<Ipv4Addr> {
    let [prefix, 0, 0, 0, 0, b, y, z] = ip.segments() else {
        return None;
    };
    let small = |segment: u16| u8::try_from(segment).ok();
    (prefix == IPV6_PREFIX && small(b)? == pod_block)
        .then(|| Some(Ipv4Addr::new(127, pod_block, small(y)?, small(z)?)))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dual_stack_lists_the_primary_family_first_in_canonical_form() {
        let slot = Ipv4Addr::new(127, 0, 1, 12);
        assert_eq!(IpFamilies::V4.env_list(slot), "127.0.1.12");
        assert_eq!(IpFamilies::V4V6.env_list(slot), "127.0.1.12,fd00::1:c");
        assert_eq!(IpFamilies::V6V4.env_list(slot), "fd00::1:c,127.0.1.12");
        assert_eq!(IpFamilies::V6.primary(slot).to_string(), "fd00::1:c");
        let in_block = Ipv4Addr::new(127, 3, 2, 1);
        assert_eq!(ipv6_of_slot(in_block).to_string(), "fd00::3:2:1");
        assert_eq!(slot_of_ipv6(ipv6_of_slot(in_block), 3), Some(in_block));
        assert_eq!(slot_of_ipv6(ipv6_of_slot(in_block), 4), None);
        assert_eq!(slot_of_ipv6("::1".parse().unwrap(), 0), None);
    }

    #[test]
    fn families_are_parsed_as_the_scenario_writes_them() {
        assert_eq!(IpFamilies::from_numbers(&[4, 6]), Ok(IpFamilies::V4V6));
        assert_eq!(IpFamilies::from_numbers(&[6]), Ok(IpFamilies::V6));
        assert!(IpFamilies::from_numbers(&[]).is_err());
        assert!(IpFamilies::from_numbers(&[4, 4]).is_err());
        assert!(IpFamilies::from_numbers(&[5]).is_err());
        assert!(IpFamilies::V4V6.offers(IpFamily::V6));
        assert!(!IpFamilies::V4.offers(IpFamily::V6));
    }
}
