//! Streaming SHA-256 of files with bounded memory and concurrency, and a small cache
//! keyed by the file's identity (device, inode, size, modification and change times).
//!
//! Every write the sidecar makes is a rename of a new file (new inode), and any in-place
//! write changes the change time, which no user can set back; a cached hash is therefore
//! only reused for an unchanged file.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

use crate::metrics::Metrics;

/// Read buffer size: one buffer per file being hashed.
const BUFFER_SIZE: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Fingerprint {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        }
    }
}

#[derive(Debug, Default)]
struct Cache {
    entries: HashMap<PathBuf, (Fingerprint, String)>,
    order: VecDeque<PathBuf>,
}

/// Why a file could not be hashed.
#[derive(Debug, thiserror::Error)]
pub enum HashError {
    /// The path is a directory or another non-regular file.
    #[error("not a regular file")]
    NotAFile,
    /// The file disappeared between resolution and opening.
    #[error("file not found")]
    NotFound,
    /// A read error.
    #[error("read error: {0}")]
    Io(#[source] io::Error),
}

/// Hashes files with at most `max_concurrent` reads at a time.
#[derive(Debug)]
pub struct FileHasher {
    permits: Semaphore,
    cache: Mutex<Cache>,
    capacity: usize,
    metrics: Arc<Metrics>,
}

impl FileHasher {
    /// A hasher with `max_concurrent` simultaneous hashes and a cache of `capacity`
    /// entries (0 disables caching).
    pub fn new(max_concurrent: usize, capacity: usize, metrics: Arc<Metrics>) -> Self {
        Self {
            permits: Semaphore::new(max_concurrent.max(1)),
            cache: Mutex::new(Cache::default()),
            capacity,
            metrics,
        }
    }

    /// Lowercase hex SHA-256 of the file at `path`.
    pub async fn hash(self: &Arc<Self>, path: PathBuf) -> Result<String, HashError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| HashError::Io(io::Error::other("hasher closed")))?;
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.hash_blocking(&path))
            .await
            .map_err(|e| HashError::Io(io::Error::other(e)))?
    }

    fn hash_blocking(&self, path: &Path) -> Result<String, HashError> {
        let file = open_regular_file(path)?;
        let meta = file.metadata().map_err(HashError::Io)?;
        if !meta.is_file() {
            return Err(HashError::NotAFile);
        }
        let fingerprint = Fingerprint::of(&meta);
        if let Some(hash) = self.cached(path, fingerprint) {
            self.metrics.hash_cache_hits.inc();
            return Ok(hash);
        }
        let started = Instant::now();
        let hash = sha256_reader(file).map_err(HashError::Io)?;
        self.metrics
            .hash_seconds
            .observe(started.elapsed().as_secs_f64());
        // Only remember the hash if the file did not change while it was read.
        if std::fs::metadata(path).is_ok_and(|m| Fingerprint::of(&m) == fingerprint) {
            self.remember(path, fingerprint, &hash);
        }
        Ok(hash)
    }

    fn cached(&self, path: &Path, fingerprint: Fingerprint) -> Option<String> {
        let cache = self.cache.lock().ok()?;
        match cache.entries.get(path) {
            Some((fp, hash)) if *fp == fingerprint => Some(hash.clone()),
            _ => None,
        }
    }

    fn remember(&self, path: &Path, fingerprint: Fingerprint, hash: &str) {
        if self.capacity == 0 {
            return;
        }
        let Ok(mut cache) = self.cache.lock() else {
            return;
        };
        if cache
            .entries
            .insert(path.to_owned(), (fingerprint, hash.to_owned()))
            .is_none()
        {
            cache.order.push_back(path.to_owned());
        }
        while cache.entries.len() > self.capacity {
            match cache.order.pop_front() {
                Some(oldest) => {
                    cache.entries.remove(&oldest);
                }
                None => break,
            }
        }
    }
}

/// Opens `path` for reading only if it is a regular file.
///
/// Opening a FIFO for reading blocks until a writer appears (forever, for a stray FIFO in
/// the output dir), and a device may block or never end: check the type first, and open
/// with `O_NONBLOCK` so that a file swapped for a FIFO after the check cannot block
/// either (the caller checks the type of the opened file again). `O_NONBLOCK` has no
/// effect on reads of regular files.
fn open_regular_file(path: &Path) -> Result<File, HashError> {
    let classify = |e: io::Error| match e.kind() {
        io::ErrorKind::NotFound => HashError::NotFound,
        io::ErrorKind::IsADirectory => HashError::NotAFile,
        _ => HashError::Io(e),
    };
    // `path` is already canonical (paths::resolve), so following symlinks here cannot
    // leave the output dir.
    let meta = std::fs::metadata(path).map_err(classify)?;
    if !meta.is_file() {
        return Err(HashError::NotAFile);
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(classify)
}

/// SHA-256 of everything `reader` yields, read in bounded chunks.
pub fn sha256_reader(mut reader: impl Read) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; BUFFER_SIZE];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buffer[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hasher(capacity: usize) -> Arc<FileHasher> {
        Arc::new(FileHasher::new(2, capacity, Arc::new(Metrics::new())))
    }

    #[tokio::test]
    async fn hashes_match_sha256_and_cache_sees_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "abc").unwrap();
        let h = hasher(4);
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(h.hash(path.clone()).await.unwrap(), abc);
        assert_eq!(h.hash(path.clone()).await.unwrap(), abc);
        assert_eq!(h.metrics.hash_cache_hits.get(), 1);
        std::fs::write(&path, "abd").unwrap();
        assert_ne!(h.hash(path.clone()).await.unwrap(), abc);
    }

    #[tokio::test]
    async fn directories_and_missing_files_are_distinguished() {
        let dir = tempfile::tempdir().unwrap();
        let h = hasher(0);
        assert!(matches!(
            h.hash(dir.path().to_owned()).await,
            Err(HashError::NotAFile)
        ));
        assert!(matches!(
            h.hash(dir.path().join("x")).await,
            Err(HashError::NotFound)
        ));
    }

    #[test]
    fn fifos_are_refused_without_opening_them() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        // On a plain thread, so that a regression fails the test instead of hanging it.
        let (sender, receiver) = std::sync::mpsc::channel();
        let h = hasher(0);
        std::thread::spawn(move || sender.send(h.hash_blocking(&fifo)));
        let result = receiver
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("hashing a FIFO must not block");
        assert!(matches!(result, Err(HashError::NotAFile)), "{result:?}");
    }

    #[test]
    fn cache_is_bounded() {
        let h = hasher(2);
        let fp = Fingerprint {
            dev: 1,
            ino: 1,
            size: 1,
            mtime_ns: 1,
            ctime_ns: 1,
        };
        for name in ["a", "b", "c"] {
            h.remember(Path::new(name), fp, name);
        }
        assert!(h.cached(Path::new("a"), fp).is_none());
        assert_eq!(h.cached(Path::new("c"), fp).as_deref(), Some("c"));
    }
}
