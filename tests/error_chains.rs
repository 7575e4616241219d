//! Every error says its own part once (issue 39): an error either shows its source in
//! its message or returns it from `source()`, never both (the Rust API guidelines, and
//! thiserror's documentation). The printers walk the chain
//! (`shared/src/error_chain.rs`), so a message that also pasted its source's text would
//! print it twice.
//!
//! Two checks: every `#[error("...")]` in the workspace's production code names no
//! field that is its source (`source`, `#[source]`, `#[from]`); and representative
//! errors of each crate, built as the code builds them, print a chain in which no
//! message repeats the one after it while still naming every part.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};

use fdb_shared::error_chain::{chain_text, repeated_source};

const CRATES: [&str; 7] = [
    "shared",
    "bounded-http",
    "operator",
    "simulation",
    "cli",
    "sidecar",
    "kubectl-fdb",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The index just past the bracket that closes the one at `open`, skipping string
/// literals (an error message holds `{` and `}`).
fn close_of(text: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    let mut at = open;
    while at < text.len() {
        match text[at] {
            b'"' => {
                at += 1;
                while at < text.len() && text[at] != b'"' {
                    at += if text[at] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return at + 1;
                }
            }
            _ => {}
        }
        at += 1;
    }
    text.len()
}

/// Splits a field list at its top-level commas.
fn fields(body: &str) -> Vec<String> {
    let (mut parts, mut depth, mut current) = (Vec::new(), 0i32, String::new());
    for c in body.chars() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    parts.retain(|p| !p.trim().is_empty());
    parts
}

/// The names a message would use for the item's source fields: `source`, or a field
/// marked `#[source]` / `#[from]` (`0` for the first field of a tuple).
fn source_names(body: &str, tuple: bool) -> Vec<String> {
    let mut names = Vec::new();
    for (index, field) in fields(body).iter().enumerate() {
        let code: String = field
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join(" ");
        let marked = code.contains("#[source]") || code.contains("#[from]");
        if tuple {
            if marked {
                names.push(index.to_string());
            }
            continue;
        }
        let without_attrs = code
            .rsplit(']')
            .next()
            .unwrap_or_default()
            .trim()
            .trim_start_matches("pub ");
        let name = without_attrs.split(':').next().unwrap_or_default().trim();
        if marked || name == "source" {
            names.push(name.to_owned());
        }
    }
    names
}

/// Whether `text` uses the identifier `name` (or the tuple field `.N`).
fn uses(text: &str, name: &str) -> bool {
    let needle = if name.chars().all(|c| c.is_ascii_digit()) {
        format!(".{name}")
    } else {
        name.to_owned()
    };
    text.match_indices(&needle).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + needle.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(after) && (needle.starts_with('.') || !ident(before))
    })
}

/// The `#[error(...)]` messages of `source` that show one of their source fields, as
/// `line: message`.
fn repeating_messages(source: &str) -> Vec<String> {
    let bytes = source.as_bytes();
    let mut found = Vec::new();
    for (at, _) in source.match_indices("#[error(") {
        let attr_end = close_of(bytes, at + "#[error".len());
        let attr = &source[at + "#[error(".len()..attr_end - 1];
        if attr.trim() == "transparent" {
            continue;
        }
        // The item after the attribute: skip doc comments and other attributes.
        let mut rest = attr_end + 1;
        loop {
            let trimmed = source[rest..].trim_start();
            rest = source.len() - trimmed.len();
            if trimmed.starts_with("///") || trimmed.starts_with("//") {
                rest += trimmed.find('\n').unwrap_or(trimmed.len());
            } else if trimmed.starts_with("#[") {
                rest = close_of(bytes, rest + 1);
            } else {
                break;
            }
        }
        let Some(open) = source[rest..]
            .find(['(', '{', ',', ';', '}'])
            .map(|i| rest + i)
        else {
            continue;
        };
        let tuple = match bytes[open] {
            b'(' => true,
            b'{' => false,
            _ => continue,
        };
        let body = &source[open + 1..close_of(bytes, open) - 1];
        let message = attr.trim();
        let (format, args) = match message[1..].find('"') {
            Some(end) if message.starts_with('"') => (&message[..end + 2], &message[end + 2..]),
            _ => (message, ""),
        };
        let repeats = source_names(body, tuple).iter().any(|name| {
            format.contains(&format!("{{{name}}}"))
                || format.contains(&format!("{{{name}:"))
                || uses(args, name)
        });
        if repeats {
            let line = source[..at].lines().count() + 1;
            found.push(format!("{line}: {message}"));
        }
    }
    found
}

/// The source without its test module.
fn production_source(path: &Path) -> String {
    let source = std::fs::read_to_string(path).unwrap();
    match source.find("#[cfg(test)]\nmod tests") {
        Some(at) => source[..at].to_owned(),
        None => source,
    }
}

#[test]
fn no_error_message_shows_its_own_source() {
    let root = workspace();
    let mut offenders = Vec::new();
    for krate in CRATES {
        for path in fdb_e2e_tests::rust_files(&root.join(krate).join("src")) {
            let name = path.file_name().unwrap().to_string_lossy();
            if name == "tests.rs" || name.ends_with("_tests.rs") || name.starts_with("tests_") {
                continue;
            }
            for found in repeating_messages(&production_source(&path)) {
                let relative = path.strip_prefix(&root).unwrap().display().to_string();
                offenders.push(format!("{relative}:{found}"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "these messages show their source, which the chain printer shows again; drop \
         the source from the message (or stop returning it as source()):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_scanner_finds_a_message_that_shows_its_source() {
    let named =
        "#[error(\"cannot read {path}: {source}\")]\nRead { path: String, source: io::Error },";
    let marked =
        "#[error(\"{what}: {cause}\")]\nX {\n    what: String,\n    #[source]\n    cause: E,\n},";
    let tuple = "#[error(\"world: {0}\")]\nWorld(#[from] WorldError),";
    let positional =
        "#[error(\"cannot write {}: {}\", path.display(), source)]\nW { path: P, source: E },";
    for repeating in [named, marked, tuple, positional] {
        assert_eq!(repeating_messages(repeating).len(), 1, "{repeating}");
    }
    let fine = [
        "#[error(\"cannot read {path}\")]\nRead { path: String, source: io::Error },",
        "#[error(transparent)]\nRead(#[from] ReadError),",
        "#[error(\"{0}\")]\nUsage(String),",
        "#[error(\"listen on {address}: {error}\")]\nListen { address: A, error: io::Error },",
        "#[error(\"world\")]\n/// doc\nWorld(#[from] WorldError),",
    ];
    for fine in fine {
        assert!(repeating_messages(fine).is_empty(), "{fine}");
    }
}

fn assert_once(error: &(dyn std::error::Error + 'static), parts: &[&str]) {
    assert_eq!(repeated_source(error, |_| true), None, "{error:?}");
    let text = chain_text(error);
    for part in parts {
        assert_eq!(text.matches(part).count(), 1, "{part:?} in {text:?}");
    }
}

fn not_found() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::NotFound, "no such file")
}

#[test]
fn shared_errors_name_each_part_once() {
    let error =
        fdb_shared::connection_string::ConnectionString::parse("db:abc@10.0.0.1").unwrap_err();
    assert_once(&error, &["coordinator 0", "the port is missing"]);
    let error = fdb_shared::yaml_input::read_file(Path::new("/nonexistent/a.yaml")).unwrap_err();
    assert_once(&error, &["cannot read /nonexistent/a.yaml", "No such file"]);
    let error = fdb_shared::status_json::DatabaseStatus::parse_fdbcli_output("{\"cluster\": [}")
        .unwrap_err();
    assert_once(&error, &["invalid status JSON at line 1", "expected value"]);
}

#[test]
fn operator_errors_name_each_part_once() {
    use fdb_operator::controller::{ReconcileError, StepError};
    use fdb_operator::fdb::AdminError;
    let spawn = AdminError::Spawn {
        command: "status json".to_owned(),
        program: "fdbcli".to_owned(),
        source: not_found(),
    };
    let error = ReconcileError::Step {
        step: "UpdateStatus",
        source: StepError::admin("read the status")(spawn),
    };
    assert_eq!(
        chain_text(&error),
        "step UpdateStatus failed: read the status: `status json`: cannot run fdbcli: no such file"
    );
    assert_once(&error, &["no such file", "cannot run fdbcli"]);
}

#[test]
fn sidecar_errors_name_each_part_once() {
    let error = fdb_sidecar::copy::CopyError::Io {
        operation: "write",
        path: PathBuf::from("/var/output-files/fdb.cluster"),
        source: not_found(),
    };
    let error = fdb_sidecar::server::StartError::Copy(error);
    assert_once(
        &error,
        &["start-up copy failed", "fdb.cluster", "no such file"],
    );
}

#[test]
fn simulation_errors_name_each_part_once() {
    let error = fdb_simulation::scenario::Scenario::from_file(Path::new("/nonexistent/s.yaml"))
        .unwrap_err();
    assert_once(&error, &["/nonexistent/s.yaml", "No such file"]);
}
