//! What the real API server adds to objects on their way in (defaulting and admission
//! plugins), for the kinds where it matters to an operator:
//!
//! - Pods get the core v1 defaults ([`super::core_defaults`]), the service account token
//!   volume ([`super::service_account`]) and the `DefaultTolerationSeconds` tolerations: `node.kubernetes.io/not-ready`
//!   and `node.kubernetes.io/unreachable`, `NoExecute`, for 300 s, unless they already
//!   tolerate those taints. (This is what makes pods leave a dead node after 5 minutes.)
//! - Services: `type` defaults to `ClusterIP`; a ClusterIP (or NodePort/LoadBalancer)
//!   service gets a cluster IP from `10.96.0.0/12`, in `spec.clusterIP` and
//!   `spec.clusterIPs`, allocated in order (deterministic) and kept for the service's life;
//!   `clusterIP: None` makes a headless service. On update an omitted cluster IP keeps the
//!   allocated one, and changing it is refused (422), as on a real server.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::errors::ApiError;
use super::resources::ResourceType;

/// The taints every pod tolerates for [`DEFAULT_TOLERATION_SECONDS`].
pub const DEFAULT_TOLERATED_TAINTS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];
/// How long pods tolerate a not-ready or unreachable node by default.
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;
/// The first cluster IP handed out (`10.96.0.1` is the `kubernetes` service's,
/// `10.96.0.10` cluster DNS's, by convention).
const FIRST_SERVICE_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 11);
/// Addresses in the service range `10.96.0.0/12`.
const SERVICE_RANGE_SIZE: u32 = 1 << 20;

/// What a real server adds to a pod being created, in its order: the core v1 defaults
/// (at decoding, [`super::core_defaults`]), then the ServiceAccount plugin's token volume
/// ([`super::service_account`]; `token_suffix` names it) and the DefaultTolerationSeconds
/// plugin's tolerations.
pub fn admit_pod(pod: &mut Value, token_suffix: &str) {
    super::core_defaults::default_pod(pod);
    super::service_account::admit_service_account(pod, token_suffix);
    add_default_tolerations(pod);
}

/// Adds the default `NoExecute` tolerations to a pod being created.
fn add_default_tolerations(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let mut tolerations = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for key in DEFAULT_TOLERATED_TAINTS {
        let tolerated = tolerations.iter().any(|t| {
            let effect = t.get("effect").and_then(Value::as_str).unwrap_or_default();
            let toleration_key = t.get("key").and_then(Value::as_str).unwrap_or_default();
            (effect.is_empty() || effect == "NoExecute")
                && (toleration_key == key
                    || (toleration_key.is_empty()
                        && t.get("operator").and_then(Value::as_str) == Some("Exists")))
        });
        if !tolerated {
            tolerations.push(
                json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}),
            );
        }
    }
    spec.insert("tolerations".into(), Value::Array(tolerations));
}

/// Hands out cluster IPs in order.
#[derive(Debug, Clone, Default)]
pub struct ServiceIps {
    handed_out: u32,
}

fn needs_cluster_ip(spec: &Value) -> bool {
    spec.get("type").and_then(Value::as_str) != Some("ExternalName")
}

fn cluster_ip(spec: &Value) -> Option<&str> {
    spec.get("clusterIP")
        .and_then(Value::as_str)
        .filter(|ip| !ip.is_empty())
}

impl ServiceIps {
    /// Defaults a service being created and gives it its cluster IP; `in_use` are the
    /// cluster IPs of the existing services.
    pub fn admit_service(
        &mut self,
        resource: &ResourceType,
        name: &str,
        service: &mut Value,
        in_use: &BTreeSet<String>,
    ) -> Result<(), ApiError> {
        if !service.get("spec").is_some_and(Value::is_object) {
            service["spec"] = json!({});
        }
        let spec = &mut service["spec"];
        if spec.get("type").and_then(Value::as_str).is_none() {
            spec["type"] = json!("ClusterIP");
        }
        if !needs_cluster_ip(spec) {
            return Ok(());
        }
        let ip = match cluster_ip(spec) {
            Some("None") => "None".to_owned(),
            Some(requested) => {
                let valid = requested.parse::<Ipv4Addr>().is_ok_and(in_service_range);
                if !valid {
                    return Err(ApiError::invalid(
                        resource,
                        name,
                        &format!(
                            "spec.clusterIPs: Invalid value: []string{{\"{requested}\"}}: failed \
                             to allocate IP {requested}: the provided IP ({requested}) is not in \
                             the valid range. The range of valid IPs is 10.96.0.0/12"
                        ),
                    ));
                }
                if in_use.contains(requested) {
                    return Err(ApiError::invalid(
                        resource,
                        name,
                        &format!(
                            "spec.clusterIPs: Invalid value: []string{{\"{requested}\"}}: failed \
                             to allocate IP {requested}: provided IP is already allocated"
                        ),
                    ));
                }
                requested.to_owned()
            }
            None => self.allocate(resource, name, in_use)?,
        };
        spec["clusterIP"] = json!(ip);
        spec["clusterIPs"] = json!([ip]);
        if ip != "None" || spec.get("ipFamilies").is_none() {
            spec["ipFamilies"] = json!(["IPv4"]);
            spec["ipFamilyPolicy"] = json!("SingleStack");
        }
        Ok(())
    }

    fn allocate(
        &mut self,
        resource: &ResourceType,
        name: &str,
        in_use: &BTreeSet<String>,
    ) -> Result<String, ApiError> {
        let first = u32::from(FIRST_SERVICE_IP);
        let base = u32::from(Ipv4Addr::new(10, 96, 0, 0));
        let usable = SERVICE_RANGE_SIZE - (first - base) - 1;
        for _ in 0..usable {
            let offset = self.handed_out % usable;
            self.handed_out = self.handed_out.wrapping_add(1);
            let ip = Ipv4Addr::from(first + offset).to_string();
            if !in_use.contains(&ip) {
                return Ok(ip);
            }
        }
        Err(ApiError::invalid(
            resource,
            name,
            "spec.clusterIPs: Internal error: failed to allocate a serviceIP: range is full",
        ))
    }
}

fn in_service_range(ip: Ipv4Addr) -> bool {
    let base = u32::from(Ipv4Addr::new(10, 96, 0, 0));
    let value = u32::from(ip);
    value > base && value < base + SERVICE_RANGE_SIZE - 1
}

/// The update rules of a service's cluster IP: omitted, it keeps the allocated one;
/// changed, the update is refused.
pub fn update_service(
    resource: &ResourceType,
    name: &str,
    current: &Value,
    next: &mut Value,
) -> Result<(), ApiError> {
    let Some(old_spec) = current.get("spec") else {
        return Ok(());
    };
    let Some(old_ip) = cluster_ip(old_spec).map(str::to_owned) else {
        return Ok(());
    };
    if !next.get("spec").is_some_and(Value::is_object) {
        next["spec"] = json!({});
    }
    let spec = &mut next["spec"];
    match cluster_ip(spec) {
        None => {
            spec["clusterIP"] = json!(old_ip);
            if let Some(ips) = old_spec.get("clusterIPs") {
                spec["clusterIPs"] = ips.clone();
            }
        }
        Some(new_ip) if new_ip != old_ip => {
            return Err(ApiError::invalid(
                resource,
                name,
                &format!(
                    "spec.clusterIPs[0]: Invalid value: []string{{\"{new_ip}\"}}: may not change \
                     once set"
                ),
            ));
        }
        Some(_) => {}
    }
    if spec
        .get("clusterIPs")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
        && let Some(ips) = old_spec.get("clusterIPs")
    {
        spec["clusterIPs"] = ips.clone();
    }
    for field in ["ipFamilies", "ipFamilyPolicy", "type"] {
        if spec.get(field).is_none()
            && let Some(value) = old_spec.get(field)
        {
            spec[field] = value.clone();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn services() -> ResourceType {
        ResourceType::new("", "v1", "services", "Service", true, true)
    }

    #[test]
    fn pods_tolerate_dead_nodes_for_five_minutes() {
        let mut pod = json!({"spec": {"containers": [],
            "tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                             "effect": "NoExecute"}]}});
        admit_pod(&mut pod, "abcde");
        let tolerations = pod["spec"]["tolerations"].as_array().unwrap();
        assert_eq!(tolerations.len(), 2, "{tolerations:?}");
        assert_eq!(tolerations[1]["key"], "node.kubernetes.io/not-ready");
        assert_eq!(tolerations[1]["tolerationSeconds"], 300);
    }

    #[test]
    fn services_get_stable_cluster_ips() {
        let mut ips = ServiceIps::default();
        let mut used = BTreeSet::new();
        let mut a = json!({"spec": {"ports": [{"port": 4501}]}});
        ips.admit_service(&services(), "a", &mut a, &used).unwrap();
        assert_eq!(a["spec"]["clusterIP"], "10.96.0.11");
        assert_eq!(a["spec"]["clusterIPs"], json!(["10.96.0.11"]));
        assert_eq!(a["spec"]["type"], "ClusterIP");
        used.insert("10.96.0.11".to_owned());
        used.insert("10.96.0.12".to_owned());
        let mut b = json!({"spec": {}});
        ips.admit_service(&services(), "b", &mut b, &used).unwrap();
        assert_eq!(b["spec"]["clusterIP"], "10.96.0.13");
        let mut headless = json!({"spec": {"clusterIP": "None"}});
        ips.admit_service(&services(), "h", &mut headless, &used)
            .unwrap();
        assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
        let mut taken = json!({"spec": {"clusterIP": "10.96.0.11"}});
        assert_eq!(
            ips.admit_service(&services(), "t", &mut taken, &used)
                .unwrap_err()
                .code,
            422
        );

        let mut update = json!({"spec": {"ports": []}});
        update_service(&services(), "a", &a, &mut update).unwrap();
        assert_eq!(update["spec"]["clusterIP"], "10.96.0.11");
        let mut change = json!({"spec": {"clusterIP": "10.96.0.99"}});
        assert_eq!(
            update_service(&services(), "a", &a, &mut change)
                .unwrap_err()
                .code,
            422
        );
    }
}
