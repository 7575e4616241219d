//! `fdbbackup` and `fdbrestore` command lines (pure functions). The cluster file and TLS
//! options are added by the caller; these are the subcommand and its own options.

use fdb_shared::printable::escape_bytes;

use super::super::backup::{BackupModify, BackupStart, RestoreStart};

/// `fdbbackup start -d <url> -s <seconds> -t <tag> -z [--encryption-key-file <path>]`:
/// `-z` keeps the backup running after its first snapshot (a continuous backup).
pub fn backup_start(request: &BackupStart) -> Vec<String> {
    let mut args = vec![
        "start".to_owned(),
        "-d".to_owned(),
        request.url.clone(),
        "-s".to_owned(),
        request.snapshot_period_seconds.to_string(),
        "-t".to_owned(),
        request.tag.clone(),
        "-z".to_owned(),
    ];
    if let Some(path) = &request.encryption_key_path {
        args.extend(["--encryption-key-file".to_owned(), path.clone()]);
    }
    args
}

/// `fdbbackup modify -t <tag> [-d <url> [--encryption-key-file <path>]] [-s <seconds>]`.
pub fn backup_modify(request: &BackupModify) -> Vec<String> {
    let mut args = vec!["modify".to_owned(), "-t".to_owned(), request.tag.clone()];
    if let Some(url) = &request.url {
        args.extend(["-d".to_owned(), url.clone()]);
        if let Some(path) = &request.encryption_key_path {
            args.extend(["--encryption-key-file".to_owned(), path.clone()]);
        }
    }
    if let Some(seconds) = request.snapshot_period_seconds {
        args.extend(["-s".to_owned(), seconds.to_string()]);
    }
    args
}

/// `fdbbackup discontinue -t <tag>`: stops the backup (what was written stays restorable).
pub fn backup_discontinue(tag: &str) -> Vec<String> {
    vec!["discontinue".to_owned(), "-t".to_owned(), tag.to_owned()]
}

/// `fdbbackup pause` / `fdbbackup resume`: all backup agents of the database.
pub fn backup_pause(paused: bool) -> Vec<String> {
    vec![if paused { "pause" } else { "resume" }.to_owned()]
}

/// `fdbbackup delete -d <url>`: deletes the backup's files.
pub fn backup_delete(url: &str) -> Vec<String> {
    vec!["delete".to_owned(), "-d".to_owned(), url.to_owned()]
}

/// `fdbbackup status --json -t <tag>`.
pub fn backup_status(tag: &str) -> Vec<String> {
    vec![
        "status".to_owned(),
        "--json".to_owned(),
        "-t".to_owned(),
        tag.to_owned(),
    ]
}

/// `fdbrestore start -r <url> [-k '<begin> <end>' ...] [-v <version>]
/// [--encryption-key-file <path>] <custom parameters>`. fdbrestore takes the key ranges
/// as one argument each, begin and end separated by a space: each key escaped
/// (`\x20` for a space), so it is always one token of that argument.
pub fn restore_start(request: &RestoreStart) -> Vec<String> {
    let mut args = vec!["start".to_owned(), "-r".to_owned(), request.url.clone()];
    for range in &request.key_ranges {
        args.extend([
            "-k".to_owned(),
            format!(
                "{} {}",
                escape_bytes(range.begin()),
                escape_bytes(range.end())
            ),
        ]);
    }
    if let Some(version) = request.version {
        args.extend(["-v".to_owned(), version.to_string()]);
    }
    if let Some(path) = &request.encryption_key_path {
        args.extend(["--encryption-key-file".to_owned(), path.clone()]);
    }
    args.extend(request.custom_parameters.iter().cloned());
    args
}

/// `fdbrestore status`.
pub fn restore_status() -> Vec<String> {
    vec!["status".to_owned()]
}

/// One command line as text (for logs and the events of the simulation): arguments
/// with spaces are quoted.
pub fn display(program: &str, args: &[String]) -> String {
    let mut text = program.to_owned();
    for arg in args {
        text.push(' ');
        if arg.contains(' ') || arg.is_empty() {
            text.push('\'');
            text.push_str(arg);
            text.push('\'');
        } else {
            text.push_str(arg);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::super::backup::KeyRange;
    use super::*;

    #[test]
    fn start_modify_and_restore_lines() {
        let start = BackupStart {
            tag: "default".into(),
            url: "blobstore://a@b:443/c?bucket=fdb-backups".into(),
            snapshot_period_seconds: 3600,
            encryption_key_path: Some("/keys/k".into()),
        };
        assert_eq!(
            display("fdbbackup", &backup_start(&start)),
            "fdbbackup start -d blobstore://a@b:443/c?bucket=fdb-backups -s 3600 -t default -z \
             --encryption-key-file /keys/k"
        );
        let modify = BackupModify {
            tag: "default".into(),
            url: None,
            snapshot_period_seconds: Some(60),
            encryption_key_path: Some("/keys/k".into()),
        };
        // The key goes only with a new destination.
        assert_eq!(
            display("fdbbackup", &backup_modify(&modify)),
            "fdbbackup modify -t default -s 60"
        );
        let moved = BackupModify {
            url: Some("blobstore://a@b:443/d?bucket=fdb-backups".into()),
            snapshot_period_seconds: None,
            ..modify
        };
        assert_eq!(
            display("fdbbackup", &backup_modify(&moved)),
            "fdbbackup modify -t default -d blobstore://a@b:443/d?bucket=fdb-backups \
             --encryption-key-file /keys/k"
        );
        let restore = RestoreStart {
            url: "blobstore://a@b:443/c?bucket=fdb-backups".into(),
            key_ranges: vec![
                KeyRange::parse("a", "b").unwrap(),
                KeyRange::parse("a key", "a\\xff z").unwrap(),
            ],
            version: Some(42),
            encryption_key_path: None,
            custom_parameters: vec!["--knob_x=1".into()],
        };
        assert_eq!(
            display("fdbrestore", &restore_start(&restore)),
            "fdbrestore start -r blobstore://a@b:443/c?bucket=fdb-backups -k 'a b' -k 'a\\x20key a\\xff\\x20z' -v 42 \
             --knob_x=1"
        );
        assert_eq!(
            display("fdbbackup", &backup_discontinue("t")),
            "fdbbackup discontinue -t t"
        );
        assert_eq!(backup_pause(true), vec!["pause".to_owned()]);
        assert_eq!(backup_pause(false), vec!["resume".to_owned()]);
    }
}
