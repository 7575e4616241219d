//! File watching with notify: re-run copies when the kubelet swaps the ConfigMap
//! (`--watch-input`), and reload certificates when a secret is rotated.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::app::AppState;
use crate::copy;

/// Wait after the first change event before acting, so that the several events of one
/// swap (or one secret rotation) lead to one action.
const DEBOUNCE: Duration = Duration::from_millis(150);

/// Running watchers; dropping this stops them.
#[derive(Debug, Default)]
pub struct Watchers {
    watchers: Vec<RecommendedWatcher>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Watchers {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        self.watchers.clear();
    }
}

/// Why a watch could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch {}", path.display())]
pub struct WatchError {
    /// The directory.
    pub path: PathBuf,
    /// The notify error.
    #[source]
    pub source: notify::Error,
}

/// Watches `dirs` (non-recursively); every change notifies the returned [`Notify`].
fn watch_dirs(dirs: &BTreeSet<PathBuf>) -> Result<(RecommendedWatcher, Arc<Notify>), WatchError> {
    let changed = Arc::new(Notify::new());
    let signal = changed.clone();
    let mut watcher =
        notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
            Ok(event) if matches!(event.kind, EventKind::Access(_)) => {}
            Ok(_) => signal.notify_one(),
            Err(e) => tracing::warn!(error = %e, "file watch error"),
        })
        .map_err(|source| WatchError {
            path: PathBuf::new(),
            source,
        })?;
    for dir in dirs {
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|source| WatchError {
                path: dir.clone(),
                source,
            })?;
    }
    Ok((watcher, changed))
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Starts the watchers the configuration asks for.
pub fn start(state: &AppState) -> Result<Watchers, WatchError> {
    let mut watchers = Watchers::default();
    if state.config.args.watch_input {
        let dirs = BTreeSet::from([state.config.args.input_dir.clone()]);
        let (watcher, changed) = watch_dirs(&dirs)?;
        watchers.watchers.push(watcher);
        let state = state.clone();
        watchers.tasks.push(tokio::spawn(async move {
            loop {
                changed.notified().await;
                tokio::time::sleep(DEBOUNCE).await;
                tracing::info!("input directory changed; copying files and monitor conf");
                // Failures are logged and counted by run_copy; the next change retries.
                if state.run_copy("copy_files", copy::copy_files).await.is_ok() {
                    let _ = state
                        .run_copy("copy_monitor_conf", copy::copy_monitor_conf)
                        .await;
                }
            }
        }));
    }
    if let Some(tls) = state.tls.clone() {
        let dirs = tls.watched_files().iter().map(|f| parent_dir(f)).collect();
        let (watcher, changed) = watch_dirs(&dirs)?;
        watchers.watchers.push(watcher);
        let metrics = state.metrics.clone();
        watchers.tasks.push(tokio::spawn(async move {
            loop {
                changed.notified().await;
                tokio::time::sleep(DEBOUNCE).await;
                let tls = tls.clone();
                let result = tokio::task::spawn_blocking(move || tls.reload()).await;
                match result {
                    Ok(Ok(())) => {
                        metrics.action("cert_reload", true);
                        tracing::info!("certificate files changed; reloaded");
                    }
                    Ok(Err(e)) => {
                        metrics.action("cert_reload", false);
                        tracing::warn!(error = %e, "certificate files changed but cannot be loaded; keeping the previous ones");
                    }
                    Err(e) => tracing::warn!(error = %e, "certificate reload task failed"),
                }
            }
        }));
    }
    Ok(watchers)
}
