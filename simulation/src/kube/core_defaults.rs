//! The core v1 defaults a real API server fills into pods, claims and services on their
//! way in, so that objects read back from the world look exactly as a real server
//! returns them. Each rule is a `SetDefaults_*` function of kubernetes/kubernetes
//! `pkg/apis/core/v1/defaults.go` (and the declarative defaults of `k8s.io/api/core/v1`,
//! e.g. a container port's `protocol: TCP`), plus the Priority admission plugin
//! (`plugin/pkg/admission/priority`: priority 0 without a priority class).

use serde_json::{Map, Value, json};

use super::quantity::canonicalize_resource_list;

/// `v1.DefaultTerminationGracePeriodSeconds`.
const TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;
/// The mode of ConfigMap, Secret, downward API and projected volumes (`0644`).
const DEFAULT_VOLUME_MODE: i64 = 420;

/// Inserts `value` at `key` when the object has no value there.
fn default(object: &mut Map<String, Value>, key: &str, value: Value) {
    if object.get(key).is_none_or(Value::is_null) {
        object.insert(key.to_owned(), value);
    }
}

/// The objects of the list at `key`, if there is one (items that are not objects are
/// passed over, as the server's decoder would refuse them elsewhere).
fn objects_in<'a>(
    object: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    object
        .get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// A pod's defaults: `SetDefaults_Pod`, `SetDefaults_PodSpec`, and those of its
/// containers, volumes, probes and resource lists.
pub fn default_pod(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    default(spec, "dnsPolicy", json!("ClusterFirst"));
    default(spec, "restartPolicy", json!("Always"));
    default(spec, "securityContext", json!({}));
    default(
        spec,
        "terminationGracePeriodSeconds",
        json!(TERMINATION_GRACE_PERIOD_SECONDS),
    );
    default(spec, "schedulerName", json!("default-scheduler"));
    default(spec, "enableServiceLinks", json!(true));
    if spec.get("priorityClassName").is_none_or(Value::is_null) {
        default(spec, "priority", json!(0));
    }
    default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    for list in ["initContainers", "containers"] {
        for container in objects_in(spec, list) {
            default_container(container);
        }
    }
    for volume in objects_in(spec, "volumes") {
        default_volume(volume);
    }
}

/// `SetDefaults_Container`, requests copied from limits (`SetDefaults_Pod`), ports,
/// probes and field references.
fn default_container(container: &mut Map<String, Value>) {
    let tag_is_latest = container
        .get("image")
        .and_then(Value::as_str)
        .is_none_or(|image| image_tag(image) == "latest");
    let pull = if tag_is_latest {
        "Always"
    } else {
        "IfNotPresent"
    };
    default(container, "imagePullPolicy", json!(pull));
    default(
        container,
        "terminationMessagePath",
        json!("/dev/termination-log"),
    );
    default(container, "terminationMessagePolicy", json!("File"));
    if let Some(resources) = container
        .get_mut("resources")
        .and_then(Value::as_object_mut)
    {
        default_resources(resources);
    } else {
        container.insert("resources".to_owned(), json!({}));
    }
    for port in objects_in(container, "ports") {
        default(port, "protocol", json!("TCP"));
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = container.get_mut(probe).and_then(Value::as_object_mut) {
            default_probe(probe);
        }
    }
    for variable in objects_in(container, "env") {
        if let Some(field) = variable
            .get_mut("valueFrom")
            .and_then(|from| from.get_mut("fieldRef"))
            .and_then(Value::as_object_mut)
        {
            default(field, "apiVersion", json!("v1"));
        }
    }
}

/// The tag of an image reference, `latest` when it has none (as
/// `parsers.ParseImageName` reads it); a digest reference has no tag.
fn image_tag(image: &str) -> &str {
    if image.contains('@') {
        return "";
    }
    let last_segment = image.rsplit('/').next().unwrap_or(image);
    match last_segment.rsplit_once(':') {
        Some((_, tag)) => tag,
        None => "latest",
    }
}

/// Requests default to limits where unset; both in canonical form.
fn default_resources(resources: &mut Map<String, Value>) {
    if let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() {
        let requests = resources
            .entry("requests")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        if let Some(requests) = requests {
            for (key, value) in limits {
                requests.entry(key).or_insert(value);
            }
        }
    }
    for list in ["limits", "requests"] {
        if let Some(list) = resources.get_mut(list) {
            canonicalize_resource_list(list);
        }
    }
}

/// `SetDefaults_Probe` and `SetDefaults_HTTPGetAction`.
fn default_probe(probe: &mut Map<String, Value>) {
    default(probe, "timeoutSeconds", json!(1));
    default(probe, "periodSeconds", json!(10));
    default(probe, "successThreshold", json!(1));
    default(probe, "failureThreshold", json!(3));
    if let Some(get) = probe.get_mut("httpGet").and_then(Value::as_object_mut) {
        default(get, "path", json!("/"));
        default(get, "scheme", json!("HTTP"));
    }
}

/// `SetDefaults_Volume` (an empty source is an emptyDir) and the default modes.
fn default_volume(volume: &mut Map<String, Value>) {
    let has_source = volume.keys().any(|key| key != "name");
    if !has_source {
        volume.insert("emptyDir".to_owned(), json!({}));
    }
    for source in ["configMap", "secret", "downwardAPI", "projected"] {
        if let Some(source) = volume.get_mut(source).and_then(Value::as_object_mut) {
            default(source, "defaultMode", json!(DEFAULT_VOLUME_MODE));
        }
    }
    if let Some(host_path) = volume.get_mut("hostPath").and_then(Value::as_object_mut) {
        default(host_path, "type", json!(""));
    }
}

/// The default storage class of a cluster that names none (`world.storageClasses`).
pub const DEFAULT_STORAGE_CLASS: &str = "standard";

/// A claim's defaults: `SetDefaults_PersistentVolumeClaimSpec` (`volumeMode`), the
/// DefaultStorageClass admission plugin (`plugin/pkg/admission/storage/storageclass/
/// setdefault`: the default class when none is named), canonical requests.
pub fn default_claim(claim: &mut Value, default_class: Option<&str>) {
    let Some(spec) = claim.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    default(spec, "volumeMode", json!("Filesystem"));
    if let Some(class) = default_class
        && !spec.contains_key("storageClassName")
    {
        spec.insert("storageClassName".to_owned(), json!(class));
    }
    if let Some(resources) = spec.get_mut("resources").and_then(Value::as_object_mut) {
        for list in ["limits", "requests"] {
            if let Some(list) = resources.get_mut(list) {
                canonicalize_resource_list(list);
            }
        }
    }
}

/// A service's port defaults (`SetDefaults_Service`): `sessionAffinity: None`, each
/// port's `protocol: TCP` and `targetPort` its port, `internalTrafficPolicy: Cluster`
/// for the types that route inside the cluster.
pub fn default_service(service: &mut Value) {
    let Some(spec) = service.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    default(spec, "sessionAffinity", json!("None"));
    for port in objects_in(spec, "ports") {
        default(port, "protocol", json!("TCP"));
        let number = port.get("port").cloned().unwrap_or(Value::Null);
        let unset = port
            .get("targetPort")
            .is_none_or(|t| t.is_null() || *t == json!(0) || *t == json!(""));
        if unset && !number.is_null() {
            port.insert("targetPort".to_owned(), number);
        }
    }
    let internal = matches!(
        spec.get("type").and_then(Value::as_str),
        None | Some("ClusterIP" | "NodePort" | "LoadBalancer")
    );
    if internal {
        default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_gets_the_core_defaults() {
        let mut pod = json!({"spec": {
            "containers": [{"name": "main", "image": "foundationdb/foundationdb:7.1.57",
                "ports": [{"containerPort": 4501}],
                "resources": {"limits": {"cpu": "0.5", "memory": "1024Mi"}},
                "readinessProbe": {"httpGet": {"port": 8080}},
                "env": [{"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]}],
            "initContainers": [{"name": "init", "image": "busybox"}],
            "volumes": [{"name": "conf", "configMap": {"name": "c"}}, {"name": "scratch"}]}});
        default_pod(&mut pod);
        let spec = &pod["spec"];
        assert_eq!(spec["dnsPolicy"], "ClusterFirst");
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["securityContext"], json!({}));
        assert_eq!(spec["terminationGracePeriodSeconds"], 30);
        assert_eq!(spec["schedulerName"], "default-scheduler");
        assert_eq!(spec["enableServiceLinks"], true);
        assert_eq!(spec["priority"], 0);
        let main = &spec["containers"][0];
        assert_eq!(main["imagePullPolicy"], "IfNotPresent");
        assert_eq!(main["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(main["terminationMessagePolicy"], "File");
        assert_eq!(main["ports"][0]["protocol"], "TCP");
        assert_eq!(
            main["resources"],
            json!({"limits": {"cpu": "500m", "memory": "1Gi"},
                   "requests": {"cpu": "500m", "memory": "1Gi"}})
        );
        assert_eq!(
            main["readinessProbe"],
            json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
                   "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                   "failureThreshold": 3})
        );
        assert_eq!(main["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(spec["initContainers"][0]["imagePullPolicy"], "Always");
        assert_eq!(spec["initContainers"][0]["resources"], json!({}));
        assert_eq!(spec["volumes"][0]["configMap"]["defaultMode"], 420);
        assert_eq!(spec["volumes"][1]["emptyDir"], json!({}));
    }

    #[test]
    fn image_tags_are_read_as_the_server_reads_them() {
        assert_eq!(image_tag("busybox"), "latest");
        assert_eq!(image_tag("registry:5000/fdb/foundationdb"), "latest");
        assert_eq!(image_tag("registry:5000/fdb/foundationdb:7.3.43"), "7.3.43");
        assert_eq!(image_tag("fdb@sha256:abc"), "");
    }

    #[test]
    fn claims_and_services_get_theirs() {
        let mut claim = json!({"spec": {"resources": {"requests": {"storage": "0.5Gi"}}}});
        default_claim(&mut claim, Some("standard"));
        assert_eq!(
            claim["spec"],
            json!({"volumeMode": "Filesystem", "storageClassName": "standard",
                   "resources": {"requests": {"storage": "512Mi"}}})
        );
        let mut service = json!({"spec": {"ports": [{"port": 4501, "name": "tls"}]}});
        default_service(&mut service);
        assert_eq!(
            service["spec"],
            json!({"sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                   "ports": [{"port": 4501, "name": "tls", "protocol": "TCP",
                              "targetPort": 4501}]})
        );
    }
}
