//! Property test: arbitrary strings (line breaks, `[`, `=`, `#`, `$`, unicode, control
//! characters) in every spec field that reaches fdbmonitor.conf. Either validation
//! refuses the spec, or the conf the operator renders and the sidecar substitutes parses
//! back to exactly the expected sections and keys, each field's value intact. The
//! renderer and the substitution are also fed the strings directly (as if validation
//! had been bypassed): they refuse them or produce that same exact structure.
//!
//! A seeded generator (ChaCha8) keeps failures reproducible.

// Test-only crate: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use fdb_shared::api::ProcessClass;
use fdb_shared::api::cluster::FoundationDBClusterSpec;
use fdb_shared::monitor_conf::parse::MonitorConf;
use fdb_shared::monitor_conf::render::{MonitorConfParams, render_monitor_conf};
use fdb_shared::monitor_conf::substitute::substitute;
use fdb_shared::validation::{parse_custom_parameter, validate_cluster_spec};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const ROUNDS: usize = 3000;
const SERVERS: u32 = 2;

/// Characters that are harmless, and characters that could break a line, a section, a
/// key or a substitution.
const PLAIN: &[char] = &['a', 'b', 'z', 'Q', '0', '7', '-', '_', '.', ':'];
const HOSTILE: &[char] = &[
    '\n', '\r', '[', ']', '=', '#', ';', '$', '{', '}', ' ', '\t', '\0', '\u{1b}', '\u{85}',
    '\u{2028}', '\u{3000}', 'é', '日', '/', ',',
];

fn text(rng: &mut ChaCha8Rng) -> String {
    let len = rng.random_range(0..10);
    // Mostly plain strings, so that many specs are valid and their confs are checked.
    let hostile_share = rng.random_range(0..4);
    (0..len)
        .map(|_| {
            if rng.random_range(0..10) < hostile_share {
                HOSTILE[rng.random_range(0..HOSTILE.len())]
            } else {
                PLAIN[rng.random_range(0..PLAIN.len())]
            }
        })
        .collect()
}

fn variables(zone: &str) -> BTreeMap<String, String> {
    [
        ("FDB_PUBLIC_IP", "10.1.0.7"),
        ("FDB_POD_IP", "10.1.0.7"),
        ("FDB_MACHINE_ID", "node-a"),
        ("FDB_ZONE_ID", zone),
        ("FDB_INSTANCE_ID", "storage-1"),
        ("FDB_DNS_NAME", "storage-1.sample.fdb.svc"),
        ("BINARY_DIR", "/usr/bin"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// Renders `params`, substitutes `zone` and parses the result back; asserts that the
/// sections are exactly those of a two-process pod, that each process section holds
/// exactly the keys of `base` (the same pod without the tested values) plus those of
/// `expected`, with the expected values. Returns the renderer's or the substitution's
/// refusal.
fn check_conf(
    params: &MonitorConfParams<'_>,
    zone: &str,
    expected: &BTreeMap<String, String>,
) -> Result<(), String> {
    let template = render_monitor_conf(params).map_err(|e| e.to_string())?;
    let conf = substitute(&template, &variables(zone)).map_err(|e| e.to_string())?;
    let parsed = MonitorConf::parse(&conf).unwrap_or_else(|e| panic!("{e}: {conf}"));
    let names: Vec<&str> = parsed.sections.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["general", "fdbserver.1", "fdbserver.2"], "{conf}");
    let base = MonitorConfParams {
        log_group: "base",
        data_center: None,
        data_hall: None,
        peer_verification_rules: None,
        custom_parameters: &[],
        ..params.clone()
    };
    let base = substitute(&render_monitor_conf(&base).unwrap(), &variables("z")).unwrap();
    let base = MonitorConf::parse(&base).unwrap();
    for (section, base) in parsed.sections.iter().zip(&base.sections).skip(1) {
        let keys: BTreeSet<&String> = section.entries.keys().collect();
        let wanted: BTreeSet<&String> = base.entries.keys().chain(expected.keys()).collect();
        assert_eq!(keys, wanted, "{conf}");
        for (key, value) in expected {
            assert_eq!(section.entries.get(key), Some(value), "{key} in\n{conf}");
        }
    }
    Ok(())
}

const FIELDS: [&str; 6] = [
    "logGroup",
    "dataCenter",
    "dataHall",
    "peerVerificationRules",
    "customParameters",
    "faultDomain.value",
];

/// The spec with `value` in `field` (`custom` is the whole custom parameter).
fn spec_with(field: &str, value: &str, custom: &str) -> FoundationDBClusterSpec {
    let mut spec = serde_json::json!({"version": "7.1.57", "storageServersPerPod": SERVERS});
    match field {
        "peerVerificationRules" => {
            spec["mainContainer"] =
                serde_json::json!({"enableTls": true, "peerVerificationRules": value});
        }
        "customParameters" => {
            spec["processes"] = serde_json::json!({"general": {"customParameters": [custom]}});
        }
        "faultDomain.value" => {
            spec["faultDomain"] =
                serde_json::json!({"key": "foundationdb.org/kubernetes-cluster", "value": value});
        }
        field => spec[field] = serde_json::Value::String(value.to_owned()),
    }
    serde_json::from_value(spec).unwrap()
}

#[test]
fn conf_values_are_refused_or_render_exactly() {
    let mut rng = ChaCha8Rng::seed_from_u64(19);
    let mut valid = BTreeMap::<&str, usize>::new();
    let mut refused = BTreeMap::<&str, usize>::new();
    for _ in 0..ROUNDS {
        let field = FIELDS[rng.random_range(0..FIELDS.len())];
        let value = text(&mut rng);
        let custom = format!("{}={}", text(&mut rng), value);
        let spec = spec_with(field, &value, &custom);
        if !validate_cluster_spec(&spec).is_valid() {
            *refused.entry(field).or_default() += 1;
            continue;
        }
        *valid.entry(field).or_default() += 1;
        let zone = if field == "faultDomain.value" {
            value.as_str()
        } else {
            "zone-a"
        };
        let mut expected = BTreeMap::from([
            ("locality_zoneid".to_owned(), zone.to_owned()),
            ("loggroup".to_owned(), spec.log_group("sample").to_owned()),
        ]);
        let key = match field {
            "dataCenter" => Some("locality_dcid"),
            "dataHall" => Some("locality_data_hall"),
            "peerVerificationRules" => Some("tls_verify_peers"),
            _ => None,
        };
        if let Some(key) = key.filter(|_| !value.is_empty()) {
            expected.insert(key.to_owned(), value.clone());
        }
        if field == "customParameters" {
            let parameter = parse_custom_parameter(&custom).unwrap();
            let value = substitute(&parameter.value, &variables(zone)).unwrap();
            expected.insert(parameter.key, value);
        }
        let params = MonitorConfParams::for_spec(&spec, "sample", ProcessClass::Storage, SERVERS);
        check_conf(&params, zone, &expected)
            .unwrap_or_else(|e| panic!("{field} {value:?} passed validation but: {e}"));
    }
    for field in FIELDS {
        assert!(
            valid.get(field).copied().unwrap_or(0) > 20,
            "{field}: {valid:?}"
        );
        assert!(
            refused.get(field).copied().unwrap_or(0) > 20,
            "{field}: {refused:?}"
        );
    }
}

/// Without validation: the renderer and the substitution alone refuse what could break
/// the conf's structure, and render everything else exactly.
#[test]
fn the_renderer_and_the_substitution_alone_keep_the_structure() {
    let mut rng = ChaCha8Rng::seed_from_u64(1919);
    let (mut rendered, mut refused) = (0, 0);
    for _ in 0..ROUNDS {
        let (group, dc, zone, key, value) = (
            text(&mut rng),
            text(&mut rng),
            text(&mut rng),
            text(&mut rng),
            text(&mut rng),
        );
        let custom = vec![format!("{key}={value}")];
        let params = MonitorConfParams {
            process_class: ProcessClass::Storage,
            servers_per_pod: SERVERS,
            log_group: &group,
            tls: false,
            dual_listen: false,
            peer_verification_rules: None,
            explicit_listen_address: true,
            dns_locality: false,
            data_center: Some(&dc),
            data_hall: None,
            custom_parameters: &custom,
            ip_family: None,
        };
        let mut expected = BTreeMap::from([
            ("loggroup".to_owned(), group.clone()),
            ("locality_dcid".to_owned(), dc.clone()),
            // The INI reader trims values: a zone's surrounding whitespace is dropped.
            ("locality_zoneid".to_owned(), zone.trim().to_owned()),
        ]);
        if let Some(parameter) = parse_custom_parameter(&custom[0]) {
            let value = substitute(&parameter.value, &variables(&zone))
                .unwrap_or(parameter.value)
                .trim()
                .to_owned();
            expected.insert(parameter.key, value);
        }
        match check_conf(&params, &zone, &expected) {
            Ok(()) => rendered += 1,
            Err(_) => refused += 1,
        }
    }
    assert!(
        rendered > 100 && refused > 100,
        "{rendered} rendered, {refused} refused"
    );
}
