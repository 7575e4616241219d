//! Issue 39's size bars, kept by the build (docs/architecture.md): at most 30 production
//! files directly in `operator/src/controller/`, at most 500 `pub` items in the operator
//! crate's production code (new items are `pub(crate)`), and the simulation's `Runner`
//! and `World` at most 15 fields each (they are composed of parts that own the rest).
//! The step contract's bars (no step names another, the executor names none) are
//! `step_boundaries.rs`'s; a step's barrier is its type (`Subreconciler::barrier`).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};

const MAX_CONTROLLER_FILES: usize = 30;
const MAX_OPERATOR_PUB_ITEMS: usize = 500;
const MAX_PART_FIELDS: usize = 15;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn is_test_file(name: &str) -> bool {
    name == "tests.rs"
        || name.starts_with("tests_")
        || name.ends_with("_tests.rs")
        || name == "fixtures.rs"
}

/// The source up to its test module (`#[cfg(test)]` then `mod` or `#[path`).
fn production_part(source: &str) -> &str {
    let lines: Vec<&str> = source.lines().collect();
    let mut end = source.len();
    let mut offset = 0;
    for (index, line) in lines.iter().enumerate() {
        if line.contains("#[cfg(test)]") {
            let next = lines.get(index + 1).map_or("", |l| l.trim_start());
            let next = next.strip_prefix("pub(crate) ").unwrap_or(next);
            if next.starts_with("mod ") || next.starts_with("#[path") {
                end = offset;
                break;
            }
        }
        offset += line.len() + 1;
    }
    &source[..end.min(source.len())]
}

/// Whether a line declares a `pub` item (not `pub(crate)`, not a field).
fn is_pub_item(line: &str) -> bool {
    let Some(rest) = line.trim_start().strip_prefix("pub") else {
        return false;
    };
    if !rest.starts_with(char::is_whitespace) {
        return false;
    }
    let mut rest = rest.trim_start();
    for prefix in ["async", "const fn", "unsafe"] {
        if let Some(after) = rest.strip_prefix(prefix)
            && after.starts_with(char::is_whitespace)
        {
            rest = after.trim_start();
            if prefix == "const fn" {
                return true;
            }
            break;
        }
    }
    let keyword: String = rest.chars().take_while(|c| c.is_alphanumeric()).collect();
    matches!(
        keyword.as_str(),
        "fn" | "struct" | "enum" | "trait" | "type" | "const" | "static" | "mod" | "use"
    )
}

#[test]
fn the_controller_folder_holds_at_most_30_production_files() {
    let dir = workspace().join("operator/src/controller");
    let files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|name| !is_test_file(name))
        .collect();
    assert!(
        files.len() <= MAX_CONTROLLER_FILES,
        "{} production files directly in operator/src/controller/ (at most \
         {MAX_CONTROLLER_FILES}): put the new one in the folder of its concept: {files:?}",
        files.len()
    );
}

#[test]
fn the_operator_crate_exposes_at_most_500_pub_items() {
    let mut count = 0;
    for path in fdb_e2e_tests::rust_files(&workspace().join("operator/src")) {
        let name = path.file_name().unwrap().to_string_lossy();
        if is_test_file(&name) {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        count += production_part(&source)
            .lines()
            .filter(|line| is_pub_item(line))
            .count();
    }
    assert!(
        count <= MAX_OPERATOR_PUB_ITEMS,
        "the operator crate has {count} pub items (at most {MAX_OPERATOR_PUB_ITEMS}): make \
         the new ones pub(crate) unless the simulation or the binaries need them"
    );
}

/// The named fields of `struct NAME { ... }` in `source`.
fn field_count(source: &str, name: &str) -> usize {
    let start = source
        .find(&format!("pub struct {name} {{"))
        .unwrap_or_else(|| panic!("no `pub struct {name} {{`"));
    let body_start = start + source[start..].find('{').unwrap() + 1;
    let mut depth = 1;
    let mut fields = 0;
    for line in source[body_start..].lines() {
        let code = line.split("//").next().unwrap_or_default().trim();
        if depth == 1
            && !code.starts_with('#')
            && code
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub(super) ")
                .trim_start_matches("pub ")
                .split_once(':')
                .is_some_and(|(field, _)| {
                    !field.is_empty() && field.chars().all(|c| c.is_alphanumeric() || c == '_')
                })
        {
            fields += 1;
        }
        depth += code.matches(['{', '(', '[']).count() as i32;
        depth -= code.matches(['}', ')', ']']).count() as i32;
        if depth <= 0 {
            break;
        }
    }
    fields
}

#[test]
fn runner_and_world_have_at_most_15_fields() {
    let root = workspace().join("simulation/src");
    for (file, name) in [("runner/mod.rs", "Runner"), ("world/mod.rs", "World")] {
        let source = std::fs::read_to_string(root.join(file)).unwrap();
        let fields = field_count(&source, name);
        assert!(fields > 0, "{name}: no fields found");
        assert!(
            fields <= MAX_PART_FIELDS,
            "{name} has {fields} fields (at most {MAX_PART_FIELDS}): give the new state to \
             the part that owns it"
        );
    }
}

#[test]
fn the_counters_count() {
    assert!(is_pub_item("pub fn run() {"));
    assert!(is_pub_item("    pub async fn run() {"));
    assert!(is_pub_item("pub const fn f() {"));
    assert!(is_pub_item("pub use a::b;"));
    assert!(!is_pub_item("pub(crate) fn run() {"));
    assert!(!is_pub_item("    pub name: String,"));
    let source = "pub struct R {\n    /// doc: x\n    a: u8,\n    pub b: Vec<(u8, u8)>,\n    #[allow(x)]\n    c: Box<dyn Fn(u8) -> u8>,\n}\n";
    assert_eq!(field_count(source, "R"), 3);
    let source = "pub fn a() {}\n#[cfg(test)]\nmod tests {\n    pub fn b() {}\n}\n";
    assert_eq!(
        production_part(source)
            .lines()
            .filter(|l| is_pub_item(l))
            .count(),
        1
    );
}
