//! The ServiceAccount admission plugin as a real API server runs it on every pod create
//! (kubernetes/kubernetes `plugin/pkg/admission/serviceaccount/admission.go`): the pod
//! runs as the `default` service account unless it names one, and, unless
//! `automountServiceAccountToken: false`, gets a projected volume
//! `kube-api-access-<5 random characters>` (a bound token, the cluster's CA bundle and
//! the namespace) mounted read-only at [`TOKEN_MOUNT_PATH`] in every container and init
//! container that has nothing mounted there yet.

use serde_json::{Value, json};

/// Where the token volume is mounted (`DefaultAPITokenMountPath`).
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The token volume's name prefix (`ServiceAccountVolumeName`).
pub const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";
/// The bound token's lifetime the plugin asks for (one hour and seven seconds,
/// `WarnOnlyBoundTokenExpirationSeconds`).
const TOKEN_EXPIRATION_SECONDS: i64 = 3607;

/// Five characters of the API server's name alphabet for the token volume of the pod
/// created `serial`-th. Derived rather than drawn from the world's name generator: a
/// draw would shift every generated name after it, and seeded runs keep their names.
pub fn token_volume_suffix(serial: u64) -> String {
    let alphabet = super::generated_names::NAME_ALPHABET;
    let mut state = serial.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5851_f42d_4c95_7f2d;
    (0..5)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let index = usize::try_from(state >> 33).unwrap_or(0) % alphabet.len();
            char::from(alphabet[index])
        })
        .collect()
}

/// Names the service account and mounts its token; `suffix` makes the volume's name
/// (five characters, as the server's name generator draws them).
pub fn admit_service_account(pod: &mut Value, suffix: &str) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let account = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
        .unwrap_or("default")
        .to_owned();
    spec.insert("serviceAccountName".to_owned(), json!(account));
    // The deprecated field mirrors the name in what the server returns.
    spec.insert("serviceAccount".to_owned(), json!(account));
    if spec.get("automountServiceAccountToken") == Some(&json!(false)) {
        return;
    }
    let volume_name = format!("{TOKEN_VOLUME_PREFIX}{suffix}");
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut mounted = false;
    for list in ["initContainers", "containers"] {
        for container in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let mounts = container
                .as_object_mut()
                .map(|c| c.entry("volumeMounts").or_insert_with(|| json!([])));
            let Some(Value::Array(mounts)) = mounts else {
                continue;
            };
            let taken = mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH));
            if !taken {
                mounts.push(mount.clone());
                mounted = true;
            }
        }
    }
    if mounted {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if let Value::Array(volumes) = volumes {
            volumes.push(token_volume(&volume_name));
        }
    }
}

/// The projected volume of `TokenVolumeSource()` in the plugin.
fn token_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS,
                                         "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt",
                               "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_container_mounts_the_token_unless_the_pod_opts_out() {
        let mut pod = json!({"spec": {
            "initContainers": [{"name": "init"}],
            "containers": [{"name": "a", "volumeMounts": [{"name": "data", "mountPath": "/d"}]},
                           {"name": "b", "volumeMounts": [{"name": "own", "mountPath": TOKEN_MOUNT_PATH}]}],
            "volumes": [{"name": "data", "emptyDir": {}}]}});
        admit_service_account(&mut pod, "x2b9k");
        let spec = &pod["spec"];
        assert_eq!(spec["serviceAccountName"], "default");
        assert_eq!(spec["serviceAccount"], "default");
        let mount = json!({"name": "kube-api-access-x2b9k", "readOnly": true,
                           "mountPath": TOKEN_MOUNT_PATH});
        assert_eq!(spec["initContainers"][0]["volumeMounts"], json!([mount]));
        assert_eq!(spec["containers"][0]["volumeMounts"][1], mount);
        assert_eq!(
            spec["containers"][1]["volumeMounts"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        assert_eq!(spec["volumes"][1]["name"], "kube-api-access-x2b9k");
        assert_eq!(spec["volumes"][1]["projected"]["defaultMode"], 420);

        let mut opted_out = json!({"spec": {"serviceAccountName": "fdb",
            "automountServiceAccountToken": false, "containers": [{"name": "a"}]}});
        admit_service_account(&mut opted_out, "x2b9k");
        assert_eq!(opted_out["spec"]["serviceAccount"], "fdb");
        assert!(opted_out["spec"].get("volumes").is_none());
        assert!(
            opted_out["spec"]["containers"][0]
                .get("volumeMounts")
                .is_none()
        );
    }
}
