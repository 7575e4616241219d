//! The lifetime of a served watch, as a real API server gives it: closed after its
//! `timeoutSeconds` (or, without one, after a random 30 to 60 minutes: the server's
//! `--min-request-timeout` of 1800 s times 1 to 2, as
//! `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/get.go` of kubernetes/kubernetes
//! picks it), and with `allowWatchBookmarks=true` a `BOOKMARK` about every minute and
//! one 2 s before that deadline (`cacheWatcher.nextBookmarkTime` in
//! `staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go`, with the cacher's
//! one-minute `bookmarkFrequency`). Wall-clock time: only the served HTTP layer times
//! watches, so in-process runs stay reproducible.

use std::convert::Infallible;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures::{FutureExt as _, Stream, StreamExt as _};
use serde_json::json;
use tokio::time::Instant;

use crate::kube::FakeApiServer;

/// How often a watch that allows bookmarks gets one.
pub const BOOKMARK_FREQUENCY: Duration = Duration::from_secs(60);
/// How long before its deadline a watch gets its last bookmark.
pub const BOOKMARK_BEFORE_DEADLINE: Duration = Duration::from_secs(2);
/// The API server's default `--min-request-timeout`, in seconds.
pub const MIN_REQUEST_TIMEOUT_SECONDS: u64 = 1800;

/// What a bookmark names: the resource's kind and API version.
#[derive(Debug, Clone)]
pub struct BookmarkSource {
    /// The API server whose resourceVersion bookmarks carry.
    pub api: FakeApiServer,
    /// The watched resource's kind (`Pod`).
    pub kind: String,
    /// Its API version (`v1`, `apps.foundationdb.org/v1beta2`).
    pub api_version: String,
}

/// How long a watch lives: `timeoutSeconds` when given (0 counts as not given, as on a
/// real server), else a random time from the minimum request timeout to twice it.
pub fn lifetime(timeout_seconds: Option<&str>) -> Duration {
    match timeout_seconds.and_then(|t| t.parse::<u64>().ok()) {
        Some(seconds) if seconds > 0 => Duration::from_secs(seconds),
        _ => {
            let factor: f64 = rand::random::<f64>() + 1.0;
            Duration::from_secs_f64(MIN_REQUEST_TIMEOUT_SECONDS as f64 * factor)
        }
    }
}

type Events = Pin<Box<dyn Stream<Item = Result<Bytes, Infallible>> + Send>>;

struct State {
    events: Events,
    deadline: Instant,
    bookmarks: Option<BookmarkSource>,
    next_bookmark: Instant,
    done: bool,
}

/// `events` ended at `lifetime` from now, with bookmarks from `bookmarks` when given.
pub fn timed<S>(
    events: S,
    lifetime: Duration,
    bookmarks: Option<BookmarkSource>,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static
where
    S: Stream<Item = Result<Bytes, Infallible>> + Send + 'static,
{
    let now = Instant::now();
    let deadline = now + lifetime;
    let state = State {
        events: Box::pin(events),
        deadline,
        next_bookmark: next_bookmark(now, deadline),
        bookmarks,
        done: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        let wake = if state.bookmarks.is_some() {
            state.next_bookmark.min(state.deadline)
        } else {
            state.deadline
        };
        let event = tokio::select! {
            event = state.events.next() => Some(event),
            () = tokio::time::sleep_until(wake) => None,
        };
        if let Some(event) = event {
            return event.map(|event| (event, state));
        }
        if Instant::now() >= state.deadline {
            // The server ends the response: the client sees the stream end.
            return None;
        }
        let chunk = bookmark_chunk(&mut state);
        state.next_bookmark = next_bookmark(Instant::now(), state.deadline);
        Some((Ok(chunk), state))
    })
}

/// The next bookmark: a minute from now, or 2 s before the deadline if that is sooner
/// (and still ahead).
fn next_bookmark(now: Instant, deadline: Instant) -> Instant {
    let periodic = now + BOOKMARK_FREQUENCY;
    let before_deadline = deadline.checked_sub(BOOKMARK_BEFORE_DEADLINE);
    match before_deadline {
        Some(at) if at < periodic && at > now => at,
        _ => periodic,
    }
}

/// The events already committed (drained first, so that no event older than the
/// bookmark follows it), then the bookmark at the resourceVersion read before them.
fn bookmark_chunk(state: &mut State) -> Bytes {
    let Some(source) = &state.bookmarks else {
        return Bytes::new();
    };
    // Read first: every event committed up to this version is already queued.
    let resource_version = source.api.resource_version();
    let mut chunk = Vec::new();
    while let Some(ready) = state.events.next().now_or_never() {
        match ready {
            Some(Ok(bytes)) => chunk.extend_from_slice(&bytes),
            None => {
                state.done = true;
                return Bytes::from(chunk);
            }
        }
    }
    let line = json!({"type": "BOOKMARK", "object": {
        "kind": source.kind,
        "apiVersion": source.api_version,
        "metadata": {"resourceVersion": resource_version.to_string()},
    }});
    chunk.extend_from_slice(line.to_string().as_bytes());
    chunk.push(b'\n');
    Bytes::from(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lifetime_is_the_timeout_or_the_servers_random_one() {
        assert_eq!(lifetime(Some("290")), Duration::from_secs(290));
        for given in [None, Some("0"), Some("x")] {
            let picked = lifetime(given);
            assert!(picked >= Duration::from_secs(1800) && picked < Duration::from_secs(3600));
        }
    }

    #[test]
    fn bookmarks_come_every_minute_and_just_before_the_deadline() {
        let now = Instant::now();
        assert_eq!(
            next_bookmark(now, now + Duration::from_secs(290)),
            now + BOOKMARK_FREQUENCY
        );
        assert_eq!(
            next_bookmark(now, now + Duration::from_secs(30)),
            now + Duration::from_secs(28)
        );
        // Less than 2 s left: the deadline ends the watch first.
        assert_eq!(
            next_bookmark(now, now + Duration::from_secs(1)),
            now + BOOKMARK_FREQUENCY
        );
    }
}
