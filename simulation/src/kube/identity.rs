//! An object's identity (name, namespace, uid) checked as a real API server checks it,
//! before anything is stored: the world builds host paths from these identifiers
//! (`world/kubelet.rs`, `<namespace>_<name>_<uid>`), so an identifier that is not what a
//! real server would ever hold must never get that far (issue 40).
//!
//! - names: a DNS-1035 label for Services, a DNS-1123 label for Namespaces, a DNS-1123
//!   subdomain for every other kind (the real server's `ValidateObjectMeta`);
//! - namespaces: a DNS-1123 label (`ValidateNamespaceName`);
//! - uids: the form the real server generates (`uuid.NewUUID()`: 8-4-4-4-12 hexadecimal
//!   digits). A client never sets a uid on create; a snapshot restores captured ones.

use fdb_shared::validation::names::{
    dns1035_label_error, dns1123_label_error, dns1123_subdomain_error,
};

/// Why `name` is not a valid name of an object of `kind` (`core`: of the core API group,
/// `apiVersion: v1`), `None` when it is one.
pub fn name_error(kind: &str, core: bool, name: &str) -> Option<String> {
    match (core, kind) {
        (true, "Service") => dns1035_label_error(name),
        (true, "Namespace") => dns1123_label_error(name),
        _ => dns1123_subdomain_error(name),
    }
}

/// Why `namespace` is not a valid namespace name, `None` when it is one.
pub fn namespace_error(namespace: &str) -> Option<String> {
    dns1123_label_error(namespace)
}

/// The lengths of the groups of a uid, as the real server writes them.
const UID_GROUPS: [usize; 5] = [8, 4, 4, 4, 12];

/// Why `uid` is not a uid as a real server generates it, `None` when it is one.
pub fn uid_error(uid: &str) -> Option<String> {
    let groups: Vec<&str> = uid.split('-').collect();
    let valid = groups.len() == UID_GROUPS.len()
        && groups
            .iter()
            .zip(UID_GROUPS)
            .all(|(group, len)| group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit()));
    (!valid).then(|| {
        "must be a UUID as the API server generates it: 8-4-4-4-12 hexadecimal digits \
         (e.g. '0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9')"
            .to_owned()
    })
}

/// The first problem of an object's identity as `(field, problem)`: `metadata.name`,
/// `metadata.namespace` (when `namespace` is given) or `metadata.uid` (when `uid` is
/// given, and not empty).
pub fn identity_problem(
    kind: &str,
    core: bool,
    name: &str,
    namespace: Option<&str>,
    uid: Option<&str>,
) -> Option<(&'static str, String)> {
    if let Some(problem) = name_error(kind, core, name) {
        return Some(("metadata.name", problem));
    }
    if let Some(problem) = namespace.and_then(namespace_error) {
        return Some(("metadata.namespace", problem));
    }
    uid.filter(|u| !u.is_empty())
        .and_then(uid_error)
        .map(|problem| ("metadata.uid", problem))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_are_what_a_real_server_generates() {
        assert_eq!(uid_error("00000000-0000-4000-8000-00000000000a"), None);
        assert_eq!(uid_error("5F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9"), None);
        for bad in [
            "",
            "x/../../../../victim",
            "..",
            "00000000-0000-4000-8000-00000000000",
            "00000000-0000-4000-8000-00000000000g",
            "00000000-0000-4000-8000-00000000000a-0",
            "00000000/0000-4000-8000-00000000000a",
        ] {
            assert!(uid_error(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn namespaces_are_labels_and_names_follow_their_kind() {
        assert_eq!(namespace_error("default"), None);
        for bad in ["", "..", "../x", "a/b", "a.b", "A", "a_b"] {
            assert!(namespace_error(bad).is_some(), "{bad:?}");
        }
        assert_eq!(name_error("Pod", true, "sample.storage-1"), None);
        assert!(name_error("Pod", true, "..").is_some());
        assert!(name_error("Service", true, "1abc").is_some());
        assert_eq!(name_error("Service", false, "1abc"), None);
        assert_eq!(
            identity_problem("Pod", true, "p", Some("default"), Some("x/..")).map(|p| p.0),
            Some("metadata.uid")
        );
        assert_eq!(
            identity_problem("Pod", true, "p", Some("../x"), Some("x/..")).map(|p| p.0),
            Some("metadata.namespace")
        );
    }
}
