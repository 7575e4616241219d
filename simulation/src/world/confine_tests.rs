//! Property tests of path confinement (issue 40): arbitrary names, namespaces and uids,
//! with `/`, `..`, NUL, spaces and non-ASCII, never yield a host path outside the world's
//! root: either the API refuses the identifier, or the directory built from it is one
//! plain element below the root, and the confined writes refuse every escape. A seeded
//! generator keeps every run the same (as `operator/src/fdb/fdbcli/property_tests.rs`).

use std::path::{Component, Path};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::kube::identity::identity_problem;

const RUNS: usize = 3000;

/// Pieces that climb, split or end paths, mixed with ordinary identifier text.
const PIECES: &[&str] = &[
    "a",
    "z",
    "0",
    "9",
    "-",
    ".",
    "..",
    "/",
    "../",
    "/..",
    "_",
    "\0",
    " ",
    "\n",
    "%2F",
    "é",
    "~",
    "*",
    "sample",
    "storage-1",
    "default",
    "00000000-0000-4000-8000-00000000000a",
    "x/../../../../victim",
    "/etc",
    "//",
    "./",
    "\\",
];

fn arbitrary(rng: &mut ChaCha8Rng) -> String {
    let pieces = rng.random_range(0..7);
    (0..pieces)
        .map(|_| PIECES[rng.random_range(0..PIECES.len())])
        .collect()
}

/// Whether `path` is lexically strictly below `root`.
fn lexically_inside(root: &Path, path: &Path) -> bool {
    path.strip_prefix(root).is_ok_and(|rest| {
        !rest.as_os_str().is_empty() && rest.components().all(|c| matches!(c, Component::Normal(_)))
    })
}

#[test]
fn arbitrary_identifiers_never_yield_a_path_outside_the_root() {
    let mut rng = ChaCha8Rng::seed_from_u64(40);
    let root = Path::new("/world/root");
    let mut accepted = 0;
    for _ in 0..RUNS {
        // Each identifier arbitrary, or valid half the time (so valid ones meet hostile ones).
        let mut pick = |valid: &str| {
            if rng.random_bool(0.5) {
                valid.to_owned()
            } else {
                arbitrary(&mut rng)
            }
        };
        let namespace = pick("default");
        let name = pick("sample-storage-1");
        let uid = pick("5f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9");
        for kind in ["pods", "pvcs"] {
            let dir = object_dir(root, kind, &[&namespace, &name, &uid]);
            assert!(
                lexically_inside(root, &dir) && dir.parent() == Some(&root.join(kind)),
                "{namespace:?} {name:?} {uid:?} -> {}",
                dir.display()
            );
        }
        // Every stored object has a uid (the server sets one when none is given).
        if !uid.is_empty()
            && identity_problem("Pod", true, &name, Some(&namespace), Some(&uid)).is_none()
        {
            accepted += 1;
            // What the API accepts is used as is: a plain element, the identifiers visible.
            assert_eq!(
                dir_name(&[&namespace, &name, &uid]),
                format!("{namespace}_{name}_{uid}")
            );
        }
    }
    // The generator does produce valid identities: the property is not vacuous.
    assert!(accepted > 0);
}

#[test]
fn confined_writes_refuse_every_escape_and_touch_nothing_outside() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().join("world");
    let victim = temp.path().join("victim");
    std::fs::create_dir_all(root.join("pods")).unwrap();
    std::fs::create_dir_all(&victim).unwrap();
    // A symlink inside the root leading out of it.
    std::os::unix::fs::symlink(&victim, root.join("pods").join("out")).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    for _ in 0..RUNS {
        let relative = arbitrary(&mut rng);
        let path = root.join("pods").join(&relative);
        let results = [
            create_dir_all(&root, &path.join("d")).is_ok(),
            write(&root, &path.join("f"), "x").is_ok(),
            remove_dir_all(&root, &path.join("d")).is_ok(),
        ];
        if results.iter().any(|ok| *ok) {
            let resolved = path.parent().unwrap().canonicalize().unwrap();
            assert!(
                resolved.starts_with(root.canonicalize().unwrap()),
                "{relative:?} acted at {}",
                resolved.display()
            );
        }
        assert!(
            std::fs::read_dir(&victim).unwrap().next().is_none(),
            "{relative:?} wrote outside the root"
        );
    }
    // The root itself is never removed, and nothing outside it.
    assert!(remove_dir_all(&root, &root).is_err());
    assert!(remove_dir_all(&root, &victim).is_err());
    assert!(remove_dir_all(&root, &root.join("pods/../../victim")).is_err());
    assert!(victim.is_dir() && root.is_dir());
    // A symlink in the root is removed as a link, not followed.
    remove_dir_all(&root, &root.join("pods").join("out")).unwrap();
    assert!(victim.is_dir());
}

#[test]
fn identifiers_that_are_not_plain_elements_are_hashed() {
    for parts in [
        ["default", "p", "x/../../../../victim"],
        ["..", "p", "u"],
        ["default", "", "u"],
        ["default", "p", "a\0b"],
    ] {
        let name = dir_name(&parts);
        assert!(name.starts_with("sha256-") && name.len() == 71, "{name}");
    }
    assert_eq!(dir_name(&["default", "p", "u"]), "default_p_u");
    assert_ne!(dir_name(&["a/b", "c", "d"]), dir_name(&["a", "b/c", "d"]));
}
