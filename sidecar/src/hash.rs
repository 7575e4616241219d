//! Streaming SHA-256 of files with bounded memory and concurrency, and a small cache
//! keyed by the file's identity (device, inode, size, modification and change times).
//!
//! Every write the sidecar makes is a rename of a new file (new inode), and any in-place
//! write changes the change time, which no user can set back; a cached hash is therefore
//! only reused for an unchanged file.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

use crate::metrics::Metrics;
use crate::paths::{self, PathError};

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
    /// The path is refused, missing or not a regular file.
    #[error(transparent)]
    Path(#[from] PathError),
    /// A read error on an existing file.
    #[error("Cannot read {rel}")]
    Read {
        /// The relative path.
        rel: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The blocking task failed (panicked or was cancelled).
    #[error("hashing task failed: {0}")]
    Task(String),
}

/// What the lookup found: a cached hash, or an open file to hash.
enum Lookup {
    Cached(String),
    Miss {
        file: File,
        fingerprint: Fingerprint,
        path: PathBuf,
        rel: String,
    },
}

/// Hashes files with at most `max_concurrent` reads at a time.
///
/// A request first resolves and opens the file and checks the cache (bounded by
/// [`MAX_LOOKUPS`] blocking tasks); only a cache miss queues for one of the hashing
/// permits, so a cached `fdb.cluster` never waits behind large uncached files.
#[derive(Debug)]
pub struct FileHasher {
    permits: Semaphore,
    lookups: Semaphore,
    cache: Mutex<Cache>,
    capacity: usize,
    metrics: Arc<Metrics>,
}

/// Most lookups (path resolution, open, cache check; also `is_present`) running on the
/// blocking pool at a time: they are short, but on a hung volume each would hold a
/// thread, so they are bounded too.
pub const MAX_LOOKUPS: usize = 8;

impl FileHasher {
    /// A hasher with `max_concurrent` simultaneous hashes and a cache of `capacity`
    /// entries (0 disables caching).
    pub fn new(max_concurrent: usize, capacity: usize, metrics: Arc<Metrics>) -> Self {
        Self {
            permits: Semaphore::new(max_concurrent.max(1)),
            lookups: Semaphore::new(MAX_LOOKUPS),
            cache: Mutex::new(Cache::default()),
            capacity,
            metrics,
        }
    }

    /// Lowercase hex SHA-256 of the regular file `raw_rel` (percent-encoded, as in the
    /// request URI) inside `output_dir`.
    pub async fn hash(
        self: &Arc<Self>,
        output_dir: PathBuf,
        raw_rel: String,
    ) -> Result<String, HashError> {
        let this = self.clone();
        let lookup = self
            .blocking_lookup(move || this.lookup(&output_dir, &raw_rel))
            .await??;
        let (file, fingerprint, path, rel) = match lookup {
            Lookup::Cached(hash) => return Ok(hash),
            Lookup::Miss {
                file,
                fingerprint,
                path,
                rel,
            } => (file, fingerprint, path, rel),
        };
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| HashError::Task(e.to_string()))?;
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.compute(&file, fingerprint, &path, rel))
            .await
            .map_err(|e| HashError::Task(e.to_string()))?
    }

    /// Checks that `raw_rel` inside `output_dir` is a regular file (`is_present`), with
    /// the same lookup capacity as hashes; returns the decoded relative path.
    pub async fn check_present(
        &self,
        output_dir: PathBuf,
        raw_rel: String,
    ) -> Result<String, HashError> {
        Ok(self
            .blocking_lookup(move || paths::check_regular(&output_dir, &raw_rel))
            .await??)
    }

    /// Runs a lookup on the blocking pool, at most [`MAX_LOOKUPS`] at a time.
    async fn blocking_lookup<T: Send + 'static>(
        &self,
        lookup: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, HashError> {
        let _permit = self
            .lookups
            .acquire()
            .await
            .map_err(|e| HashError::Task(e.to_string()))?;
        tokio::task::spawn_blocking(lookup)
            .await
            .map_err(|e| HashError::Task(e.to_string()))
    }

    fn lookup(&self, output_dir: &Path, raw_rel: &str) -> Result<Lookup, HashError> {
        let opened = paths::open_regular(output_dir, raw_rel)?;
        let meta = opened.file.metadata().map_err(|source| HashError::Read {
            rel: opened.rel.clone(),
            source,
        })?;
        let fingerprint = Fingerprint::of(&meta);
        if let Some(hash) = self.cached(&opened.path, fingerprint) {
            self.metrics.hash_cache_hits.inc();
            return Ok(Lookup::Cached(hash));
        }
        Ok(Lookup::Miss {
            file: opened.file,
            fingerprint,
            path: opened.path,
            rel: opened.rel,
        })
    }

    /// Hashes the file from the handle that was checked (never reopened by name).
    fn compute(
        &self,
        file: &File,
        fingerprint: Fingerprint,
        path: &Path,
        rel: String,
    ) -> Result<String, HashError> {
        let started = Instant::now();
        let hash = sha256_reader(file).map_err(|source| HashError::Read { rel, source })?;
        self.metrics
            .hash_seconds
            .observe(started.elapsed().as_secs_f64());
        // Only remember the hash if the file did not change while it was read.
        if file
            .metadata()
            .is_ok_and(|m| Fingerprint::of(&m) == fingerprint)
        {
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
    use std::time::Duration;

    fn hasher(capacity: usize) -> Arc<FileHasher> {
        Arc::new(FileHasher::new(2, capacity, Arc::new(Metrics::new())))
    }

    async fn hash(h: &Arc<FileHasher>, dir: &Path, rel: &str) -> Result<String, HashError> {
        h.hash(dir.to_owned(), rel.to_owned()).await
    }

    #[tokio::test]
    async fn hashes_match_sha256_and_cache_sees_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "abc").unwrap();
        let h = hasher(4);
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(hash(&h, dir.path(), "f").await.unwrap(), abc);
        assert_eq!(hash(&h, dir.path(), "f").await.unwrap(), abc);
        assert_eq!(h.metrics.hash_cache_hits.get(), 1);
        std::fs::write(&path, "abd").unwrap();
        assert_ne!(hash(&h, dir.path(), "f").await.unwrap(), abc);
    }

    #[tokio::test]
    async fn directories_and_missing_files_are_distinguished() {
        let dir = tempfile::tempdir().unwrap();
        let h = hasher(0);
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        for rel in [".", "sub"] {
            assert!(
                matches!(
                    hash(&h, dir.path(), rel).await,
                    Err(HashError::Path(PathError::NotAFile { .. }))
                ),
                "{rel}"
            );
        }
        assert!(matches!(
            hash(&h, dir.path(), "x").await,
            Err(HashError::Path(PathError::NotFound { .. }))
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
        let out = dir.path().to_owned();
        std::thread::spawn(move || sender.send(h.lookup(&out, "pipe").map(|_| ())));
        let result = receiver
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("hashing a FIFO must not block");
        assert!(
            matches!(result, Err(HashError::Path(PathError::NotAFile { .. }))),
            "{result:?}"
        );
    }

    #[tokio::test]
    async fn cached_hashes_do_not_wait_behind_uncached_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("fdb.cluster"), "abc").unwrap();
        std::fs::write(dir.path().join("big"), "big").unwrap();
        let h = hasher(4);
        let expected = hash(&h, dir.path(), "fdb.cluster").await.unwrap();
        // All hashing capacity taken, as by several huge uncached files.
        let busy = h.permits.acquire_many(2).await.unwrap();
        let answer =
            tokio::time::timeout(Duration::from_secs(5), hash(&h, dir.path(), "fdb.cluster"))
                .await
                .expect("a cached hash must not queue behind uncached ones");
        assert_eq!(answer.unwrap(), expected);
        // An uncached hash does wait for capacity, and gets it once freed.
        let pending = tokio::spawn({
            let h = h.clone();
            let dir = dir.path().to_owned();
            async move { hash(&h, &dir, "big").await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!pending.is_finished());
        drop(busy);
        let answer = tokio::time::timeout(Duration::from_secs(10), pending)
            .await
            .expect("the uncached hash completes once capacity is free");
        assert_eq!(
            answer.unwrap().unwrap(),
            sha256_reader(&b"big"[..]).unwrap()
        );
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
