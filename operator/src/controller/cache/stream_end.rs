//! The end of a kind's watch stream, as its progress shows it.

use tokio::sync::watch;

use super::Applied;

/// Marks its kind's progress ended when the watch stream holding it is dropped (a
/// controller's graceful stop ends its watches before its running reconciles): a pass
/// waiting for its writes to show then reads with a LIST at once instead of waiting out
/// its bound for events that never come.
pub(super) struct EndOnDrop(pub(super) watch::Sender<Applied>);

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        self.0.send_modify(|applied| applied.ended = true);
    }
}
