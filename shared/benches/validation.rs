//! Validation of a 1 MiB manifest: a FoundationDBCluster whose
//! `processes.general.customParameters` holds about 10,000 entries (unique keys, then
//! the same key repeated: the case that made the old duplicate check quadratic). The
//! manifest is read (YAML to JSON within `explain`'s input limits, then the typed
//! object), then validated; reading and validating are timed separately, as the
//! median of a few rounds.
//!
//! Run with `cargo bench -p fdb-shared --bench validation`. Each line reads
//! `validation: manifest=<name> bytes=.. entries=.. read_ms=.. validate_ms=.. errors=..`;
//! the goal is `validate_ms` under 100 in a release build (docs/operations.md records
//! the figure).

use std::error::Error;
use std::time::{Duration, Instant};

use fdb_shared::api::FoundationDBCluster;
use fdb_shared::validation::validate_cluster_spec;
use fdb_shared::yaml_input;

const ROUNDS: usize = 5;
const TARGET_BYTES: usize = 1024 * 1024;

/// A cluster manifest of about [`TARGET_BYTES`] whose custom parameters are made by
/// `entry(i)`; returns the text and the number of entries.
fn manifest(entry: impl Fn(usize) -> String) -> (String, usize) {
    let mut text = String::from(
        "apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata: {name: sample}\nspec:\n  version: 7.1.57\n  processes:\n    general:\n      customParameters:\n",
    );
    let mut entries = 0;
    while text.len() < TARGET_BYTES {
        text.push_str("        - \"");
        text.push_str(&entry(entries));
        text.push_str("\"\n");
        entries += 1;
    }
    (text, entries)
}

fn median(mut times: Vec<Duration>) -> f64 {
    times.sort_unstable();
    times[times.len() / 2].as_secs_f64() * 1000.0
}

fn bench(name: &str, text: &str, entries: usize) -> Result<(), Box<dyn Error>> {
    let mut read = Vec::new();
    let mut validate = Vec::new();
    let mut errors = 0;
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let value = yaml_input::single_document(text)?;
        let cluster: FoundationDBCluster = serde_json::from_value(value)?;
        read.push(started.elapsed());
        let started = Instant::now();
        let report = validate_cluster_spec(&cluster.spec);
        validate.push(started.elapsed());
        errors = report.errors.len();
    }
    println!(
        "validation: manifest={name} bytes={} entries={entries} read_ms={:.1} validate_ms={:.1} errors={errors}",
        text.len(),
        median(read),
        median(validate),
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let filler = "x".repeat(80);
    let (unique, count) = manifest(|i| format!("knob_k{i}={filler}"));
    bench("unique-keys", &unique, count)?;
    let (repeated, count) = manifest(|_| format!("knob_same={filler}"));
    bench("repeated-key", &repeated, count)?;
    Ok(())
}
