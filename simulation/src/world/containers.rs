//! Container filesystems and command lines: how a container's paths map to the world's
//! temporary directories, the fake image contents, and the sidecar's flags and env.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jiff::Timestamp;

use fdb_shared::FdbVersion;
use k8s_openapi::api::core::v1::{Container, Pod};
use sha2::{Digest, Sha256};

use super::confine;
use super::error::WorldError;

/// The container path flags of the sidecar that the world rewrites to host paths, with
/// the sidecar's default for each.
pub const SIDECAR_PATH_FLAGS: [(&str, Option<&str>); 8] = [
    ("--input-dir", Some("/var/input-files")),
    ("--output-dir", Some("/var/output-files")),
    ("--version-file", Some("/var/fdb/version")),
    ("--binary-dir", Some("/usr/bin")),
    ("--library-dir", Some("/var/fdb/lib")),
    ("--tls-certificate-file", None),
    ("--tls-key-file", None),
    ("--tls-ca-file", None),
];

/// The sidecar's environment variables that name container paths (its TLS files), which
/// the world rewrites to host paths like [`SIDECAR_PATH_FLAGS`].
pub const SIDECAR_PATH_ENV: [&str; 3] = [
    "FDB_TLS_CERTIFICATE_FILE",
    "FDB_TLS_KEY_FILE",
    "FDB_TLS_CA_FILE",
];

/// The binaries every fake FoundationDB image ships.
pub const IMAGE_BINARIES: [&str; 2] = ["fdbserver", "fdbcli"];

/// How a container's paths map to host paths: its volume mounts (longest mount path
/// wins), everything else in its image root.
#[derive(Debug, Clone)]
pub struct ContainerFs {
    root: PathBuf,
    image_root: PathBuf,
    mounts: Vec<(PathBuf, PathBuf)>,
}

impl ContainerFs {
    /// A filesystem of the world rooted at `root` (every write through it stays there:
    /// `world/confine.rs`) with the image at `image_root` and `mounts` (container path,
    /// host path).
    pub fn new(root: PathBuf, image_root: PathBuf, mut mounts: Vec<(PathBuf, PathBuf)>) -> Self {
        mounts.sort_by_key(|(at, _)| std::cmp::Reverse(at.components().count()));
        Self {
            root,
            image_root,
            mounts,
        }
    }

    /// The root of the world the container's host paths are in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The host path of an absolute container path (`None` for a relative path or one
    /// that climbs with `..`).
    pub fn host_path(&self, container_path: &str) -> Option<PathBuf> {
        let path = Path::new(container_path);
        if !path.is_absolute()
            || path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return None;
        }
        for (at, host) in &self.mounts {
            if let Ok(rest) = path.strip_prefix(at) {
                if rest.as_os_str().is_empty() {
                    return Some(host.clone());
                }
                return Some(host.join(rest));
            }
        }
        let rest = path.strip_prefix("/").ok()?;
        Some(self.image_root.join(rest))
    }
}

/// The FoundationDB version an image tag names: `foundationdb/foundationdb:7.1.57` and
/// `foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1` name 7.1.57.
pub fn image_version(image: &str) -> Option<FdbVersion> {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    let (_, tag) = last.rsplit_once(':')?;
    let version = tag.split('-').next().unwrap_or(tag);
    version.parse().ok()
}

/// The content of a fake binary of `version`.
pub fn binary_content(name: &str, version: &FdbVersion) -> String {
    format!("{name} {version}\n")
}

/// The version a fake binary names (its last word), if it is one.
pub fn binary_version(content: &str) -> Option<FdbVersion> {
    content.split_whitespace().last()?.parse().ok()
}

/// What a fake image holds (its files: `images.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageContents<'a> {
    /// The FoundationDB version it ships (`None`: not a FoundationDB image).
    pub version: Option<&'a FdbVersion>,
    /// Whether `usr/bin/fdbserver` and `usr/bin/fdbcli` are there (the `binaryMissing`
    /// fault takes them out).
    pub binaries: bool,
}

/// The image ID the kubelet reports for `image`: its repository and a digest derived from
/// the whole reference, so that another image (another tag) has another ID.
pub fn image_id(image: &str) -> String {
    let digest = hex::encode(Sha256::digest(image.as_bytes()));
    let without_digest = image.split('@').next().unwrap_or(image);
    let repository = match without_digest.rsplit_once(':') {
        // A colon after the last slash separates the tag (not a registry port).
        Some((repository, tag)) if !tag.contains('/') => repository,
        _ => without_digest,
    };
    format!("{repository}@sha256:{digest}")
}

/// Where a container sees a volume: `<pod dir>/containers/<container>/mounts/<volume>`, a
/// symlink to the volume's directory (one per container, like a bind mount, so that one
/// container's mount can break while the others keep working).
pub fn mount_link(pod_dir: &Path, container: &str, volume: &str) -> PathBuf {
    pod_dir
        .join("containers")
        .join(container)
        .join("mounts")
        .join(volume)
}

/// Makes `link` point at `target` (replacing whatever is there), both inside the world
/// rooted at `root`.
pub fn set_mount_link(root: &Path, link: &Path, target: &Path) -> Result<(), WorldError> {
    remove_mount_link(root, link)?;
    if let Some(parent) = link.parent() {
        confine::create_dir_all(root, parent)?;
    }
    confine::symlink(root, target, link)
}

/// Replaces `link` with a regular file: every path through it then fails with "not a
/// directory", for reads and writes alike, even for root (the `outputNotWritable` fault).
pub fn break_mount_link(root: &Path, link: &Path) -> Result<(), WorldError> {
    remove_mount_link(root, link)?;
    confine::write(root, link, "volume unavailable (simulated fault)\n")
}

fn remove_mount_link(root: &Path, link: &Path) -> Result<(), WorldError> {
    match std::fs::symlink_metadata(link) {
        Ok(meta) if meta.is_dir() => confine::remove_dir_all(root, link),
        Ok(_) => std::fs::remove_file(link).map_err(WorldError::io("remove", link)),
        Err(_) => Ok(()),
    }
}

/// The host path of a mount with `subPath`: `None` for a sub path that is not plain
/// elements (the API refuses those: `kube/validation.rs`; the kubelet never mounts one).
pub fn sub_path_host(dir: &Path, sub_path: Option<&str>) -> Option<PathBuf> {
    match sub_path.filter(|s| !s.is_empty()) {
        None => Some(dir.to_path_buf()),
        Some(sub) => Path::new(sub)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
            .then(|| dir.join(sub)),
    }
}

/// A sidecar container's output dir (`--output-dir`, default `/var/output-files`).
pub fn output_dir_path(container: &Container) -> String {
    let words: Vec<&String> = container
        .command
        .iter()
        .flatten()
        .chain(container.args.iter().flatten())
        .collect();
    let mut output = "/var/output-files".to_owned();
    let mut iter = words.iter();
    while let Some(word) = iter.next() {
        if let Some(value) = word.strip_prefix("--output-dir=") {
            output = value.to_owned();
        } else if *word == "--output-dir"
            && let Some(value) = iter.next()
        {
            output = (*value).clone();
        }
    }
    output
}

/// The volume a sidecar container's output dir is on: the mount with the longest
/// matching path.
pub fn output_dir_volume(container: &Container) -> Option<String> {
    let output = output_dir_path(container);
    container
        .volume_mounts
        .iter()
        .flatten()
        .filter(|m| Path::new(&output).starts_with(&m.mount_path))
        .max_by_key(|m| Path::new(&m.mount_path).components().count())
        .map(|m| m.name.clone())
}

/// What `valueFrom.fieldRef` and plain values resolve against.
#[derive(Debug, Clone)]
pub struct PodFacts<'a> {
    /// The pod.
    pub pod: &'a Pod,
    /// The pod IP (`status.podIP`, the primary family's).
    pub pod_ip: String,
    /// The pod IPs as the downward API gives `status.podIPs`: comma-separated, primary
    /// first.
    pub pod_ips: String,
    /// The node.
    pub node: String,
}

/// A container's environment: plain values and `fieldRef`s (`status.podIP`,
/// `status.podIPs`, `metadata.name`, `metadata.namespace`, `metadata.uid`,
/// `spec.nodeName`, `metadata.labels['x']`, `metadata.annotations['x']`); `HOSTNAME` is
/// the pod name. Sources the world cannot resolve (secrets, config map keys, resources)
/// leave the variable unset.
pub fn container_env(container: &Container, facts: &PodFacts<'_>) -> BTreeMap<String, String> {
    let meta = &facts.pod.metadata;
    let mut env = BTreeMap::new();
    env.insert("HOSTNAME".to_owned(), meta.name.clone().unwrap_or_default());
    for var in container.env.iter().flatten() {
        let value = if let Some(value) = &var.value {
            Some(value.clone())
        } else if let Some(field) = var.value_from.as_ref().and_then(|v| v.field_ref.as_ref()) {
            field_value(&field.field_path, facts)
        } else if var.value_from.is_none() {
            Some(String::new())
        } else {
            None
        };
        if let Some(value) = value {
            env.insert(var.name.clone(), value);
        }
    }
    env
}

fn field_value(path: &str, facts: &PodFacts<'_>) -> Option<String> {
    let meta = &facts.pod.metadata;
    let keyed = |prefix: &str, map: &Option<BTreeMap<String, String>>| {
        let key = path.strip_prefix(prefix)?.strip_suffix("']")?;
        map.as_ref()?.get(key).cloned()
    };
    match path {
        "status.podIP" => Some(facts.pod_ip.clone()),
        "status.podIPs" => Some(facts.pod_ips.clone()),
        "metadata.name" => meta.name.clone(),
        "metadata.namespace" => meta.namespace.clone(),
        "metadata.uid" => meta.uid.clone(),
        "spec.nodeName" => Some(facts.node.clone()),
        "spec.serviceAccountName" => facts.pod.spec.as_ref()?.service_account_name.clone(),
        _ if path.starts_with("metadata.labels['") => keyed("metadata.labels['", &meta.labels),
        _ if path.starts_with("metadata.annotations['") => {
            keyed("metadata.annotations['", &meta.annotations)
        }
        _ => None,
    }
}

/// The sidecar's arguments with its container path flags rewritten to host paths (or
/// added with the mapped default), and `--bind-address <bind>` instead of any given.
pub fn sidecar_args(args: &[String], fs: &ContainerFs, bind: &str) -> Vec<String> {
    let mut given: BTreeMap<&str, String> = BTreeMap::new();
    let mut out = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag, Some(value.to_owned())),
            None => (arg.as_str(), None),
        };
        let known = SIDECAR_PATH_FLAGS
            .iter()
            .map(|(f, _)| *f)
            .chain(std::iter::once("--bind-address"))
            .find(|f| *f == flag);
        match known {
            Some(known) => {
                let value = inline.or_else(|| iter.next().cloned()).unwrap_or_default();
                given.insert(known, value);
            }
            None => out.push(arg.clone()),
        }
    }
    for (flag, default) in SIDECAR_PATH_FLAGS {
        let container_path = given.get(flag).cloned().or(default.map(str::to_owned));
        if let Some(container_path) = container_path {
            let host = fs
                .host_path(&container_path)
                .map_or(container_path, |p| p.display().to_string());
            out.push(flag.to_owned());
            out.push(host);
        }
    }
    out.push("--bind-address".to_owned());
    out.push(bind.to_owned());
    out
}

/// Where fdbmonitor reads its conf unless `--conffile` says otherwise.
pub const DEFAULT_CONF_FILE: &str = "/var/dynamic-conf/fdbmonitor.conf";

/// A container's image root in the pod directory.
pub fn image_root(pod_dir: &Path, container: &str) -> PathBuf {
    pod_dir.join("containers").join(container).join("image")
}

/// The `--conffile` fdbmonitor is started with.
pub fn conf_file_arg(main: &Container) -> String {
    let words: Vec<String> = main
        .command
        .iter()
        .flatten()
        .chain(main.args.iter().flatten())
        .cloned()
        .collect();
    let mut iter = words.iter();
    while let Some(word) = iter.next() {
        if let Some(value) = word.strip_prefix("--conffile=") {
            return value.to_owned();
        }
        if word == "--conffile"
            && let Some(value) = iter.next()
        {
            return value.clone();
        }
    }
    DEFAULT_CONF_FILE.to_owned()
}

/// The name of a projected version's directory (`..2026_01_01_00_00_00.3`).
pub fn stamp(seen_at: Timestamp, sequence: u64) -> String {
    format!("{}.{sequence}", seen_at.strftime("%Y_%m_%d_%H_%M_%S"))
}

/// Whether the pod's container `name` runs buggify's `crash-loop` command (it fails at
/// every start, as a missing binary would in a real container).
pub fn container_crash_loops(pod: &Pod, name: &str) -> bool {
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .any(|c| c.name == name && fdb_operator::controller::crash_loops(c.command.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_tags_name_versions() {
        assert_eq!(
            image_version("foundationdb/foundationdb:7.1.57").map(|v| v.to_string()),
            Some("7.1.57".into())
        );
        assert_eq!(
            image_version("registry:5000/foundationdb/foundationdb-kubernetes-sidecar:7.3.43-1")
                .map(|v| v.to_string()),
            Some("7.3.43".into())
        );
        assert_eq!(image_version("busybox"), None);
        assert_eq!(image_version("busybox:latest"), None);
    }

    #[test]
    fn image_ids_follow_the_image() {
        let a = image_id("foundationdb/foundationdb:7.1.57");
        let b = image_id("foundationdb/foundationdb:7.3.43");
        assert!(a.starts_with("foundationdb/foundationdb@sha256:"), "{a}");
        assert_ne!(a, b);
        assert!(image_id("registry:5000/fdb").starts_with("registry:5000/fdb@sha256:"));
    }

    #[test]
    fn the_output_dir_volume_is_the_longest_matching_mount() {
        let container: Container = serde_json::from_value(serde_json::json!({
            "name": "s", "args": ["--output-dir", "/var/out/x"],
            "volumeMounts": [{"name": "a", "mountPath": "/var"}, {"name": "b", "mountPath": "/var/out"}]
        }))
        .unwrap();
        assert_eq!(output_dir_volume(&container).as_deref(), Some("b"));
    }

    #[test]
    fn paths_map_to_the_longest_mount_then_the_image() {
        let fs = ContainerFs::new(
            "/tmp".into(),
            "/tmp/img".into(),
            vec![
                ("/var".into(), "/tmp/var".into()),
                ("/var/dynamic-conf".into(), "/tmp/out".into()),
            ],
        );
        assert_eq!(
            fs.host_path("/var/dynamic-conf/bin/7.3.43/fdbserver"),
            Some("/tmp/out/bin/7.3.43/fdbserver".into())
        );
        assert_eq!(
            fs.host_path("/var/fdb/data"),
            Some("/tmp/var/fdb/data".into())
        );
        assert_eq!(
            fs.host_path("/usr/bin/fdbserver"),
            Some("/tmp/img/usr/bin/fdbserver".into())
        );
        assert_eq!(fs.host_path("/var/../etc/passwd"), None);
        assert_eq!(fs.host_path("relative"), None);
    }

    #[test]
    fn sidecar_path_flags_are_rewritten() {
        let fs = ContainerFs::new(
            "/".into(),
            "/img".into(),
            vec![
                ("/var/input-files".into(), "/h/in".into()),
                ("/var/output-files".into(), "/h/out".into()),
            ],
        );
        let args: Vec<String> = [
            "--copy-file",
            "fdb.cluster",
            "--input-dir=/var/input-files",
            "--bind-address",
            "1.2.3.4:1",
        ]
        .map(String::from)
        .to_vec();
        let out = sidecar_args(&args, &fs, "127.0.1.1:8080");
        let text = out.join(" ");
        assert!(text.starts_with("--copy-file fdb.cluster --input-dir /h/in --output-dir /h/out --version-file /img/var/fdb/version"), "{text}");
        assert!(text.ends_with("--bind-address 127.0.1.1:8080"), "{text}");
        assert!(!text.contains("1.2.3.4"));
    }
}
