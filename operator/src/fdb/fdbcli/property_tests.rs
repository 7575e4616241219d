//! Property tests (issue 19): arbitrary strings, with `;`, newlines, quotes, spaces,
//! escapes and non-ASCII, in every spec string that reaches an fdbcli, fdbbackup or
//! fdbrestore command. Either validation refuses the value, or the command built from
//! it is well formed: the expected number of commands and tokens, the value one token
//! that reads back as the value. A seeded generator keeps every run the same.

use fdb_shared::api::backup::BlobStoreConfiguration;
use fdb_shared::api::restore::FoundationDBKeyRange;
use fdb_shared::api::{
    DatabaseConfiguration, FoundationDBCluster, FoundationDBClusterSpec, RedundancyMode,
    StorageEngine, StorageMigrationType,
};
use fdb_shared::cluster_math::desired_database_configuration;
use fdb_shared::printable::unescape_bytes;
use fdb_shared::validation::backup_values::{blob_store_errors, key_range_errors};
use fdb_shared::validation::validate_cluster_spec;
use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::backup_commands::restore_start;
use super::commands::{configure, coordinators, exclude, include, kill, maintenance_on};
use crate::controller::coordinators::coordinator_address;
use crate::fdb::{ExclusionTarget, KeyRange, RestoreStart};

const RUNS: usize = 1500;

/// Pieces that break commands, URLs and confs, mixed with ordinary ones.
const PIECES: &[&str] = &[
    "a",
    "Z",
    "0",
    "9",
    "-",
    "_",
    ".",
    ":",
    "/",
    ";",
    " ",
    "\n",
    "\t",
    "\r",
    "\"",
    "'",
    "\\",
    "\\x",
    "\\x20",
    "\\xff",
    "=",
    "&",
    "?",
    "#",
    "%",
    "%2F",
    "@",
    "é",
    "日",
    "\u{0}",
    "`",
    "$(",
    "gradual",
    "double",
    "ssd-2",
    "zoneid",
    "zoneid:z1",
    "fdb-backups",
    "bucket=",
    "storage-1",
    "svc",
    "cluster.local",
    "x; writemode on; clearrange \"\" \\xff",
];

fn arbitrary(rng: &mut ChaCha8Rng) -> String {
    let pieces = rng.random_range(0..8);
    (0..pieces)
        .map(|_| PIECES[rng.random_range(0..PIECES.len())])
        .collect()
}

fn strings(seed: u64) -> impl Iterator<Item = String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..RUNS).map(move |_| arbitrary(&mut rng))
}

fn spec_with(configuration: DatabaseConfiguration) -> FoundationDBClusterSpec {
    FoundationDBClusterSpec {
        version: "7.1.57".to_owned(),
        database_configuration: configuration,
        ..Default::default()
    }
}

/// One fdbcli command (no `;`) of exactly `tokens` whitespace-separated tokens.
fn assert_one_command(command: &str, tokens: usize) -> Vec<&str> {
    assert!(!command.contains(';'), "{command:?}");
    assert!(!command.contains(['"', '\'', '\n', '\r']), "{command:?}");
    let split: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(split.len(), tokens, "{command:?}");
    split
}

#[test]
fn configure_values_are_refused_or_one_token() {
    type Setter = fn(&mut DatabaseConfiguration, String);
    let fields: [(&str, Setter); 5] = [
        ("storage_migration_type", |c, v| {
            c.storage_migration_type = Some(StorageMigrationType::from(v.as_str()));
        }),
        ("perpetual_storage_wiggle_locality", |c, v| {
            c.perpetual_storage_wiggle_locality = Some(v);
        }),
        ("perpetual_storage_wiggle_engine", |c, v| {
            c.perpetual_storage_wiggle_engine = Some(StorageEngine::from(v.as_str()));
        }),
        ("redundancy_mode", |c, v| {
            c.redundancy_mode = Some(RedundancyMode::from(v.as_str()));
        }),
        ("storage_engine", |c, v| {
            c.storage_engine = Some(StorageEngine::from(v.as_str()));
        }),
    ];
    for (seed, (field, set)) in fields.iter().enumerate() {
        let mut accepted = 0;
        for value in strings(seed as u64) {
            let mut configuration = DatabaseConfiguration::default();
            set(&mut configuration, value.clone());
            let report = validate_cluster_spec(&spec_with(configuration.clone()));
            let named = report
                .errors
                .iter()
                .any(|e| e.starts_with(&format!("spec.databaseConfiguration.{field}:")));
            let built = configure(&configuration, false);
            if named {
                continue;
            }
            if value.is_empty()
                && matches!(
                    *field,
                    "storage_migration_type" | "perpetual_storage_wiggle_engine"
                )
            {
                // The Go CRD's empty value means "not set": it never reaches configure.
                let desired = desired_database_configuration(&spec_with(configuration));
                assert_eq!(desired.storage_migration_type, None);
                assert_eq!(desired.perpetual_storage_wiggle_engine, None);
                continue;
            }
            accepted += 1;
            let command = built.unwrap_or_else(|e| panic!("{field}={value:?} passed: {e}"));
            let tokens = assert_one_command(&command, 2);
            let token = tokens[1];
            let written = token.strip_prefix(&format!("{field}=")).unwrap_or(token);
            assert_eq!(
                unescape_bytes(written).unwrap(),
                value.as_bytes(),
                "{field}: {command:?}"
            );
        }
        // The generator does produce valid values too.
        assert!(accepted > 0, "{field}");
    }
}

#[test]
fn exclusion_targets_and_maintenance_zones_are_refused_or_one_token() {
    for value in strings(11) {
        match maintenance_on(&value, 60) {
            Ok(command) => {
                let tokens = assert_one_command(&command, 4);
                assert_eq!(unescape_bytes(tokens[2]).unwrap(), value.as_bytes());
            }
            Err(_) => assert!(value.is_empty()),
        }
        // A process group ID built from a prefix: refused, or one locality token.
        let Ok(target) = ExclusionTarget::instance_id(&format!("{value}-storage-1")) else {
            continue;
        };
        let command = exclude(std::slice::from_ref(&target), true).unwrap();
        assert_one_command(&command, 2);
        assert_eq!(
            ExclusionTarget::parse(&command["exclude ".len()..]),
            Some(target.clone())
        );
        assert_one_command(&include(&[target]).unwrap(), 2);
    }
}

#[test]
fn dns_domains_give_no_address_or_one_token() {
    for value in strings(12) {
        let mut cluster = FoundationDBCluster::new("sample", spec_with(Default::default()));
        cluster.metadata.namespace = Some("default".to_owned());
        cluster.spec.routing.dns_domain = Some(value.clone());
        let Some(address) = coordinator_address(&cluster, "sample-log-1", None) else {
            continue;
        };
        assert!(address.host.ends_with(&value), "{address} from {value:?}");
        let command = coordinators(std::slice::from_ref(&address)).unwrap();
        assert_one_command(&command, 2);
        let kill = kill(&[address]).unwrap();
        assert_eq!(kill.split(';').count(), 3, "{kill:?}");
    }
}

#[test]
fn backup_url_parts_are_refused_or_stay_their_part() {
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    for _ in 0..RUNS {
        let config = BlobStoreConfiguration {
            account_name: Some(format!("user@{}", arbitrary(&mut rng))),
            backup_name: Some(arbitrary(&mut rng)).filter(|_| rng.random_bool(0.5)),
            bucket: Some(arbitrary(&mut rng)).filter(|_| rng.random_bool(0.5)),
            url_parameters: (0..rng.random_range(0..3))
                .map(|_| format!("{}={}", arbitrary(&mut rng), arbitrary(&mut rng)))
                .collect(),
        };
        let url = config.url("backup");
        // Whatever the parts, the URL has one path, one bucket and one parameter each.
        let rest = url.strip_prefix("blobstore://").unwrap();
        let (path, query) = rest.split_once('?').unwrap();
        assert!(
            !query.contains('?') && !url.contains(['#', ' ', '\n']),
            "{url}"
        );
        assert_eq!(path.matches('/').count(), 1, "{url}");
        let parameters: Vec<&str> = query.split('&').collect();
        let own = config
            .url_parameters
            .iter()
            .filter(|p| p.split('=').next().is_none_or(|key| key.trim() != "bucket"))
            .count();
        assert_eq!(parameters.len(), 1 + own, "{url}");
        assert_eq!(
            parameters
                .iter()
                .filter(|p| p.starts_with("bucket="))
                .count(),
            1
        );
        if blob_store_errors("f", &config, "backup").is_empty() {
            // Valid parts are written as they are.
            assert_eq!(
                parameters[0],
                format!("bucket={}", config.bucket()),
                "{url}"
            );
            assert!(path.ends_with(&format!("/{}", config.backup_name("backup"))));
        }
    }
}

#[test]
fn restore_key_ranges_are_refused_or_two_keys() {
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    for _ in 0..RUNS {
        let (start, end) = (arbitrary(&mut rng), arbitrary(&mut rng));
        let range = FoundationDBKeyRange {
            start: start.clone(),
            end: end.clone(),
        };
        let valid = key_range_errors("spec.keyRanges", &[range]).is_empty();
        let parsed = KeyRange::parse(&start, &end);
        assert_eq!(valid, parsed.is_ok(), "{start:?} {end:?}");
        let Ok(parsed) = parsed else { continue };
        let args = restore_start(&RestoreStart {
            url: "blobstore://a@b/c?bucket=d".to_owned(),
            key_ranges: vec![parsed.clone()],
            version: None,
            encryption_key_path: None,
            custom_parameters: Vec::new(),
        });
        let k = args.iter().position(|a| a == "-k").unwrap();
        let keys: Vec<&str> = args[k + 1].split_whitespace().collect();
        assert_eq!(keys.len(), 2, "{:?}", args[k + 1]);
        assert_eq!(unescape_bytes(keys[0]).unwrap(), parsed.begin());
        assert_eq!(unescape_bytes(keys[1]).unwrap(), parsed.end());
        assert!(parsed.begin() < parsed.end());
    }
}
