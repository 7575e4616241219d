//! What may be written into an fdbmonitor conf: the one rule shared by the renderer (the
//! operator's template), the substitution (the sidecar's per-pod values) and the spec
//! validation, so that no value can end its line and start a new `key = value` or
//! `[section]` (a rogue `[fdbserver.N]` would start a process the spec does not describe).
//!
//! fdbmonitor reads the conf with an INI parser that splits lines at `\n` and `\r`, trims
//! keys and values, and compares keys without regard to case; our own reader
//! ([`super::parse`]) does the same.

use std::fmt;

/// Why a text cannot be written into the monitor conf as a value (or a key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfTextProblem {
    /// A line break (`\n`, `\r`, U+0085, U+2028, U+2029): it would start a new line.
    LineBreak(char),
    /// Another control character (NUL, escape, ...), which no conf value needs.
    ControlCharacter(char),
    /// Leading or trailing whitespace, which the INI reader trims away.
    SurroundingWhitespace,
}

impl fmt::Display for ConfTextProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LineBreak(c) => write!(
                f,
                "contains a line break (U+{:04X}), which would start a new line of fdbmonitor.conf",
                u32::from(*c)
            ),
            Self::ControlCharacter(c) => write!(
                f,
                "contains the control character U+{:04X}, which fdbmonitor.conf cannot hold",
                u32::from(*c)
            ),
            Self::SurroundingWhitespace => f.write_str(
                "starts or ends with whitespace, which fdbmonitor.conf would silently drop",
            ),
        }
    }
}

/// Whether `c` ends a line for an INI reader (or for a human reading the file).
fn is_line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// The first reason `value` cannot be a monitor conf value, `None` when it can: no line
/// break, no control character (a tab inside is fine), no surrounding whitespace. An
/// empty value is fine (`key = ` sets an empty value).
pub fn conf_value_problem(value: &str) -> Option<ConfTextProblem> {
    if let Some(c) = value.chars().find(|c| is_line_break(*c)) {
        return Some(ConfTextProblem::LineBreak(c));
    }
    if let Some(c) = value.chars().find(|c| c.is_control() && *c != '\t') {
        return Some(ConfTextProblem::ControlCharacter(c));
    }
    (value.trim() != value).then_some(ConfTextProblem::SurroundingWhitespace)
}

/// The longest key this operator writes or accepts (the Go operator limits a whole
/// custom parameter to 100 characters).
pub const MAX_KEY_LENGTH: usize = 100;

/// Whether `key` is a monitor conf key this operator writes: an ASCII letter followed by
/// ASCII letters, digits, `_` or `-`, at most [`MAX_KEY_LENGTH`] characters. Such a key
/// cannot contain `=`, `[`, `#`, `;`, whitespace or a line break, so it can neither split
/// its line nor look like a section or a comment.
pub fn is_conf_key(key: &str) -> bool {
    let mut chars = key.chars();
    key.len() <= MAX_KEY_LENGTH
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The key as fdbmonitor and fdbserver compare it: ASCII lowercase (the INI reader ignores
/// case) with `-` read as `_`, so `COMMAND` or `public-address` are recognised as the
/// keys the operator owns.
pub fn normalized_key(key: &str) -> String {
    key.chars()
        .map(|c| match c {
            '-' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_that_could_end_their_line_are_refused() {
        for (value, problem) in [
            ("a\nb", ConfTextProblem::LineBreak('\n')),
            ("a\r", ConfTextProblem::LineBreak('\r')),
            ("a\u{2028}b", ConfTextProblem::LineBreak('\u{2028}')),
            ("a\u{85}b", ConfTextProblem::LineBreak('\u{85}')),
            ("a\0b", ConfTextProblem::ControlCharacter('\0')),
            ("a\u{1b}[0m", ConfTextProblem::ControlCharacter('\u{1b}')),
            (" a", ConfTextProblem::SurroundingWhitespace),
            ("a\u{3000}", ConfTextProblem::SurroundingWhitespace),
        ] {
            assert_eq!(conf_value_problem(value), Some(problem), "{value:?}");
        }
        for value in ["", "S.CN=fdb,O=a b", "x[1] = #y", "naïve", "a\tb"] {
            assert_eq!(conf_value_problem(value), None, "{value:?}");
        }
        assert!(
            conf_value_problem("a\nb")
                .unwrap()
                .to_string()
                .contains("U+000A")
        );
    }

    #[test]
    fn keys_follow_a_strict_grammar_and_normalize_like_fdbmonitor() {
        for key in ["knob_a", "locality-rack", "K1", &"k".repeat(100)] {
            assert!(is_conf_key(key), "{key:?}");
        }
        for key in [
            "",
            "1a",
            "_a",
            "a b",
            "a=b",
            "[x]",
            "a\n",
            "#a",
            "é",
            &"k".repeat(101),
        ] {
            assert!(!is_conf_key(key), "{key:?}");
        }
        assert_eq!(normalized_key("Public-Address"), "public_address");
    }
}
