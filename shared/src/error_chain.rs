//! How every binary prints an error: its message and the messages of its sources, joined by
//! `: `, each text once.
//!
//! The workspace's errors follow the Rust API guidelines' rule (and thiserror's): an error
//! either shows its source in its own message or returns it from `source()`, never both.
//! Ours return it, so a printer that showed only the top message would drop the cause;
//! [`ErrorChain`] walks the sources. Some dependencies break the rule (kube's
//! `ApiError: {0}`, `HyperError: {0}`), so a source whose text the previous message
//! already contains is left out, and the cause is printed once either way.
//! [`repeated_source`] finds our own breaches of the rule, for tests.

use std::error::Error;
use std::fmt;

/// Displays an error and its chain of sources, `outer: inner: innermost`, skipping a
/// source whose text the message before it already contains.
#[derive(Clone, Copy)]
pub struct ErrorChain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut previous = self.0.to_string();
        f.write_str(&previous)?;
        let mut next = self.0.source();
        while let Some(source) = next {
            let text = source.to_string();
            if !text.is_empty() && !previous.contains(&text) {
                write!(f, ": {text}")?;
            }
            previous = text;
            next = source.source();
        }
        Ok(())
    }
}

impl fmt::Debug for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The chain of `error` as one line of text (see [`ErrorChain`]).
pub fn chain_text(error: &(dyn Error + 'static)) -> String {
    ErrorChain(error).to_string()
}

/// The first link of `error`'s chain whose message repeats its source's message, as
/// `(message, source message)`; `None` when every message says only its own part. Errors of
/// other crates are not judged: the walk stops at the first source that `is_ours` rejects.
pub fn repeated_source(
    error: &(dyn Error + 'static),
    is_ours: impl Fn(&(dyn Error + 'static)) -> bool,
) -> Option<(String, String)> {
    let mut current = error;
    while let Some(source) = current.source() {
        let (outer, inner) = (current.to_string(), source.to_string());
        if !inner.is_empty() && outer.contains(&inner) {
            return Some((outer, inner));
        }
        if !is_ours(source) {
            return None;
        }
        current = source;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read {path}")]
    struct ReadFailed {
        path: &'static str,
        source: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("loading the scenario")]
    struct Loading(#[source] ReadFailed);

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read {path}: {source}")]
    struct Repeats {
        path: &'static str,
        source: std::io::Error,
    }

    fn not_found() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::NotFound, "no such file")
    }

    #[test]
    fn the_chain_shows_every_source_once() {
        let error = Loading(ReadFailed {
            path: "a.yaml",
            source: not_found(),
        });
        assert_eq!(error.to_string(), "loading the scenario");
        assert_eq!(
            chain_text(&error),
            "loading the scenario: cannot read a.yaml: no such file"
        );
        assert_eq!(format!("{:?}", ErrorChain(&error)), chain_text(&error));
        assert_eq!(repeated_source(&error, |_| true), None);
    }

    #[test]
    fn a_source_already_in_the_message_is_printed_once_and_reported() {
        let error = Repeats {
            path: "a.yaml",
            source: not_found(),
        };
        assert_eq!(chain_text(&error), "cannot read a.yaml: no such file");
        assert_eq!(
            repeated_source(&error, |_| true),
            Some((
                "cannot read a.yaml: no such file".into(),
                "no such file".into()
            ))
        );
    }

    #[test]
    fn foreign_sources_are_not_judged() {
        let error = Loading(ReadFailed {
            path: "a.yaml",
            source: not_found(),
        });
        let ours = |e: &(dyn Error + 'static)| e.is::<ReadFailed>();
        assert_eq!(repeated_source(&error, |_| false), None);
        assert_eq!(repeated_source(&error, ours), None);
    }
}
