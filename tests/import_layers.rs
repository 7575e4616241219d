//! No production file of a workspace crate imports a file of the same crate that
//! imports it back (issue 20): each file's `crate::...` and `super::...` paths are resolved to the module file
//! they name, and the import graph must have no cycle. A cycle is printed with its edges,
//! so the message says which import to move (docs/architecture.md, "Import layers").
//! Test modules (`#[cfg(test)] mod tests`) are left out: tests may look anywhere.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// Every `.rs` file under `root`, by its module path (`controller::pass::io`).
fn modules(root: &Path) -> BTreeMap<Module, PathBuf> {
    let mut found = BTreeMap::new();
    for path in fdb_e2e_tests::rust_files(root) {
        let relative = path.strip_prefix(root).unwrap().with_extension("");
        let mut module: Module = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(
            module.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            module.pop();
        }
        found.insert(module, path);
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

/// The `a::b::c` path words after each occurrence of `prefix` (`crate::`, `super::`).
fn paths_after(source: &str, prefix: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = source;
    let mut offset = 0;
    while let Some(at) = rest.find(prefix) {
        let start = offset + at;
        let before = source[..start].chars().next_back();
        let word_boundary = before.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        // `super::super::x` counts the supers: report how many.
        let mut supers = 1;
        let mut tail = &source[start + prefix.len()..];
        while prefix == "super::" && tail.starts_with("super::") {
            supers += 1;
            tail = &tail["super::".len()..];
        }
        let mut words = Vec::new();
        for part in tail.split("::") {
            let word: String = part
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if word.is_empty() {
                break;
            }
            let whole = word.len() == part.len();
            words.push(word);
            if !whole {
                break;
            }
        }
        if word_boundary && !words.is_empty() {
            out.push((supers, words));
        }
        let consumed = start + prefix.len() - offset;
        rest = &rest[consumed..];
        offset += consumed;
    }
    out
}

/// The longest module that `path` starts with.
fn resolve(modules: &BTreeMap<Module, PathBuf>, path: &[String]) -> Option<Module> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|candidate| modules.contains_key(candidate))
}

fn import_graph(root: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let modules = modules(root);
    let mut graph = BTreeMap::new();
    for (module, path) in &modules {
        let source = production_source(path);
        let mut targets = BTreeSet::new();
        let is_ancestor = |target: &Module| module.starts_with(target);
        for (_, words) in paths_after(&source, "crate::") {
            if let Some(target) = resolve(&modules, &words)
                && &target != module
                && !is_ancestor(&target)
            {
                targets.insert(target);
            }
        }
        for (supers, words) in paths_after(&source, "super::") {
            let Some(keep) = module.len().checked_sub(supers) else {
                continue;
            };
            let mut full: Vec<String> = module[..keep].to_vec();
            full.extend(words);
            if let Some(target) = resolve(&modules, &full)
                && &target != module
                && !is_ancestor(&target)
            {
                targets.insert(target);
            }
        }
        graph.insert(module.clone(), targets);
    }
    graph
}

/// Strongly connected components of more than one module (Tarjan, iterative).
fn cycles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    let nodes: Vec<&Module> = graph.keys().collect();
    let position: BTreeMap<&Module, usize> =
        nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let edges: Vec<Vec<usize>> = nodes
        .iter()
        .map(|m| {
            graph[*m]
                .iter()
                .filter_map(|t| position.get(t).copied())
                .collect()
        })
        .collect();
    let count = nodes.len();
    let (mut index, mut low) = (vec![usize::MAX; count], vec![0; count]);
    let (mut on_stack, mut stack, mut next) = (vec![false; count], Vec::new(), 0);
    let mut found = Vec::new();
    for root in 0..count {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut child)) = work.last_mut() {
            if *child == 0 && index[v] == usize::MAX {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = edges[v].get(*child) {
                *child += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(nodes[w].clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    found.push(component);
                }
            }
        }
    }
    found
}

fn describe(graph: &BTreeMap<Module, BTreeSet<Module>>, cycles: &[Vec<Module>]) -> String {
    let mut text = String::new();
    for component in cycles {
        text.push_str(&format!("{} files import each other:\n", component.len()));
        for from in component {
            for to in &graph[from] {
                if component.contains(to) {
                    text.push_str(&format!("  {} -> {}\n", from.join("::"), to.join("::")));
                }
            }
        }
    }
    text
}

/// The crates whose production files must not import in a circle, with the least number
/// of files the walk must find in each (so a moved folder cannot pass by finding nothing).
const CRATES: &[(&str, usize)] = &[
    ("shared", 40),
    ("operator", 50),
    ("simulation", 60),
    ("sidecar", 10),
    ("kubectl-fdb", 10),
    ("cli", 4),
    ("bounded-http", 3),
];

#[test]
fn no_production_file_of_a_crate_imports_in_a_circle() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut report = String::new();
    for (name, least) in CRATES {
        let root = workspace.join(name).join("src");
        let graph = import_graph(&root);
        assert!(graph.len() >= *least, "the walk found {name}'s files");
        let found = cycles(&graph);
        if !found.is_empty() {
            report.push_str(&format!("crate {name}:\n{}", describe(&graph, &found)));
        }
    }
    assert!(report.is_empty(), "{report}");
}

#[test]
fn a_circle_is_found_and_named() {
    let dir = std::env::temp_dir().join(format!("import-layers-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("a")).unwrap();
    std::fs::write(dir.join("lib.rs"), "pub mod a;\npub mod c;\n").unwrap();
    std::fs::write(dir.join("a/mod.rs"), "pub mod b;\nuse crate::c::Thing;\n").unwrap();
    std::fs::write(dir.join("a/b.rs"), "use super::super::c::Other;\n").unwrap();
    std::fs::write(
        dir.join("c.rs"),
        "use crate::a::b::X;\n#[cfg(test)]\nmod tests { use crate::a::Y; }\n",
    )
    .unwrap();
    let graph = import_graph(&dir);
    let found = cycles(&graph);
    std::fs::remove_dir_all(&dir).unwrap();
    // a::b -> c -> a::b is a circle; a -> c is one way (c's test module does not count).
    assert_eq!(found.len(), 1, "{found:?}");
    let names: Vec<String> = found[0].iter().map(|m| m.join("::")).collect();
    assert_eq!(names, ["a::b", "c"]);
    assert!(describe(&graph, &found).contains("a::b -> c"));
}
