//! `$NAME` substitution in monitor conf templates.
//!
//! This is the single implementation used both by the sidecar (which renders the
//! `fdbmonitor.conf` it writes) and by the operator (which renders the conf it expects the
//! sidecar to have written, from the values of `GET /substitutions`), so the two always
//! agree byte for byte.
//!
//! Rules:
//! - `$NAME` and `${NAME}` are replaced by the value of `NAME`; a name is the longest run
//!   of ASCII letters, digits and `_` starting with a letter or `_` (so in
//!   `$FDB_INSTANCE_ID-1` the name is `FDB_INSTANCE_ID`).
//! - A `$` not followed by a name start or `{` is kept as is.
//! - A name without a value is an error naming the variable and the line: an empty
//!   string silently written into `public_address` would start a broken process.
//! - A value that could end its line or open a section is an error naming the variable:
//!   the values come from the pod's environment (the fault domain, the process group ID,
//!   annotations), and a line break in one would add `[fdbserver.N]` sections, i.e.
//!   processes, to every pod. See [`unsafe_substitution`].

use std::collections::BTreeMap;
use std::net::Ipv6Addr;

use super::safe_text::{ConfTextProblem, conf_value_problem};

/// Why a template could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubstitutionError {
    /// The template uses a variable that has no value.
    #[error(
        "monitor conf template line {line}: variable ${name} is not set (known variables: {known})"
    )]
    UnsetVariable {
        /// The variable name, without `$`.
        name: String,
        /// 1-based line number in the template.
        line: usize,
        /// Comma-separated names of the variables that are set.
        known: String,
    },
    /// A `${` without a matching `}` or with an invalid name inside.
    #[error("monitor conf template line {line}: malformed ${{...}} reference")]
    MalformedBraces {
        /// 1-based line number in the template.
        line: usize,
    },
    /// The value of a variable cannot be written into the conf; nothing is rendered.
    #[error("monitor conf template line {line}: the value of ${name} is refused: {problem}")]
    UnsafeValue {
        /// The variable name, without `$`.
        name: String,
        /// 1-based line number in the template.
        line: usize,
        /// What is wrong with the value.
        problem: UnsafeSubstitution,
    },
}

/// Why a substituted value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnsafeSubstitution {
    /// A line break or control character (see [`conf_value_problem`]).
    #[error("{0}")]
    Text(ConfTextProblem),
    /// `[` or `]` outside a bracketed IPv6 address (`[fd00::1]`, how the sidecar writes
    /// IPv6 addresses): brackets are how a section starts.
    #[error("contains `[` or `]` outside a bracketed IPv6 address")]
    Bracket,
}

/// Why `value` may not be substituted into a monitor conf, `None` when it may. Surrounding
/// whitespace is allowed (values are placed inside a line, and a value such as a zone ID
/// is compared by what fdbserver reads), line breaks, control characters and brackets
/// (other than a whole bracketed IPv6 address) are not.
pub fn unsafe_substitution(value: &str) -> Option<UnsafeSubstitution> {
    match conf_value_problem(value) {
        Some(ConfTextProblem::SurroundingWhitespace) | None => {}
        Some(problem) => return Some(UnsafeSubstitution::Text(problem)),
    }
    let bracketed_ipv6 = value
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .is_some_and(|inner| inner.parse::<Ipv6Addr>().is_ok());
    (value.contains(['[', ']']) && !bracketed_ipv6).then_some(UnsafeSubstitution::Bracket)
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(is_name_start) && chars.all(is_name_char)
}

/// Replaces every `$NAME` / `${NAME}` in `template` with its value from `vars`.
pub fn substitute(
    template: &str,
    vars: &BTreeMap<String, String>,
) -> Result<String, SubstitutionError> {
    let mut out = String::with_capacity(template.len() + 64);
    let mut line = 1;
    let mut rest = template;
    while let Some(pos) = rest.find('$') {
        let (before, after_dollar) = (&rest[..pos], &rest[pos + 1..]);
        line += before.matches('\n').count();
        out.push_str(before);
        let (name, consumed) = if let Some(braced) = after_dollar.strip_prefix('{') {
            let end = braced
                .find('}')
                .ok_or(SubstitutionError::MalformedBraces { line })?;
            let name = &braced[..end];
            if !valid_name(name) {
                return Err(SubstitutionError::MalformedBraces { line });
            }
            (name, end + 2)
        } else if after_dollar.chars().next().is_some_and(is_name_start) {
            let end = after_dollar
                .find(|c: char| !is_name_char(c))
                .unwrap_or(after_dollar.len());
            (&after_dollar[..end], end)
        } else {
            out.push('$');
            rest = after_dollar;
            continue;
        };
        let value = vars
            .get(name)
            .ok_or_else(|| SubstitutionError::UnsetVariable {
                name: name.to_owned(),
                line,
                known: vars.keys().cloned().collect::<Vec<_>>().join(", "),
            })?;
        if let Some(problem) = unsafe_substitution(value) {
            return Err(SubstitutionError::UnsafeValue {
                name: name.to_owned(),
                line,
                problem,
            });
        }
        out.push_str(value);
        rest = &after_dollar[consumed..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, String> {
        [
            ("FDB_PUBLIC_IP", "10.1.2.3"),
            ("FDB_POD_IP", "10.1.2.4"),
            ("FDB_INSTANCE_ID", "storage-1"),
            ("BINARY_DIR", "/usr/bin"),
            ("EMPTY", ""),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    #[test]
    fn replaces_names_up_to_the_first_non_name_character() {
        let rendered = substitute(
            "command = $BINARY_DIR/fdbserver\npublic_address = $FDB_PUBLIC_IP:4501\nlocality_process_id = $FDB_INSTANCE_ID-2\n",
            &vars(),
        )
        .unwrap();
        assert_eq!(
            rendered,
            "command = /usr/bin/fdbserver\npublic_address = 10.1.2.3:4501\nlocality_process_id = storage-1-2\n"
        );
    }

    #[test]
    fn braces_delimit_names_and_empty_values_are_allowed() {
        assert_eq!(
            substitute("a${FDB_POD_IP}b${EMPTY}c", &vars()).unwrap(),
            "a10.1.2.4bc"
        );
    }

    #[test]
    fn lone_dollars_are_kept() {
        assert_eq!(
            substitute("cost $5 $ $-x $", &vars()).unwrap(),
            "cost $5 $ $-x $"
        );
        assert_eq!(substitute("no variables", &vars()).unwrap(), "no variables");
    }

    #[test]
    fn unset_variable_is_an_error_naming_it_and_its_line() {
        let err = substitute("[general]\nx = $FDB_ZONE_ID\n", &vars()).unwrap_err();
        assert_eq!(
            err,
            SubstitutionError::UnsetVariable {
                name: "FDB_ZONE_ID".into(),
                line: 2,
                known: "BINARY_DIR, EMPTY, FDB_INSTANCE_ID, FDB_POD_IP, FDB_PUBLIC_IP".into(),
            }
        );
        assert!(err.to_string().contains("$FDB_ZONE_ID is not set"));
    }

    #[test]
    fn longer_name_is_not_confused_with_a_known_prefix() {
        let err = substitute("$FDB_POD_IPX", &vars()).unwrap_err();
        assert!(
            matches!(err, SubstitutionError::UnsetVariable { name, .. } if name == "FDB_POD_IPX")
        );
    }

    #[test]
    fn malformed_braces_are_errors() {
        assert_eq!(
            substitute("a\n${FDB_POD_IP", &vars()).unwrap_err(),
            SubstitutionError::MalformedBraces { line: 2 }
        );
        assert_eq!(
            substitute("${1X}", &vars()).unwrap_err(),
            SubstitutionError::MalformedBraces { line: 1 }
        );
    }

    #[test]
    fn values_that_could_add_lines_or_sections_are_refused() {
        let template = "[fdbserver.1]\nlocality_zoneid = $FDB_ZONE_ID\n";
        for hostile in [
            "z\n[fdbserver.2]\ncommand = /bin/sh",
            "z\r[fdbserver.2]",
            "z\u{2028}x",
            "z\0",
            "[fdbserver.2]",
            "z]",
            "[10.1.2.3]",
        ] {
            let mut v = vars();
            v.insert("FDB_ZONE_ID".into(), hostile.into());
            let err = substitute(template, &v).unwrap_err();
            assert!(
                matches!(&err, SubstitutionError::UnsafeValue { name, line: 2, .. } if name == "FDB_ZONE_ID"),
                "{hostile:?}: {err:?}"
            );
            assert!(err.to_string().contains("$FDB_ZONE_ID is refused"), "{err}");
        }
        let mut v = vars();
        v.insert("FDB_PUBLIC_IP".into(), "[fd00::1]".into());
        assert_eq!(
            substitute("public_address = $FDB_PUBLIC_IP:4501", &v).unwrap(),
            "public_address = [fd00::1]:4501"
        );
        // A variable the template does not use is not checked.
        v.insert("UNUSED".into(), "a\nb".into());
        assert!(substitute("x = $FDB_POD_IP", &v).is_ok());
    }

    #[test]
    fn values_are_not_substituted_again() {
        let mut v = vars();
        v.insert("A".into(), "$FDB_POD_IP".into());
        assert_eq!(substitute("$A", &v).unwrap(), "$FDB_POD_IP");
    }
}
