//! `fdbbackup` and `fdbrestore` subcommands read from their argv
//! (`fdbbackup/backup.actor.cpp`) and carried out through the admin interface, with
//! the texts the tools print.

use fdb_operator::fdb::backup::{KeyRange, render_restore_status};
use fdb_operator::fdb::{
    AdminClient, AdminError, BackupModify, BackupStart, FdbTool, RestoreStart,
};
use fdb_shared::FdbVersion;

use super::output::Printed;
use super::texts::{Stop, tool_hang_output};
use crate::fdb::SimulatedFdb;

/// The value after `flag` in `args`.
fn option<'a>(args: &'a [String], flags: &[&str]) -> Option<&'a str> {
    args.iter()
        .position(|a| flags.contains(&a.as_str()))
        .and_then(|at| args.get(at + 1))
        .map(String::as_str)
}

fn has(args: &[String], flag: &str) -> bool {
    args.iter().any(|a| a == flag)
}

/// What the tool prints for a command line it cannot read.
fn usage(tool: FdbTool, detail: &str) -> Printed {
    Printed::failed(
        1,
        &format!("ERROR: {detail}\nTry `{tool} --help' for more information.\n"),
    )
}

/// `fdbbackup describe -d URL --json` (the text form is not simulated).
fn describe(args: &[String], version: &FdbVersion, fdb: &SimulatedFdb) -> Outcome {
    let tool = FdbTool::Fdbbackup;
    let url = option(args, &["-d", "--destcontainer"])
        .ok_or_else(|| usage(tool, "No backup destination specified"))?;
    if !has(args, "--json") {
        return Err(usage(tool, "Unsimulated: `describe' without --json"));
    }
    match fdb.describe_backup(url, version) {
        Some(text) => Ok(Ok(ok(format!("{text}\n")))),
        None => Err(Printed::failed(1, "ERROR: Backup does not exist\n")),
    }
}

/// `fdbbackup expire -d URL` with a cutoff (`--expire-before-version` or
/// `--delete-before-days`), an optional restorability bound (`--restorable-after-version`
/// or `--min-restorable-days`) and `--force`, read as `fdbbackup/backup.actor.cpp` reads
/// them (days become a version counted back from the log's end).
fn expire(args: &[String], fdb: &SimulatedFdb) -> Outcome {
    let tool = FdbTool::Fdbbackup;
    let url = option(args, &["-d", "--destcontainer"])
        .ok_or_else(|| usage(tool, "No backup destination specified"))?;
    let number = |flags: &[&str], days: bool| -> Result<Option<i64>, Printed> {
        let Some(text) = option(args, flags) else {
            return Ok(None);
        };
        let value: i64 = text.parse().map_err(|_| {
            usage(
                tool,
                &format!("Could not parse expiration version `{text}'"),
            )
        })?;
        Ok(Some(if days {
            value.saturating_mul(-crate::fdb::VERSIONS_PER_DAY)
        } else {
            value
        }))
    };
    let before = number(
        &["--expire-before-version", "--expire_before_version"],
        false,
    )?
    .or(number(
        &["--delete-before-days", "--delete_before_days"],
        true,
    )?);
    let Some(before) = before else {
        return Err(usage(tool, "No version or date/time is specified."));
    };
    let restorable_after = number(
        &["--restorable-after-version", "--restorable_after_version"],
        false,
    )?
    .or(number(
        &["--min-restorable-days", "--min_restorable_days"],
        true,
    )?)
    .unwrap_or(i64::MAX);
    let request = crate::fdb::ExpireRequest {
        before,
        restorable_after,
        force: has(args, "--force"),
    };
    match fdb.expire_backup(url, request) {
        Ok(Some(cutoff)) => {
            let deleted = if before < 0 {
                format!(
                    "All data before {} versions ({} days) prior to latest backup log has been deleted.",
                    -before,
                    -before / crate::fdb::VERSIONS_PER_DAY
                )
            } else {
                format!("All data before version {cutoff} has been deleted.")
            };
            Ok(Ok(ok(format!("\rFinal metadata update...\n{deleted}\n"))))
        }
        Ok(None) => Err(Printed::failed(1, "ERROR: Backup does not exist\n")),
        Err(refusal) => Err(Printed::failed(1, &format!("{refusal}\n"))),
    }
}

/// Which tool runs, and its own version (its options differ by release).
#[derive(Debug, Clone, Copy)]
pub struct ToolCall<'a> {
    /// The tool.
    pub tool: FdbTool,
    /// The tool binary's version.
    pub version: &'a FdbVersion,
}

/// Runs `tool SUBCOMMAND...` (the cluster file and TLS options already taken out).
pub async fn run(
    call: ToolCall<'_>,
    args: &[String],
    admin: &dyn AdminClient,
    fdb: &SimulatedFdb,
) -> (Printed, bool) {
    let result = match call.tool {
        FdbTool::Fdbrestore => restore(args, admin).await,
        _ => backup(args, call.version, admin, fdb).await,
    };
    match result {
        Ok(Ok(printed)) => {
            let changed = printed.code == 0
                && !matches!(
                    args.first().map(String::as_str),
                    Some("status" | "describe")
                );
            (printed, changed)
        }
        Ok(Err(error)) => (error_output(error), false),
        Err(printed) => (printed, false),
    }
}

/// An admin error as the tool prints it.
fn error_output(error: AdminError) -> Printed {
    match error {
        AdminError::Unavailable { .. } => tool_hang_output(Stop::Unavailable),
        AdminError::Timeout { .. } => tool_hang_output(Stop::TimedOut),
        AdminError::Failed { stderr, code, .. } => {
            let text = if stderr.ends_with('\n') {
                stderr
            } else {
                format!("{stderr}\n")
            };
            Printed::failed(code.unwrap_or(1), &text)
        }
        other => Printed::failed(1, &format!("ERROR: {other}\n")),
    }
}

type Outcome = Result<Result<Printed, AdminError>, Printed>;

fn ok(text: String) -> Printed {
    Printed {
        stdout: text,
        ..Printed::default()
    }
}

async fn backup(
    args: &[String],
    version: &FdbVersion,
    admin: &dyn AdminClient,
    fdb: &SimulatedFdb,
) -> Outcome {
    let tool = FdbTool::Fdbbackup;
    let tag = option(args, &["-t", "--tagname"])
        .unwrap_or("default")
        .to_owned();
    let tagged = |verb: &str| {
        ok(format!(
            "The backup on tag `{tag}' was successfully {verb}.\n"
        ))
    };
    Ok(match args.first().map(String::as_str) {
        Some("start") => {
            let url = option(args, &["-d", "--destcontainer"])
                .ok_or_else(|| usage(tool, "No backup destination specified"))?;
            let seconds = option(args, &["-s", "--snapshot_interval"]).unwrap_or("864000");
            let seconds = seconds
                .parse()
                .map_err(|_| usage(tool, &format!("invalid snapshot interval `{seconds}'")))?;
            let request = BackupStart {
                tag: tag.clone(),
                url: url.to_owned(),
                snapshot_period_seconds: seconds,
                encryption_key_path: option(
                    args,
                    &["--encryption-key-file", "--encryption_key_file"],
                )
                .map(str::to_owned),
            };
            admin
                .start_backup(&request)
                .await
                .map(|()| tagged("submitted"))
        }
        Some("modify") => {
            let seconds = match option(args, &["-s", "--snapshot_interval"]) {
                Some(text) => Some(
                    text.parse()
                        .map_err(|_| usage(tool, &format!("invalid snapshot interval `{text}'")))?,
                ),
                None => None,
            };
            let encryption_key_path =
                option(args, &["--encryption-key-file", "--encryption_key_file"]);
            if encryption_key_path.is_some() && !version.supports_backup_modify_encryption() {
                // The modify options of fdbbackup before apple/foundationdb #12554 have no
                // such option (g_rgBackupModifyOptions in fdbbackup/backup.actor.cpp).
                return Err(Printed::failed(
                    1,
                    "ERROR: unknown option `--encryption-key-file'\nTry `fdbbackup --help' for more information.\n",
                ));
            }
            let request = BackupModify {
                tag: tag.clone(),
                url: option(args, &["-d", "--destcontainer"]).map(str::to_owned),
                snapshot_period_seconds: seconds,
                encryption_key_path: encryption_key_path.map(str::to_owned),
            };
            admin
                .modify_backup(&request)
                .await
                .map(|()| ok(String::new()))
        }
        Some("discontinue") => admin
            .discontinue_backup(&tag)
            .await
            .map(|()| tagged("discontinued")),
        Some("pause") => admin
            .set_backups_paused(true)
            .await
            .map(|()| ok("All backup agents have been paused.\n".to_owned())),
        Some("resume") => admin
            .set_backups_paused(false)
            .await
            .map(|()| ok("All backup agents have been resumed.\n".to_owned())),
        Some("delete") => {
            let url = option(args, &["-d", "--destcontainer"])
                .ok_or_else(|| usage(tool, "No backup destination specified"))?;
            admin
                .delete_backup_data(url)
                .await
                .map(|()| ok("The backup was successfully deleted.\n".to_owned()))
        }
        Some("describe") => return describe(args, version, fdb),
        Some("expire") => return expire(args, fdb),
        Some("status") if has(args, "--json") => admin
            .backup_status(&tag)
            .await
            .map(|_| ok(format!("{}\n", fdb.backup_status_text(&tag)))),
        Some(other) => {
            return Err(usage(
                tool,
                &format!("Unknown or unsimulated backup subcommand `{other}'"),
            ));
        }
        None => return Err(usage(tool, "No operation specified")),
    })
}

async fn restore(args: &[String], admin: &dyn AdminClient) -> Outcome {
    let tool = FdbTool::Fdbrestore;
    Ok(match args.first().map(String::as_str) {
        Some("start") => {
            let url =
                option(args, &["-r"]).ok_or_else(|| usage(tool, "No backup source specified"))?;
            let request = RestoreStart {
                url: url.to_owned(),
                key_ranges: key_ranges(args)?,
                version: match option(args, &["-v"]) {
                    Some(text) => Some(
                        text.parse()
                            .map_err(|_| usage(tool, &format!("invalid version `{text}'")))?,
                    ),
                    None => None,
                },
                encryption_key_path: option(
                    args,
                    &["--encryption-key-file", "--encryption_key_file"],
                )
                .map(str::to_owned),
                custom_parameters: args
                    .iter()
                    .filter(|a| a.starts_with("--knob_"))
                    .cloned()
                    .collect(),
            };
            admin
                .start_restore(&request)
                .await
                .map(|()| ok(format!("Restoring backup from `{url}'\n")))
        }
        Some("status") => admin.restore_status().await.map(|progress| {
            if progress.state.is_none() {
                ok(String::new())
            } else {
                ok(render_restore_status("default", &progress))
            }
        }),
        Some(other) => {
            return Err(usage(
                tool,
                &format!("Unknown or unsimulated restore subcommand `{other}'"),
            ));
        }
        None => return Err(usage(tool, "No operation specified")),
    })
}

/// The `-k 'BEGIN END'` arguments (each key escaped, `fdbbackup/backup.actor.cpp`).
fn key_ranges(args: &[String]) -> Result<Vec<KeyRange>, Printed> {
    let mut ranges = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word != "-k" {
            continue;
        }
        let range = words.next().map(String::as_str).unwrap_or_default();
        let parsed = range
            .split_once(' ')
            .and_then(|(begin, end)| KeyRange::parse(begin, end).ok());
        match parsed {
            Some(parsed) => ranges.push(parsed),
            None => {
                return Err(usage(
                    FdbTool::Fdbrestore,
                    &format!("invalid key range `{range}'"),
                ));
            }
        }
    }
    Ok(ranges)
}
