//! Every name the plugin puts into a request, checked when the command line is parsed
//! (issue 40): kube's `Api` joins a name into the request path as it is, so
//! `-c sample/status` reached the status subresource. A name here is what a real API
//! server holds (DNS-1123, as `kubernetes/kubernetes` validates object names); anything
//! else exits 2 naming the argument, before a request is made or a file written. The
//! names accepted are made of `a-z A-Z 0-9 - _ .` only, characters a URL carries as they
//! are; each is still percent-encoded where it joins a request path ([`segment`]).

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use fdb_shared::api::cluster::conditions::ProcessGroupConditionType;
use fdb_shared::api::process_class::{ALL_PROCESS_CLASSES, ProcessClass};
use fdb_shared::connection_string::ConnectionString;
use fdb_shared::validation::names::{
    dns1123_label_error, dns1123_subdomain_error, label_value_error, qualified_name_error,
};
use fdb_simulation::kube::selectors::LabelSelector;

/// A FoundationDBCluster, pod or node name: a DNS-1123 subdomain.
pub fn object_name(value: &str) -> Result<String, String> {
    match dns1123_subdomain_error(value) {
        None => Ok(value.to_owned()),
        Some(problem) => Err(problem),
    }
}

/// A namespace or container name: a DNS-1123 label.
pub fn label_name(value: &str) -> Result<String, String> {
    match dns1123_label_error(value) {
        None => Ok(value.to_owned()),
        Some(problem) => Err(problem),
    }
}

/// A process group ID (a label value, as the operator labels pods with it, e.g.
/// `storage-1`) or a pod name; never `..` in it.
pub fn process_group_or_pod(value: &str) -> Result<String, String> {
    if value.contains("..") {
        return Err("must not contain '..'".to_owned());
    }
    if value.is_empty() {
        return Err("must not be empty".to_owned());
    }
    match (dns1123_subdomain_error(value), label_value_error(value)) {
        (None, _) | (_, None) => Ok(value.to_owned()),
        (Some(problem), Some(_)) => Err(format!(
            "neither a pod name ({problem}) nor a process group ID (a label value: at most \
             63 characters, alphanumeric at both ends, '-', '_' or '.' inside)"
        )),
    }
}

/// A process class (`--process-class`): one of FoundationDB's, as the operator names
/// them (`storage`, `cluster_controller`...).
pub fn process_class(value: &str) -> Result<String, String> {
    match value.parse::<ProcessClass>() {
        Ok(class) => Ok(class.as_str().to_owned()),
        Err(_) => Err(format!(
            "not a process class; one of: {}",
            ALL_PROCESS_CLASSES.map(ProcessClass::as_str).join(", ")
        )),
    }
}

/// A process group condition (`--process-condition`, `--ignore-condition`), as the
/// operator names them (`MissingProcesses`, `PodFailing`...).
pub fn condition(value: &str) -> Result<String, String> {
    if ProcessGroupConditionType::from(value).is_known() {
        Ok(value.to_owned())
    } else {
        Err(
            "not a process group condition (e.g. MissingProcesses, PodFailing, \
             MissingPod, SidecarUnreachable; see `kubectl fdb analyze`)"
                .to_owned(),
        )
    }
}

/// A label selector (`--node-selector`): `key=value`, `key!=value`, `key in (a,b)`,
/// `key`, `!key`, comma separated; never empty (it would select every node).
pub fn label_selector(value: &str) -> Result<String, String> {
    if value.trim().is_empty() {
        return Err("must not be empty (an empty selector selects every node)".to_owned());
    }
    LabelSelector::parse(value).map_err(|error| error.message)?;
    Ok(value.to_owned())
}

/// A label key (`[prefix/]name`, as Kubernetes validates label keys).
pub fn label_key(value: &str) -> Result<String, String> {
    match qualified_name_error(value) {
        Some(error) => Err(error),
        None => Ok(value.to_owned()),
    }
}

/// Labels to match, `key=value,...` (the Go plugin's `--match-labels`): each key a label
/// key, each value a label value.
pub fn match_labels(value: &str) -> Result<MatchLabels, String> {
    let mut labels = std::collections::BTreeMap::new();
    for pair in value.split(',').filter(|p| !p.trim().is_empty()) {
        let Some((key, label)) = pair.split_once('=') else {
            return Err(format!("{pair:?} is not key=value"));
        };
        let key = label_key(key.trim()).map_err(|e| format!("key {key:?}: {e}"))?;
        let label = label.trim();
        if let Some(error) = label_value_error(label) {
            return Err(format!("value {label:?} of {key}: {error}"));
        }
        labels.insert(key, label.to_owned());
    }
    if labels.is_empty() {
        return Err("must name at least one key=value".to_owned());
    }
    Ok(MatchLabels(labels))
}

/// Labels a pod must all carry (`--match-labels`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchLabels(pub std::collections::BTreeMap<String, String>);

impl MatchLabels {
    /// Whether `labels` holds every one of these.
    pub fn matches(&self, labels: Option<&std::collections::BTreeMap<String, String>>) -> bool {
        self.0
            .iter()
            .all(|(key, value)| labels.and_then(|l| l.get(key)) == Some(value))
    }
}

/// A Go-style duration (`30s`, `5m`, `1h30m`, `500ms`): at least one second, at most a
/// day.
pub fn duration(value: &str) -> Result<std::time::Duration, String> {
    let mut total_millis: u64 = 0;
    let mut rest = value.trim();
    if rest.is_empty() {
        return Err("must not be empty".to_owned());
    }
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let (number, after) = rest.split_at(digits);
        let number: u64 = number
            .parse()
            .map_err(|_| format!("{value:?} is not a duration like 30s, 5m or 1h30m"))?;
        let unit_len = after.len() - after.trim_start_matches(char::is_alphabetic).len();
        let (unit, next) = after.split_at(unit_len);
        let millis = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            _ => return Err(format!("{value:?} is not a duration like 30s, 5m or 1h30m")),
        };
        total_millis = number
            .checked_mul(millis)
            .and_then(|m| total_millis.checked_add(m))
            .ok_or_else(|| format!("{value:?} is too long"))?;
        rest = next;
    }
    if !(1_000..=86_400_000).contains(&total_millis) {
        return Err("must be between 1s and 24h".to_owned());
    }
    Ok(std::time::Duration::from_millis(total_millis))
}

/// A connection string (`description:id@address,...`), one line.
pub fn connection_string(value: &str) -> Result<String, String> {
    if value.trim().contains(['\n', '\r']) {
        return Err("not valid: a connection string is one line".to_owned());
    }
    ConnectionString::parse(value.trim())
        .map_err(|error| format!("not valid: {}", fdb_shared::error_chain::ErrorChain(&error)))?;
    Ok(value.to_owned())
}

/// Everything but RFC 3986's unreserved characters is encoded in a path segment.
const NOT_UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// `name` as one URL path segment: percent-encoded (kube joins names into request paths
/// as they are). A validated name is its own encoding; anything that slipped past
/// validation still cannot reach another path (`/` becomes `%2F`).
pub fn segment(name: &str) -> String {
    utf8_percent_encode(name, NOT_UNRESERVED).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_would_change_a_url_are_refused() {
        for bad in [
            "sample/status",
            "sample;rm",
            "sample\n",
            "..",
            "../sample",
            "a b",
            "",
            "sample?x=1",
            "sample%2Fstatus",
            "sample#x",
        ] {
            assert!(object_name(bad).is_err(), "{bad:?}");
            assert!(label_name(bad).is_err(), "{bad:?}");
            assert!(process_group_or_pod(bad).is_err(), "{bad:?}");
        }
        assert!(process_group_or_pod("storage..1").is_err());
        // Uppercase: a label value (a process group ID) but no object name.
        assert!(object_name("Sample").is_err() && label_name("Sample").is_err());
        for good in ["sample", "sample-storage-1", "a.b"] {
            assert_eq!(object_name(good).as_deref(), Ok(good));
            assert_eq!(segment(good), good);
        }
        // Process group IDs the Go operator makes are label values.
        for good in ["storage-1", "sample-storage-1", "Storage_1"] {
            assert_eq!(process_group_or_pod(good).as_deref(), Ok(good));
            assert_eq!(segment(good), good);
        }
        assert_eq!(label_name("foundationdb").as_deref(), Ok("foundationdb"));
        assert!(label_name("a.b").is_err());
        assert_eq!(segment("sample/status"), "sample%2Fstatus");
        assert_eq!(segment("a;b\n.."), "a%3Bb%0A..");
    }
}
