//! Checks of the backup and restore values that reach `fdbbackup` / `fdbrestore`: the
//! parts of the blob store URL and the restore key ranges. The URL is built from the
//! same parts, each percent-encoded ([`crate::blob_store_url::backup_url`]), so that even a part that skipped
//! validation cannot change the bucket or add a parameter.

use crate::api::backup::{BlobStoreConfiguration, FoundationDBBackupSpec};
use crate::api::restore::{FoundationDBKeyRange, FoundationDBRestoreSpec};
use crate::blob_store_url::is_unreserved;
pub use crate::blob_store_url::{BlobStoreAccount, parse_account, percent_encode};
use crate::printable::unescape_bytes;

/// The largest key FoundationDB accepts, in bytes.
pub const MAX_KEY_BYTES: usize = 10_000;

/// Whether `bucket` follows the S3 bucket naming rules: 3 to 63 lowercase letters,
/// digits, `.` and `-`, beginning and ending with a letter or digit.
pub fn is_bucket_name(bucket: &str) -> bool {
    (3..=63).contains(&bucket.len())
        && bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && bucket
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && bucket
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric())
}

/// Whether `name` may be the backup's name in the URL path: one path segment of
/// letters, digits, `-`, `.`, `_` and `~`, at most 255 characters, not `.` or `..`.
pub fn is_backup_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && name.bytes().all(is_unreserved)
}

/// Splits a URL parameter into key and value when both follow the grammar: the key
/// lowercase letters, digits and `_`, not `bucket` (the bucket has its own field); the
/// value letters, digits, `-`, `.`, `_`, `~` and `:` (FoundationDB's `header=name:value`).
pub fn parse_url_parameter(text: &str) -> Result<(&str, &str), &'static str> {
    let Some((key, value)) = text.split_once('=') else {
        return Err("is not of the form key=value");
    };
    if key.is_empty()
        || !key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err("the key must be lowercase letters, digits or `_`");
    }
    if key == "bucket" {
        return Err("the bucket is set by blobStoreConfiguration.bucket, not a URL parameter");
    }
    if value.is_empty() || !value.bytes().all(|b| is_unreserved(b) || b == b':') {
        return Err("the value must be letters, digits, `-`, `.`, `_`, `~` or `:`");
    }
    Ok((key, value))
}

/// Errors of a blob store configuration at `field` (`spec.blobStoreConfiguration`);
/// `resource_name` is the default backup name.
pub fn blob_store_errors(
    field: &str,
    config: &BlobStoreConfiguration,
    resource_name: &str,
) -> Vec<String> {
    let mut errors = Vec::new();
    if let Some(account) = config.account_name.as_deref().filter(|a| !a.is_empty())
        && let Err(problem) = parse_account(account)
    {
        errors.push(format!(
            "{field}.accountName: {account:?} is not a blob store account ([user@]host[:port]): {problem}"
        ));
    }
    if let Some(name) = config.backup_name.as_deref().filter(|n| !n.is_empty())
        && !is_backup_name(name)
    {
        errors.push(format!(
            "{field}.backupName: {name:?} must be one path segment of letters, digits, `-`, `.`, `_` or `~` (at most 255)"
        ));
    }
    // The default backup name is the resource's name, which Kubernetes already restricts;
    // checked all the same so a name that reaches the URL always passed here.
    if config.backup_name.as_deref().is_none_or(str::is_empty)
        && !resource_name.is_empty()
        && !is_backup_name(resource_name)
    {
        errors.push(format!(
            "metadata.name: {resource_name:?} cannot be the backup name in the URL; set {field}.backupName"
        ));
    }
    if let Some(bucket) = config.bucket.as_deref()
        && !is_bucket_name(bucket)
    {
        errors.push(format!(
            "{field}.bucket: {bucket:?} is not a bucket name (3 to 63 lowercase letters, digits, `.` and `-`, beginning and ending with a letter or digit)"
        ));
    }
    for (index, parameter) in config.url_parameters.iter().enumerate() {
        if let Err(problem) = parse_url_parameter(parameter) {
            errors.push(format!(
                "{field}.urlParameters[{index}]: {parameter:?}: {problem}"
            ));
        }
    }
    errors
}

/// Parses a restore key in FoundationDB's printable form (`\xNN` for a byte, `\\` for a
/// backslash) into its bytes; the error says what is wrong.
pub fn parse_key(text: &str) -> Result<Vec<u8>, String> {
    let key = unescape_bytes(text).map_err(|e| e.reason.to_owned())?;
    if key.is_empty() {
        return Err("must not be empty (the first key is \\x00)".to_owned());
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(format!("is longer than {MAX_KEY_BYTES} bytes"));
    }
    Ok(key)
}

/// Errors of restore key ranges at `field` (`spec.keyRanges`): each key parses as bytes
/// and each range's start comes before its end.
pub fn key_range_errors(field: &str, ranges: &[FoundationDBKeyRange]) -> Vec<String> {
    let mut errors = Vec::new();
    for (index, range) in ranges.iter().enumerate() {
        let start = parse_key(&range.start)
            .map_err(|problem| format!("{field}[{index}].start: {:?} {problem}", range.start));
        let end = parse_key(&range.end)
            .map_err(|problem| format!("{field}[{index}].end: {:?} {problem}", range.end));
        match (start, end) {
            (Ok(start), Ok(end)) if start >= end => errors.push(format!(
                "{field}[{index}]: start {:?} must come before end {:?}",
                range.start, range.end
            )),
            (Ok(_), Ok(_)) => {}
            (start, end) => errors.extend(start.err().into_iter().chain(end.err())),
        }
    }
    errors
}

/// Errors of `customParameters` that become `--<key>=<value>` arguments of the backup
/// agents or of `fdbrestore`: only knobs (`knob_<name>=<value>`). Any other key could
/// be an option of the tool itself (`dest-cluster-file=...` would restore into another
/// database), which only the operator sets.
pub fn tool_parameter_errors(field: &str, parameters: &[String]) -> Vec<String> {
    let mut errors = Vec::new();
    for (index, text) in parameters.iter().enumerate() {
        let problem = match crate::validation::parse_custom_parameter(text) {
            None => Some("is not of the form knob_<name>=<value>".to_owned()),
            Some(parameter)
                if !parameter.key.starts_with("knob_")
                    || !crate::monitor_conf::safe_text::is_conf_key(&parameter.key) =>
            {
                Some(format!(
                    "sets {:?}, which is not a knob (knob_<name>: letters, digits, `_` or `-`); the operator sets the tool's own options",
                    parameter.key
                ))
            }
            Some(parameter) => crate::monitor_conf::safe_text::conf_value_problem(&parameter.value)
                .map(|problem| format!("has a value that {problem}")),
        };
        if let Some(problem) = problem {
            errors.push(format!("{field}[{index}]: {text:?} {problem}"));
        }
    }
    errors
}

/// Errors of a backup spec's values that reach `fdbbackup` and the backup agents;
/// `resource_name` is the backup's name (the default backup name), empty when unknown.
pub fn backup_value_errors(spec: &FoundationDBBackupSpec, resource_name: &str) -> Vec<String> {
    let mut errors = blob_store_errors(
        "spec.blobStoreConfiguration",
        &spec.blob_store_configuration,
        resource_name,
    );
    errors.extend(tool_parameter_errors(
        "spec.customParameters",
        &spec.custom_parameters,
    ));
    errors
}

/// Errors of a restore spec's values that reach `fdbrestore`; `resource_name` is the
/// restore's name (the default backup name), empty when unknown.
pub fn restore_value_errors(spec: &FoundationDBRestoreSpec, resource_name: &str) -> Vec<String> {
    let mut errors = blob_store_errors(
        "spec.blobStoreConfiguration",
        &spec.blob_store_configuration,
        resource_name,
    );
    errors.extend(key_range_errors("spec.keyRanges", &spec.key_ranges));
    errors.extend(tool_parameter_errors(
        "spec.customParameters",
        &spec.custom_parameters,
    ));
    errors
}

#[cfg(test)]
#[path = "backup_values_tests.rs"]
mod tests;
