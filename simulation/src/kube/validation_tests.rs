use jiff::Timestamp;
use serde_json::json;

use super::*;
use crate::kube::store::State;

fn kind(plural: &str, kind: &str) -> ResourceType {
    ResourceType::new("", "v1", plural, kind, plural != "namespaces", false)
}

/// The 422's message, or a panic when the object is accepted.
fn refused(resource: &ResourceType, name: &str, object: &Value) -> String {
    let error = validate_object(resource, name, object, true).expect_err("accepted");
    assert_eq!((error.code, error.reason.as_str()), (422, "Invalid"));
    error.message
}

#[test]
fn names_follow_the_rule_of_their_kind() {
    let object = json!({"metadata": {}});
    let services = kind("services", "Service");
    let namespaces = kind("namespaces", "Namespace");
    let pods = kind("pods", "Pod");
    assert!(validate_object(&pods, "a.b-1", &object, true).is_ok());
    assert!(refused(&pods, "Upper", &object).contains("metadata.name: Invalid value"));
    assert!(refused(&pods, &"a".repeat(254), &object).contains("no more than 253"));
    assert!(validate_object(&services, "sample", &object, true).is_ok());
    assert!(refused(&services, "1sample", &object).contains("DNS-1035"));
    assert!(refused(&services, "a.b", &object).contains("DNS-1035"));
    assert!(refused(&services, &"a".repeat(64), &object).contains("no more than 63"));
    assert!(refused(&namespaces, "a.b", &object).contains("RFC 1123 label"));
    // Names are immutable: updates do not look at them again.
    assert!(validate_object(&services, "1sample", &object, false).is_ok());
}

#[test]
fn generate_name_may_end_in_a_dash_but_must_otherwise_be_a_name() {
    let pods = kind("pods", "Pod");
    let ok = json!({"metadata": {"generateName": "sample-"}});
    assert!(validate_object(&pods, "sample-abcde", &ok, true).is_ok());
    let bad = json!({"metadata": {"generateName": "Sample_"}});
    assert!(refused(&pods, "sample-abcde", &bad).contains("metadata.generateName"));
}

#[test]
fn label_keys_and_values_are_checked() {
    let pods = kind("pods", "Pod");
    let labeled = |key: &str, value: &str| json!({"metadata": {"labels": {key: value}}});
    assert!(
        validate_object(
            &pods,
            "p",
            &labeled("foundationdb.org/fdb-cluster-name", "Sample_1.x"),
            true
        )
        .is_ok()
    );
    assert!(validate_object(&pods, "p", &labeled("k", ""), true).is_ok());
    let long = "a".repeat(64);
    for (key, value, needle) in [
        ("k", long.as_str(), "no more than 63"),
        ("k", "a;b", "a valid label"),
        ("k", "-a", "a valid label"),
        ("Bad_Prefix/k", "v", "prefix part"),
        ("/k", "v", "prefix part must be non-empty"),
        ("a/", "v", "name part must be non-empty"),
        (long.as_str(), "v", "name part must be no more than 63"),
        ("a b", "v", "name part must consist"),
    ] {
        let message = refused(&pods, "p", &labeled(key, value));
        assert!(message.contains("metadata.labels"), "{message}");
        assert!(message.contains(needle), "{key:?}={value:?}: {message}");
    }
    // Updates are checked too.
    assert!(validate_object(&pods, "p", &labeled("k", "a;b"), false).is_err());
}

#[test]
fn annotations_are_limited_to_256_kib_in_total() {
    let pods = kind("pods", "Pod");
    let half = "x".repeat(MAX_ANNOTATIONS_BYTES / 2);
    let fits = json!({"metadata": {"annotations": {"a": half, "b": "x".repeat(MAX_ANNOTATIONS_BYTES / 2 - 2)}}});
    assert!(validate_object(&pods, "p", &fits, true).is_ok());
    let over = json!({"metadata": {"annotations": {"a": half, "b": half}}});
    assert!(refused(&pods, "p", &over).contains("metadata.annotations: Too long"));
    let bad_key = json!({"metadata": {"annotations": {"a b": "v"}}});
    assert!(refused(&pods, "p", &bad_key).contains("metadata.annotations"));
}

#[test]
fn config_map_and_secret_data_is_limited_to_one_mib() {
    let config_maps = kind("configmaps", "ConfigMap");
    let secrets = kind("secrets", "Secret");
    let mib = MAX_DATA_BYTES;
    let fits = json!({"data": {"a": "x".repeat(mib - 1)}, "binaryData": {"b": "eA=="}});
    assert!(validate_object(&config_maps, "c", &fits, true).is_ok());
    let over = json!({"data": {"a": "x".repeat(mib - 1)}, "binaryData": {"b": "eHg="}});
    assert!(refused(&config_maps, "c", &over).contains("Too long: must have at most 1048576"));
    assert!(refused(&config_maps, "c", &json!({"data": {"a/b": "x"}})).contains("data[a/b]"));
    // Secret data is base64: 4 characters hold 3 bytes.
    let encoded = "A".repeat(mib / 3 * 4);
    assert!(validate_object(&secrets, "s", &json!({"data": {"a": encoded}}), true).is_ok());
    let over = json!({"data": {"a": encoded}, "stringData": {"b": "x".repeat(mib % 3 + 1)}});
    assert!(refused(&secrets, "s", &over).contains("Too long"));
}

#[test]
fn pod_container_volume_and_port_names_are_checked() {
    let pods = kind("pods", "Pod");
    let pod = |container: &str, volume: &str, port: &str| {
        json!({"metadata": {}, "spec": {
            "containers": [{"name": container, "ports": [{"name": port, "containerPort": 1}]}],
            "volumes": [{"name": volume}]}})
    };
    assert!(validate_object(&pods, "p", &pod("foundationdb", "data", "tls-2"), true).is_ok());
    for (object, needle) in [
        (pod("Main", "data", "tls"), "spec.containers[0].name"),
        (pod("main", "data_1", "tls"), "spec.volumes[0].name"),
        (
            pod("main", "data", "a-very-long-port-name"),
            "spec.containers[0].ports[0].name",
        ),
        (pod("main", "data", "4500"), "at least one letter"),
    ] {
        let message = refused(&pods, "p", &object);
        assert!(message.contains(needle), "{needle}: {message}");
    }
    let services = kind("services", "Service");
    let service = json!({"spec": {"ports": [{"name": "Non_TLS", "port": 1}]}});
    assert!(refused(&services, "s", &service).contains("spec.ports[0].name"));
}

#[test]
fn the_store_answers_422_before_storing_anything() {
    let mut state = State::new(1);
    let pods = kind("pods", "Pod");
    let now = Timestamp::UNIX_EPOCH;
    let bad = json!({"metadata": {"name": "p", "namespace": "ns", "labels": {"k": "a b"}}});
    let error = state.create(&pods, Some("ns"), bad, now).unwrap_err();
    assert_eq!(error.code, 422);
    assert!(state.get(&pods, "ns", "p").is_err());
    let good = json!({"metadata": {"name": "p", "namespace": "ns", "labels": {"k": "v"}}});
    let stored = state.create(&pods, Some("ns"), good, now).unwrap();
    let mut relabeled = stored.clone();
    relabeled["metadata"]["labels"]["k"] = json!("a b");
    let error = state
        .replace(&pods, Some("ns"), "p", relabeled, false)
        .unwrap_err();
    assert_eq!(error.code, 422, "{error}");
    assert_eq!(state.get(&pods, "ns", "p").unwrap(), stored);
}

#[test]
fn namespaces_of_creates_and_uids_of_restores_are_refused_naming_the_field() {
    let mut state = State::new(1);
    let pods = kind("pods", "Pod");
    let now = Timestamp::UNIX_EPOCH;
    for namespace in ["../../../../victim", "a/b", "..", "Default", "a.b"] {
        let pod = json!({"metadata": {"name": "p", "namespace": namespace}});
        let error = state.create(&pods, None, pod.clone(), now).unwrap_err();
        assert_eq!(error.code, 422, "{namespace:?}: {error}");
        assert!(error.message.contains("metadata.namespace"), "{error}");
        let error = state.restore(&pods, pod, now).unwrap_err();
        assert!(error.message.contains("metadata.namespace"), "{error}");
    }
    // On the URL too (a served `POST /api/v1/namespaces/<ns>/pods`).
    let pod = json!({"metadata": {"name": "p"}});
    let error = state.create(&pods, Some("../x"), pod, now).unwrap_err();
    assert!(error.message.contains("metadata.namespace"), "{error}");
    for uid in ["x/../../../../victim", "..", "not-a-uuid"] {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns", "uid": uid}});
        let error = state.restore(&pods, pod, now).unwrap_err();
        assert_eq!(error.code, 422, "{uid:?}");
        assert!(error.message.contains("metadata.uid"), "{error}");
    }
    assert_eq!(state.objects_of(&pods, None).count(), 0);
    // A client's uid on create is ignored (the server sets its own), as a real server does.
    let pod = json!({"metadata": {"name": "p", "namespace": "ns", "uid": "x/.."}});
    let stored = state.create(&pods, None, pod, now).unwrap();
    assert!(
        stored["metadata"]["uid"]
            .as_str()
            .unwrap()
            .starts_with("00000000-")
    );
    let uid = "5f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
    let pod = json!({"metadata": {"name": "q", "namespace": "ns", "uid": uid}});
    assert_eq!(
        state.restore(&pods, pod, now).unwrap()["metadata"]["uid"],
        uid
    );
}

#[test]
fn paths_the_kubelet_joins_are_relative_and_never_climb() {
    let pods = kind("pods", "Pod");
    let pod = |sub_path: &str, item_path: &str| {
        json!({"metadata": {}, "spec": {
            "containers": [{"name": "main", "volumeMounts": [{"name": "v", "mountPath": "/v", "subPath": sub_path}]}],
            "volumes": [{"name": "v", "configMap": {"name": "c", "items": [{"key": "k", "path": item_path}]}}]}})
    };
    assert!(validate_object(&pods, "p", &pod("a/b", "conf/fdb.cluster"), true).is_ok());
    for (object, needle) in [
        (
            pod("../x", "f"),
            "spec.containers[0].volumeMounts[0].subPath",
        ),
        (pod("/etc", "f"), "must be a relative path"),
        (
            pod("a", "../../f"),
            "spec.volumes[0].configMap.items[0].path",
        ),
        (pod("a", "..data"), "must not start with '..'"),
    ] {
        let message = refused(&pods, "p", &object);
        assert!(message.contains(needle), "{needle}: {message}");
    }
    let secrets = kind("secrets", "Secret");
    for key in ["..", "..data", "."] {
        let secret = json!({"data": {key: ""}});
        assert!(refused(&secrets, "s", &secret).contains(&format!("data[{key}]")));
    }
}
