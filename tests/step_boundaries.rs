//! The step contract, kept by the build (issue 39; docs/architecture.md, "The step
//! contract"): a step decides from the snapshot and the pass's look-ahead, never by
//! calling another step, so the order of `ordered_steps()` is the whole story.
//!
//! - each step is one folder, `controller/steps/<step>/` (its decision, plan and tests);
//!   no production file of a step names another step: what two steps share lives in a
//!   neutral module outside `steps/` (`pod_updates/`, `buggify_deletions.rs`,
//!   `coordinators/`, `removals/`, ...);
//! - no production file outside `steps/` names a step, but the driver, which runs
//!   `ordered_steps()`;
//! - the executor (`pass/executor.rs`, `pass/executor/`) names no step and not the
//!   upgrade's decision (`upgrade.rs`): it performs typed actions, whoever planned them.
//!
//! Paths are resolved from each file's module (`super::super::x` of
//! `steps/a/b.rs` is `steps::x`), so no spelling of a path slips through.
//! Test modules (`#[cfg(test)]`, `tests.rs`, `*_tests.rs`) are left out: tests may look
//! anywhere.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The one production file outside `steps/` that may name it, and what it may name.
const DRIVER: (&str, &str) = ("controller/pass/driver.rs", "ordered_steps");

fn operator_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../operator/src")
}

/// Whether a file of `name` holds tests only.
fn is_test_file(name: &str) -> bool {
    name == "tests.rs"
        || name.starts_with("tests_")
        || name.ends_with("_tests.rs")
        || name == "fixtures.rs"
}

/// Where the file's test module starts (`#[cfg(test)]` then `mod`): a `#[cfg(test)]`
/// item before it (a helper kept for the tests) is read as production, to stay strict.
fn test_module_at(source: &str) -> Option<usize> {
    source
        .match_indices("#[cfg(test)]")
        .map(|(at, _)| at)
        .find(|at| {
            let rest = source[at + "#[cfg(test)]".len()..].trim_start();
            let rest = rest.strip_prefix("pub(crate) ").unwrap_or(rest);
            rest.starts_with("mod ") || rest.starts_with("#[path")
        })
}

/// Every production `.rs` file under `root`, by its path relative to `root`.
fn production_files(root: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for path in fdb_e2e_tests::rust_files(root) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if is_test_file(&name) {
            continue;
        }
        let relative = path.strip_prefix(root).unwrap();
        let source = std::fs::read_to_string(&path).unwrap();
        let production = match test_module_at(&source) {
            Some(at) => source[..at].to_owned(),
            None => source,
        };
        found.insert(relative.to_string_lossy().replace('\\', "/"), production);
    }
    found
}

/// The module of the file at `path` (`controller/steps/a/mod.rs` is
/// `["controller", "steps", "a"]`).
fn module_of(path: &str) -> Vec<String> {
    let mut module: Vec<String> = path
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if module
        .last()
        .is_some_and(|last| last == "mod" || last == "lib")
    {
        module.pop();
    }
    module
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

/// The words of the path that starts at `rest` (`a::b::{c, d}` gives `[a, b]` and the
/// group `[c, d]`, one level of braces).
fn path_words(rest: &str) -> (Vec<String>, Vec<String>) {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut words = Vec::new();
    let mut rest = rest;
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let inside = &group[..group.find('}').unwrap_or(group.len())];
            let group = inside.split(',').map(ident).filter(|n| !n.is_empty());
            return (words, group.collect());
        }
        let word = ident(rest);
        if word.is_empty() {
            return (words, Vec::new());
        }
        rest = &rest.trim_start()[word.len()..];
        words.push(word);
        match rest.strip_prefix("::") {
            Some(next) => rest = next,
            None => return (words, Vec::new()),
        }
    }
}

/// Every path of `source` that starts with `crate::` or `super::`, resolved from
/// `module` to the absolute path it names; a group `a::{b, c}` gives `a::b` and `a::c`.
fn resolved_paths(source: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for prefix in ["crate::", "super::"] {
        for (at, _) in source.match_indices(prefix) {
            let before = source[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut rest = &source[at + prefix.len()..];
            let base: Vec<String> = if prefix == "crate::" {
                Vec::new()
            } else {
                let mut up = 1;
                while let Some(next) = rest.strip_prefix("super::") {
                    up += 1;
                    rest = next;
                }
                module[..module.len().saturating_sub(up)].to_vec()
            };
            let (words, group) = path_words(rest);
            let mut path = base;
            path.extend(words);
            if group.is_empty() {
                found.push(path);
                continue;
            }
            for item in group {
                let mut item_path = path.clone();
                item_path.push(item);
                found.push(item_path);
            }
        }
    }
    found
}

/// The step a resolved path names (`controller::steps::<step>::...`), if any.
fn named_step(path: &[String]) -> Option<&str> {
    match path {
        [controller, steps, step, ..] if controller == "controller" && steps == "steps" => {
            Some(step.as_str())
        }
        _ => None,
    }
}

/// The references that break the contract, as `file -> what it names`.
fn violations(root: &Path) -> Vec<String> {
    let files = production_files(root);
    let steps = step_modules(&files["controller/steps/mod.rs"]);
    assert!(steps.len() > 20, "ordered_steps() not read: {steps:?}");
    let mut found = Vec::new();
    for (path, source) in &files {
        if path == "controller/steps/mod.rs" {
            continue;
        }
        let module = module_of(path);
        let own = path.strip_prefix("controller/steps/").map(|rest| {
            rest.split('/')
                .next()
                .unwrap_or(rest)
                .trim_end_matches(".rs")
        });
        if let Some(own) = own
            && !steps.iter().any(|step| step == own)
        {
            found.push(format!(
                "{path} belongs to no step: put it in its step's folder"
            ));
            continue;
        }
        let resolved = resolved_paths(source, &module);
        for named in resolved.iter().filter_map(|p| named_step(p)) {
            match own {
                Some(own) if own != named && steps.iter().any(|step| step == named) => {
                    found.push(format!("{path} (step {own}) names step {named}"));
                }
                None if (path.as_str(), named) != DRIVER => {
                    found.push(format!("{path} names the steps (steps::{named})"));
                }
                _ => {}
            }
        }
        let executor =
            path == "controller/pass/executor.rs" || path.starts_with("controller/pass/executor/");
        if executor {
            let names_upgrade = resolved
                .iter()
                .any(|p| p.len() >= 2 && p[0] == "controller" && p[1] == "upgrade");
            if names_upgrade {
                found.push(format!("{path}: the executor names upgrade"));
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
    let module = module_of("controller/steps/bounce_processes/global_bounce.rs");
    assert_eq!(
        module,
        ["controller", "steps", "bounce_processes", "global_bounce"]
    );
    let named = |source: &str| -> Vec<String> {
        resolved_paths(source, &module)
            .iter()
            .filter_map(|p| named_step(p).map(String::from))
            .collect()
    };
    // Its own step, through its folder's `mod.rs`.
    assert_eq!(
        named("use super::{decide, Plan};"),
        ["bounce_processes", "bounce_processes"]
    );
    assert_eq!(named("x(super::super::remove_pods::a)"), ["remove_pods"]);
    assert_eq!(
        named("use super::super::{update_pods::decide, Step};"),
        ["update_pods", "Step"]
    );
    assert_eq!(
        named("crate::controller::steps::update_pods::x"),
        ["update_pods"]
    );
    assert_eq!(
        named("use crate::controller::steps::{exclude_instances, update_pods};"),
        ["exclude_instances", "update_pods"]
    );
    assert_eq!(
        named("use crate::controller::pass::plan::Verdict;"),
        Vec::<String>::new()
    );
    assert!(is_test_file("tests.rs") && is_test_file("remove_pods_tests.rs"));
    assert!(!is_test_file("global_bounce.rs"));
}
