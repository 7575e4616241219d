//! Property: every `status json` document valid under FoundationDB's schema
//! (`JSONSchemas::statusSchema`, fdbclient/Schemas.cpp of 7.1, 7.3 and 7.4; see
//! tests/data/status-schema) parses in our status model, and what it says survives: the
//! processes, the configuration, the coordinators, the recovery state. Documents are
//! generated from the schema itself: any subset of its keys, `$enum` values, `$map`
//! entries under any name, arrays of any length, and any number where it shows a number
//! (integers of any size and reals alike, as `schemaMatch` allows).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};

use fdb_shared::status_json::DatabaseStatus;
use fdb_shared::status_json::schema::schema_mismatches;

fn schema(minor: &str) -> Value {
    let path = format!(
        "{}/tests/data/status-schema/{minor}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// A number as `schemaMatch` admits it: an integer (small, negative, beyond 32 bits) or
/// a real.
fn number(rng: &mut ChaCha8Rng, example: &Value) -> Value {
    match rng.random_range(0..6) {
        0 => json!(rng.random_range(-5_i64..5)),
        1 => json!(rng.random::<u32>() as i64 * 1000),
        2 => json!(rng.random_range(0.0..1000.0_f64)),
        3 => json!(rng.random_range(0_i64..4) as f64),
        _ => example.clone(),
    }
}

fn text(rng: &mut ChaCha8Rng, example: &str) -> Value {
    match rng.random_range(0..5) {
        0 => json!(""),
        1 => json!(format!("x{}", rng.random::<u16>())),
        2 => json!("10.1.2.3:4501:tls"),
        _ => json!(example),
    }
}

fn map_key(rng: &mut ChaCha8Rng) -> String {
    format!("{:032x}", rng.random::<u128>())
}

/// A value for a key whose schema is `schema` (which may be an `$enum` or `$map`).
fn keyed(rng: &mut ChaCha8Rng, schema: &Value, depth: usize) -> Value {
    if let Some(values) = schema.get("$enum").and_then(Value::as_array) {
        return values[rng.random_range(0..values.len())].clone();
    }
    if let Some(entry) = schema.get("$map") {
        let mut map = Map::new();
        for _ in 0..rng.random_range(0..4) {
            let value = if entry.is_object() {
                generate(rng, entry, depth + 1)
            } else {
                json!({map_key(rng): text(rng, "value")})
            };
            map.insert(map_key(rng), value);
        }
        return Value::Object(map);
    }
    generate(rng, schema, depth)
}

/// A value `schema` permits.
fn generate(rng: &mut ChaCha8Rng, schema: &Value, depth: usize) -> Value {
    match schema {
        Value::Object(keys) => {
            let keep = if depth < 3 { 0.9 } else { 0.6 };
            let mut object = Map::new();
            for (key, value) in keys {
                if rng.random_bool(keep) {
                    object.insert(key.clone(), keyed(rng, value, depth + 1));
                }
            }
            Value::Object(object)
        }
        Value::Array(items) => match items.first() {
            None => json!([]),
            Some(item) => (0..rng.random_range(0..4))
                .map(|_| generate(rng, item, depth + 1))
                .collect(),
        },
        Value::Number(_) => number(rng, schema),
        Value::String(example) => text(rng, example),
        Value::Bool(_) => json!(rng.random_bool(0.5)),
        Value::Null => Value::Null,
    }
}

fn objects(value: &Value) -> usize {
    value.as_object().map_or(0, Map::len)
}

/// What the document says that the parse must keep.
fn assert_kept(document: &Value, status: &DatabaseStatus, seed: u64) {
    let cluster = &document["cluster"];
    assert_eq!(
        status.cluster.processes.len(),
        objects(&cluster["processes"]),
        "seed {seed}: processes"
    );
    assert_eq!(
        status.cluster.configuration.is_some(),
        cluster["configuration"].is_object(),
        "seed {seed}: configuration"
    );
    if let (Some(parsed), Some(engine)) = (
        &status.cluster.configuration,
        cluster["configuration"]["storage_engine"].as_str(),
    ) {
        assert_eq!(
            parsed.storage_engine.as_ref().map(|e| e.as_str()),
            Some(engine),
            "seed {seed}: storage_engine"
        );
    }
    let coordinators = document["client"]["coordinators"]["coordinators"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(
        status.client.coordinators.coordinators.len(),
        coordinators,
        "seed {seed}: coordinators"
    );
    assert_eq!(
        status.cluster.recovery_state.name.as_deref(),
        cluster["recovery_state"]["name"].as_str(),
        "seed {seed}: recovery_state"
    );
    assert_eq!(
        status.client.database_status.available,
        document["client"]["database_status"]["available"].as_bool(),
        "seed {seed}: available"
    );
    for (id, process) in cluster["processes"].as_object().into_iter().flatten() {
        let parsed = &status.cluster.processes[id];
        assert_eq!(
            parsed.roles.len(),
            process["roles"].as_array().map_or(0, Vec::len),
            "seed {seed}: roles of {id}"
        );
        assert_eq!(
            parsed.excluded,
            process["excluded"].as_bool().unwrap_or(false),
            "seed {seed}: excluded of {id}"
        );
    }
}

#[test]
fn every_document_the_schema_admits_parses_and_keeps_what_it_says() {
    for minor in ["7.1", "7.3", "7.4"] {
        let schema = schema(minor);
        for seed in 0..300_u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let document = generate(&mut rng, &schema, 0);
            let mismatches = schema_mismatches(&schema, &document);
            assert!(
                mismatches.is_empty(),
                "generator, {minor} seed {seed}: {mismatches:?}"
            );
            let text = serde_json::to_string_pretty(&document).unwrap();
            let status = DatabaseStatus::parse_fdbcli_output(&text)
                .unwrap_or_else(|e| panic!("{minor} seed {seed}: {e}"));
            assert_kept(&document, &status, seed);
        }
    }
}
