//! The pod network of one world, and what keeps two worlds on one machine apart.
//!
//! Pods get IPs `127.<pod block>.y.z`: that is what Kubernetes shows (`status.podIP`),
//! what the sidecar substitutes into the monitor conf and what FoundationDB processes use
//! as their addresses. The sidecars really listen in the *host block*:
//! `127.<host block>.y.z:8080`, where `y.z` are the pod IP's. With
//! [`HostBlock::PodIps`] the two blocks are the same (a pod is reached at its pod IP);
//! the scenario runner instead keeps the pod block fixed (so a run's result does not
//! depend on where it ran) and lets each run pick a free host block, reaching sidecars
//! through [`NetworkMap::host_ip`].
//!
//! A host block is held through an exclusive lock on `<temp dir>/fdb-sim-ip-blocks/<n>.lock`
//! ([`std::fs::File::try_lock`]) for the world's life: no other world on the machine (in
//! this process or another) uses it meanwhile. The lock goes with the process if it dies.
//! Runs with different temporary directories (`TMPDIR`) do not see each other's locks.

use std::fs::{File, OpenOptions, TryLockError};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;
use std::time::Duration;

use super::error::WorldError;
use super::ip_families::{IpFamilies, slot_of_ipv6};

/// The directory (under the temporary directory) holding one lock file per block.
pub const LOCK_DIR_NAME: &str = "fdb-sim-ip-blocks";
/// The blocks [`HostBlock::Free`] chooses from, in order.
pub const FREE_BLOCKS: std::ops::RangeInclusive<u8> = 1..=255;
/// How long the check for a foreign listener waits for an answer.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// Where a world's sidecars listen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostBlock {
    /// On the pod IPs themselves (the host block is the pod block).
    #[default]
    PodIps,
    /// In this block; an error when another world holds it.
    Fixed(u8),
    /// In the first block of [`FREE_BLOCKS`] that no other world holds.
    Free,
}

/// How pod IPs map to the host addresses the sidecars listen on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkMap {
    pod_block: u8,
    host_block: u8,
    families: IpFamilies,
}

impl NetworkMap {
    /// The map from `127.<pod_block>.y.z` to `127.<host_block>.y.z`.
    pub fn new(pod_block: u8, host_block: u8) -> Self {
        Self {
            pod_block,
            host_block,
            families: IpFamilies::V4,
        }
    }

    /// The same map for a pod network offering `families` (`world.ipFamilies`).
    pub fn with_families(mut self, families: IpFamilies) -> Self {
        self.families = families;
        self
    }

    /// The address families the pod network offers.
    pub fn families(&self) -> IpFamilies {
        self.families
    }

    /// The second octet of the pod IPs.
    pub fn pod_block(&self) -> u8 {
        self.pod_block
    }

    /// The second octet of the addresses the sidecars listen on.
    pub fn host_block(&self) -> u8 {
        self.host_block
    }

    /// Where a pod IP is really served: `127.<pod block>.y.z` and its IPv6 twin
    /// `fd00::<pod block>:y:z` ([`super::ip_families`]) become `127.<host block>.y.z`
    /// (the sidecars listen on loopback IPv4 whatever the families); any other address
    /// is returned unchanged.
    pub fn host_ip(&self, pod_ip: IpAddr) -> IpAddr {
        match pod_ip {
            IpAddr::V4(v4) => IpAddr::V4(self.host_ipv4(v4)),
            IpAddr::V6(v6) => match slot_of_ipv6(v6, self.pod_block) {
                Some(slot) => IpAddr::V4(self.host_ipv4(slot)),
                None => pod_ip,
            },
        }
    }

    /// [`NetworkMap::host_ip`] for an IPv4 address.
    pub fn host_ipv4(&self, pod_ip: Ipv4Addr) -> Ipv4Addr {
        let [a, b, y, z] = pod_ip.octets();
        if a == 127 && b == self.pod_block {
            Ipv4Addr::new(127, self.host_block, y, z)
        } else {
            pod_ip
        }
    }
}

/// A host block held for a world's life (the lock is released when this is dropped).
#[derive(Debug)]
pub struct BlockLease {
    block: u8,
    path: PathBuf,
    _file: File,
}

impl BlockLease {
    /// Takes the block `choice` names (`pod_block` for [`HostBlock::PodIps`]).
    pub fn acquire(choice: HostBlock, pod_block: u8) -> Result<Self, WorldError> {
        let dir = lock_dir()?;
        match choice {
            HostBlock::PodIps => Self::take(&dir, pod_block),
            HostBlock::Fixed(block) => Self::take(&dir, block),
            HostBlock::Free => {
                for block in FREE_BLOCKS {
                    match Self::take(&dir, block) {
                        Ok(lease) => return Ok(lease),
                        Err(WorldError::BlockInUse { .. }) => continue,
                        Err(other) => return Err(other),
                    }
                }
                Err(WorldError::NoFreeBlock { dir })
            }
        }
    }

    /// The block held.
    pub fn block(&self) -> u8 {
        self.block
    }

    /// The lock file.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    fn take(dir: &std::path::Path, block: u8) -> Result<Self, WorldError> {
        let path = dir.join(format!("{block}.lock"));
        let file = open_lock_file(&path)?;
        match file.try_lock() {
            Ok(()) => Ok(Self {
                block,
                path,
                _file: file,
            }),
            Err(TryLockError::WouldBlock) => Err(WorldError::BlockInUse { block, path }),
            Err(TryLockError::Error(source)) => Err(WorldError::Io {
                action: "lock",
                path,
                source,
            }),
        }
    }
}

/// The lock directory, created world-writable (like `/tmp`) so that every user's runs
/// share it.
fn lock_dir() -> Result<PathBuf, WorldError> {
    let dir = std::env::temp_dir().join(LOCK_DIR_NAME);
    if !dir.is_dir() {
        std::fs::create_dir_all(&dir).map_err(WorldError::io("create directory", &dir))?;
        // Best effort: another user may have created it meanwhile.
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777));
    }
    Ok(dir)
}

fn open_lock_file(path: &std::path::Path) -> Result<File, WorldError> {
    let created = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o666)
        .open(path);
    match created {
        Ok(file) => Ok(file),
        // Another user's lock file: a read-only handle locks just as well.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            File::open(path).map_err(|source| WorldError::Io {
                action: "open lock file",
                path: path.to_owned(),
                source,
            })
        }
        Err(source) => Err(WorldError::Io {
            action: "open lock file",
            path: path.to_owned(),
            source,
        }),
    }
}

/// Whether something already accepts connections at `address` (a process that is not
/// one of this world's sidecars, since the world only probes addresses it does not serve).
pub async fn something_answers(address: SocketAddr) -> bool {
    matches!(
        tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect(address)).await,
        Ok(Ok(_))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_ips_map_into_the_host_block() {
        let map = NetworkMap::new(0, 42);
        assert_eq!(
            map.host_ip("127.0.3.4".parse().unwrap()),
            "127.42.3.4".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            map.host_ip("10.96.0.10".parse().unwrap()),
            "10.96.0.10".parse::<IpAddr>().unwrap(),
            "service IPs and others are left alone"
        );
        assert_eq!(
            map.host_ip("127.5.3.4".parse().unwrap()),
            "127.5.3.4".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            map.host_ip("fd00::3:4".parse().unwrap()),
            "127.42.3.4".parse::<IpAddr>().unwrap(),
            "a pod's IPv6 address is served at its slot's host address"
        );
    }

    /// A block from the top of the range, where runs picking a free block (from the
    /// bottom) do not go.
    fn high_block() -> BlockLease {
        (120..=199)
            .rev()
            .find_map(|block| BlockLease::acquire(HostBlock::Fixed(block), 0).ok())
            .unwrap()
    }

    #[test]
    fn a_block_is_held_by_one_lease_at_a_time() {
        let first = high_block();
        let block = first.block();
        let taken = BlockLease::acquire(HostBlock::Fixed(block), 0).unwrap_err();
        assert!(
            matches!(&taken, WorldError::BlockInUse { block: b, .. } if *b == block),
            "{taken}"
        );
        assert!(taken.to_string().contains(&format!("127.{block}.0.0/16")));
        let free = BlockLease::acquire(HostBlock::Free, 0).unwrap();
        assert_ne!(free.block(), block);
        drop(first);
        let again = BlockLease::acquire(HostBlock::Fixed(block), 0).unwrap();
        assert_eq!(again.block(), block);
    }
}
