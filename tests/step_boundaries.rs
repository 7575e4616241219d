//! The step contract, kept by the build (issue 39; docs/architecture.md, "The step
//! contract"): a step decides from the snapshot and the pass's look-ahead, never by
//! calling another step, so the order of `ordered_steps()` is the whole story.
//!
//! - no production file of a step (`controller/subreconcilers/<step>*.rs`) names a file
//!   of another step: what two steps share lives in a neutral module outside
//!   `subreconcilers/` (`pod_updates.rs`, `buggify_deletions.rs`, `coordinator_change.rs`,
//!   `removals/`, ...);
//! - no production file outside `subreconcilers/` names a step, but the driver, which
//!   runs `ordered_steps()`;
//! - the executor (`executor.rs`, `executor/`) names no step and not the upgrade's
//!   decision (`upgrade.rs`): it performs typed actions, whoever planned them.
//!
//! Test modules (`#[cfg(test)]` and `*_tests.rs`) are left out: tests may look anywhere.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Files of `subreconcilers/` that belong to a step without bearing its name.
const HELPERS: &[(&str, &str)] = &[
    ("global_bounce", "bounce_processes"),
    ("upgrade_bounce", "bounce_processes"),
];

/// The one production file outside `subreconcilers/` that may name it, and what it may
/// name.
const DRIVER: (&str, &str) = ("controller/driver.rs", "ordered_steps");

fn operator_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../operator/src")
}

/// Every production `.rs` file under `root`, by its path relative to `root`.
fn production_files(root: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for path in fdb_e2e_tests::rust_files(root) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with("_tests.rs") || name == "fixtures.rs" {
            continue;
        }
        let relative = path.strip_prefix(root).unwrap();
        let source = std::fs::read_to_string(&path).unwrap();
        let production = match source.find("#[cfg(test)]") {
            Some(at) => source[..at].to_owned(),
            None => source,
        };
        found.insert(relative.to_string_lossy().replace('\\', "/"), production);
    }
    found
}

/// The step modules, as `ordered_steps()` lists them (`Box::new(module::Type)`).
fn step_modules(mod_rs: &str) -> Vec<String> {
    let mut steps: Vec<String> = mod_rs
        .split("Box::new(")
        .skip(1)
        .filter_map(|rest| rest.split_once("::").map(|(m, _)| m.trim().to_owned()))
        .filter(|m| m.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .collect();
    steps.sort();
    steps.dedup();
    steps
}

/// The step a file of `subreconcilers/` belongs to: the longest step module its name is
/// or starts with (`update_pods` for `update_pods_tests`), or its entry in [`HELPERS`].
fn step_of(file: &str, steps: &[String]) -> Option<String> {
    if let Some((_, step)) = HELPERS.iter().find(|(helper, _)| *helper == file) {
        return Some((*step).to_owned());
    }
    steps
        .iter()
        .filter(|step| file == step.as_str() || file.starts_with(&format!("{step}_")))
        .max_by_key(|step| step.len())
        .cloned()
}

/// The first path segments named after each `prefix` in `source`: `a` of `prefix a::b`,
/// `a` and `c` of `prefix {a::b, c}` (one level of braces).
fn names_after(source: &str, prefix: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = Vec::new();
    for (at, _) in source.match_indices(prefix) {
        // `super::super::x` is read once, from its first `super::`.
        if source[..at].ends_with(prefix) {
            continue;
        }
        let rest = &source[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inside = &group[..group.find('}').unwrap_or(group.len())];
            names.extend(inside.split(',').map(ident).filter(|n| !n.is_empty()));
        } else {
            names.push(ident(rest));
        }
    }
    names
}

/// The references that break the contract, as `file -> what it names`.
fn violations(root: &Path) -> Vec<String> {
    let files = production_files(root);
    let steps = step_modules(&files["controller/subreconcilers/mod.rs"]);
    assert!(steps.len() > 20, "ordered_steps() not read: {steps:?}");
    let mut found = Vec::new();
    for (path, source) in &files {
        if path == "controller/subreconcilers/mod.rs" {
            continue;
        }
        let named_steps = names_after(source, "subreconcilers::");
        if let Some(file) = path
            .strip_prefix("controller/subreconcilers/")
            .and_then(|f| f.strip_suffix(".rs"))
        {
            let Some(own) = step_of(file, &steps) else {
                found.push(format!(
                    "{path} belongs to no step: name it after its step or list it in HELPERS"
                ));
                continue;
            };
            let named = names_after(source, "super::")
                .into_iter()
                .chain(named_steps);
            for name in named {
                let other = step_of(&name, &steps).filter(|step| *step != own);
                if let Some(other) = other {
                    found.push(format!("{path} (step {own}) names step {other} ({name})"));
                }
            }
            continue;
        }
        for name in named_steps {
            if (path.as_str(), name.as_str()) != DRIVER {
                found.push(format!("{path} names the steps (subreconcilers::{name})"));
            }
        }
        let executor = path == "controller/executor.rs" || path.starts_with("controller/executor/");
        if executor {
            let upgrade = names_after(source, "controller::")
                .into_iter()
                .chain(names_after(source, "super::"))
                .filter(|name| name == "upgrade" || name == "subreconcilers");
            for name in upgrade {
                found.push(format!("{path}: the executor names {name}"));
            }
        }
    }
    found
}

#[test]
fn no_step_names_another_and_the_executor_names_none() {
    let found = violations(&operator_src());
    assert!(
        found.is_empty(),
        "{} references break the step contract (docs/architecture.md, \"The step contract\"):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_reader_sees_what_it_must_refuse() {
    let steps: Vec<String> = ["update_pods", "update_pod_config", "bounce_processes"]
        .map(String::from)
        .to_vec();
    assert_eq!(
        step_of("update_pods_tests", &steps).as_deref(),
        Some("update_pods")
    );
    assert_eq!(
        step_of("update_pod_config_monitor", &steps).as_deref(),
        Some("update_pod_config")
    );
    assert_eq!(
        step_of("upgrade_bounce", &steps).as_deref(),
        Some("bounce_processes")
    );
    assert_eq!(step_of("pod_updates", &steps), None);
    assert_eq!(
        names_after(
            "use super::{update_pods::decide, Subreconciler};",
            "super::"
        ),
        ["update_pods", "Subreconciler"]
    );
    assert_eq!(
        names_after(
            "use super::super::executor; x(super::remove_pods::a)",
            "super::"
        ),
        ["super", "remove_pods"]
    );
    assert_eq!(
        names_after(
            "crate::controller::subreconcilers::update_pods::x",
            "subreconcilers::"
        ),
        ["update_pods"]
    );
}
