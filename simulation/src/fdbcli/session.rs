//! One `fdbcli --exec` run on a database its tool speaks to: each command of the line
//! read from its text, carried out through the admin interface (so the events log and
//! the judges see it), and answered with what fdbcli prints and its exit code
//! (`fdbcli/fdbcli.actor.cpp` `cli()`: `>>> CMD` before each command of a line of
//! several, the rest skipped after a failure, exit 1 when one failed).

use fdb_operator::fdb::{AdminClient, AdminError, ExclusionTarget};
use fdb_shared::address::ProcessAddress;
use fdb_shared::connection_string::ConnectionString;

use super::keys::{self, Mutation};
use super::line::{Tokens, parse_line, printable, text};
use super::texts::{Stop, hang_output};
use super::{configure, output::Printed};
use crate::fdb::{ExcludeRefusal, SimulatedFdb};

/// fdbcli commands the simulation does not carry out (they exist in fdbcli: refused
/// as not simulated, never as unknown and never silently).
const UNSIMULATED: [&str; 21] = [
    "advanceversion",
    "blobrange",
    "cache_range",
    "changefeed",
    "consistencycheck",
    "datadistribution",
    "expensive_data_check",
    "fileconfigure",
    "getall",
    "getlocation",
    "getrangekeys",
    "lock",
    "profile",
    "setclass",
    "snapshot",
    "suspend",
    "tenant",
    "throttle",
    "triggerddteaminfolog",
    "tssq",
    "unlock",
];

/// The state of one run.
pub struct Session<'a> {
    admin: &'a dyn AdminClient,
    fdb: &'a SimulatedFdb,
    /// What was printed so far.
    pub printed: Printed,
    is_error: bool,
    write_mode: bool,
    system_keys: bool,
    transaction: Option<Vec<Mutation>>,
    killable: Vec<ProcessAddress>,
    /// Whether a command changed the database.
    pub changed: bool,
    /// The connection string after a `coordinators` change (fdbcli rewrites its
    /// cluster file with it).
    pub new_connection: Option<ConnectionString>,
}

impl<'a> Session<'a> {
    /// A run against `fdb` through `admin`.
    pub fn new(admin: &'a dyn AdminClient, fdb: &'a SimulatedFdb) -> Self {
        Self {
            admin,
            fdb,
            printed: Printed::default(),
            is_error: false,
            write_mode: false,
            system_keys: false,
            transaction: None,
            killable: Vec::new(),
            changed: false,
            new_connection: None,
        }
    }

    /// Runs a whole `--exec` line; returns what was printed and the exit code.
    pub async fn run_line(mut self, line: &str) -> (Printed, Self) {
        let commands = match parse_line(line) {
            Ok(commands) => commands,
            Err(_) => {
                self.printed
                    .err("ERROR: Command failed to completely parse.\n");
                self.printed.code = 1;
                return (self.printed.clone(), self);
            }
        };
        let multi = commands.len() > 1;
        for tokens in &commands {
            if self.is_error {
                self.printed.out(
                    "WARNING: the previous command failed, the remaining commands will not be executed.\n",
                );
                break;
            }
            if tokens.is_empty() {
                continue;
            }
            if multi {
                let words: Vec<String> = tokens.iter().map(|t| printable(t)).collect();
                self.printed.out(&format!(">>> {}\n", words.join(" ")));
            }
            if let Err(stop) = self.command(tokens).await {
                let mut printed = self.printed.clone();
                printed.append(&hang_output(stop));
                return (printed, self);
            }
        }
        self.printed.code = i32::from(self.is_error);
        (self.printed.clone(), self)
    }

    fn fail(&mut self, stderr: &str) {
        self.printed.err(stderr);
        self.is_error = true;
    }

    /// The outcome of an admin call: its error printed as fdbcli prints it, or a hang
    /// (unavailable, timed out) that ends the run.
    fn admin_result<T>(&mut self, result: Result<T, AdminError>) -> Result<Option<T>, Stop> {
        match result {
            Ok(value) => Ok(Some(value)),
            Err(AdminError::Unavailable { .. }) => Err(Stop::Unavailable),
            Err(AdminError::Timeout { .. }) => Err(Stop::TimedOut),
            Err(AdminError::Failed { stderr, .. }) => {
                let mut text = stderr;
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                self.fail(&text);
                Ok(None)
            }
            Err(other) => {
                self.fail(&format!("ERROR: {other}\n"));
                Ok(None)
            }
        }
    }

    async fn command(&mut self, tokens: &Tokens) -> Result<(), Stop> {
        let name = text(&tokens[0]);
        let rest = &tokens[1..];
        match name.as_str() {
            "status" => self.status(rest).await,
            "configure" => self.configure(rest).await,
            "exclude" => self.exclude(rest).await,
            "include" => self.include(rest).await,
            "coordinators" => self.coordinators(rest).await,
            "kill" => self.kill(rest).await,
            "maintenance" => self.maintenance(rest).await,
            "force_recovery_with_data_loss" => {
                match super::force_recovery::run(self.fdb, rest)? {
                    None => self.usage(super::force_recovery::USAGE),
                    Some(changed) => self.changed |= changed,
                }
                Ok(())
            }
            "option" => {
                self.option(rest);
                Ok(())
            }
            "writemode" => {
                match rest.first().map(|t| text(t)).as_deref() {
                    Some("on") if rest.len() == 1 => self.write_mode = true,
                    Some("off") if rest.len() == 1 => self.write_mode = false,
                    _ => self.usage("writemode <on|off>"),
                }
                Ok(())
            }
            "get" | "getrange" => self.read_keys(&name, rest).await,
            "set" | "clear" | "clearrange" => self.write_keys(&name, rest).await,
            "begin" => {
                if self.transaction.is_some() {
                    self.fail("ERROR: Already in transaction\n");
                } else {
                    self.transaction = Some(Vec::new());
                    self.printed.out("Transaction started\n");
                }
                Ok(())
            }
            "commit" => match self.transaction.take() {
                None => {
                    self.fail("ERROR: No active transaction\n");
                    Ok(())
                }
                Some(mutations) => self.commit(&mutations).await,
            },
            "sleep" => Ok(()),
            "exit" | "quit" | "help" => Ok(()),
            other if UNSIMULATED.contains(&other) => {
                self.fail(&format!(
                    "ERROR: `{other}' is not carried out by the simulated database\n"
                ));
                Ok(())
            }
            other => {
                self.fail(&format!(
                    "ERROR: Unknown command `{}'. Try `help'?\n",
                    printable(other.as_bytes())
                ));
                Ok(())
            }
        }
    }

    fn usage(&mut self, usage: &str) {
        self.printed.out(&format!("Usage: {usage}\n"));
        self.is_error = true;
    }

    async fn status(&mut self, rest: &[Vec<u8>]) -> Result<(), Stop> {
        let minimal = match rest {
            [word] if word.as_slice() == b"json" => false,
            [word] if word.as_slice() == b"minimal" => true,
            _ => {
                self.fail(
                    "ERROR: only `status json' and `status minimal' are carried out by the \
                     simulated database\n",
                );
                return Ok(());
            }
        };
        if self.admin_result(self.admin.status().await)?.is_some() {
            let document = self.fdb.render_status_json();
            if minimal {
                // `status minimal` (fdbcli/StatusCommand.actor.cpp, `printStatus` at
                // level MINIMAL): one line, the database's availability.
                let available = document
                    .pointer("/client/database_status/available")
                    .and_then(serde_json::Value::as_bool)
                    == Some(true);
                self.printed.out(if available {
                    "The database is available.\n"
                } else {
                    "The database is unavailable; type `status' for more information.\n"
                });
            } else {
                let text = serde_json::to_string_pretty(&document).unwrap_or_default();
                self.printed.out(&format!("{text}\n"));
            }
        }
        Ok(())
    }

    async fn configure(&mut self, rest: &[Vec<u8>]) -> Result<(), Stop> {
        let Some(parsed) = configure::parse(rest) else {
            self.printed.out(configure::USAGE);
            self.is_error = true;
            return Ok(());
        };
        let result = self
            .admin
            .configure(&parsed.configuration, parsed.new_database)
            .await;
        if self.admin_result(result)?.is_some() {
            self.changed = true;
            self.printed.out(if parsed.new_database {
                "Database created\n"
            } else {
                "Configuration changed\n"
            });
        }
        Ok(())
    }

    /// The targets of `exclude`/`include` and their flags, or the error fdbcli prints
    /// (`fdbcli/ExcludeCommand.actor.cpp`, `IncludeCommand.actor.cpp`).
    fn targets(&mut self, rest: &[Vec<u8>]) -> Option<(Vec<ExclusionTarget>, Vec<String>)> {
        let (mut targets, mut flags) = (Vec::new(), Vec::new());
        for token in rest.iter().map(|t| text(t)) {
            if ["FORCE", "failed", "no_wait", "all"].contains(&token.as_str()) {
                flags.push(token);
                continue;
            }
            match ExclusionTarget::parse(&token) {
                Some(target) => targets.push(target),
                None => {
                    self.fail(&format!(
                        "ERROR: `{token}' is neither a valid network endpoint address nor a locality\n"
                    ));
                    return None;
                }
            }
        }
        if flags.iter().any(|f| f == "failed" || f == "all") {
            self.fail("ERROR: `failed' and `all' are not carried out by the simulated database\n");
            return None;
        }
        Some((targets, flags))
    }

    async fn exclude(&mut self, rest: &[Vec<u8>]) -> Result<(), Stop> {
        let Some((targets, flags)) = self.targets(rest) else {
            return Ok(());
        };
        if targets.is_empty() {
            self.fail("ERROR: At least one valid network endpoint address or a locality must be provided\n");
            return Ok(());
        }
        let force = flags.iter().any(|f| f == "FORCE");
        if !force
            && let Some(version) = self.fdb.protocol_version()
            && let Some(refusal) = self.fdb.exclude_refusal(&targets, &version)
        {
            self.fail(exclude_refusal_text(refusal, &version));
            return Ok(());
        }
        let blocking = !flags.iter().any(|f| f == "no_wait");
        if blocking {
            self.printed.out("Waiting for state to be removed from all excluded servers. This may take a while.\n(Interrupting this wait with CTRL+C will not cancel the data movement.)\n");
        }
        let result = self.admin.exclude(&targets, blocking).await;
        self.changed = true;
        if self.admin_result(result)?.is_some() {
            if blocking {
                self.printed.out("  Successfully excluded. It is now safe to remove these servers from the cluster.\n");
            }
            self.warn_of_coordinators(&targets);
        }
        Ok(())
    }

    /// `checkForCoordinators` (fdbcli/ExcludeCommand.actor.cpp, the same in 7.1, 7.3
    /// and 7.4): a warning on stderr per excluded coordinator, the exit code untouched.
    fn warn_of_coordinators(&mut self, targets: &[ExclusionTarget]) {
        let coordinators = self.fdb.excluded_coordinators(targets);
        for coordinator in &coordinators {
            self.printed
                .err(&format!("WARNING: {coordinator} is a coordinator!\n"));
        }
        if !coordinators.is_empty() {
            self.printed.out("Type `help coordinators' for information on how to change the\ncluster's coordination servers before removing them.\n");
        }
    }

    async fn include(&mut self, rest: &[Vec<u8>]) -> Result<(), Stop> {
        let Some((targets, _)) = self.targets(rest) else {
            return Ok(());
        };
        let result = self.admin.include(&targets).await;
        self.changed = true;
        self.admin_result(result)?;
        Ok(())
    }

    async fn coordinators(&mut self, rest: &[Vec<u8>]) -> Result<(), Stop> {
        let mut addresses = Vec::new();
        for token in rest.iter().map(|t| text(t)) {
            match ProcessAddress::parse(&token) {
                Ok(address) => addresses.push(address),
                Err(_) => {
                    self.fail(&format!(
                        "ERROR: `{token}' is not a valid network endpoint address\n"
                    ));
                    return Ok(());
                }
            }
        }
        if addresses.is_empty() {
            self.fail("ERROR: `coordinators' without addresses (or `auto') is not carried out by the simulated database\n");
            return Ok(());
        }
        let result = self.admin.change_coordinators(&addresses).await;
        if let Some(connection) = self.admin_result(result)? {
            self.changed = true;
            self.new_connection = Some(connection);
            self.printed.out("Coordination state changed\n");
        }
        Ok(())
    }

    /// `kill` loads the list of processes the cluster controller knows; `kill ADDR...`
    /// kills only when every address is on it, else refuses the whole command
    /// (`fdbcli/KillCommand.actor.cpp`, the same text in release-7.1, 7.3 and 7.4).
    async fn kill(&mut self, rest: &[Vec<u8>]) -> Result<(), Stop> {
        let words: Vec<String> = rest.iter().map(|t| text(t)).collect();
        if words.is_empty() || words == ["list"] {
            if words.is_empty() {
                self.killable = self.fdb.listed_workers();
                if self.fdb.protocol_version().is_none() {
                    return Err(Stop::Unavailable);
                }
            }
            self.print_killable();
            return Ok(());
        }
        if words == ["all"] {
            self.fail("ERROR: `kill all' is not carried out by the simulated database\n");
            return Ok(());
        }
        let mut addresses = Vec::new();
        for word in &words {
            match self.killable.iter().find(|a| a.to_string() == *word) {
                Some(address) => addresses.push(address.clone()),
                None => {
                    self.fail(&format!("ERROR: process `{word}' not recognized.\n"));
                    return Ok(());
                }
            }
        }
        let result = self.admin.kill(&addresses).await;
        if self.admin_result(result)?.is_some() {
            self.changed = true;
            self.printed.out(&format!(
                "Attempted to kill {} processes\n",
                addresses.len()
            ));
        }
        Ok(())
    }

    fn print_killable(&mut self) {
        let mut listed: Vec<String> = self.killable.iter().map(ToString::to_string).collect();
        listed.sort();
        let heading = match listed.len() {
            0 => "\nNo addresses can be killed.\n".to_owned(),
            1 => "\nThe following address can be killed:\n".to_owned(),
            n => format!("\nThe following {n} addresses can be killed:\n"),
        };
        self.printed.out(&heading);
        for address in listed {
            self.printed.out(&format!("{address}\n"));
        }
        self.printed.out("\n");
    }

    async fn maintenance(&mut self, rest: &[Vec<u8>]) -> Result<(), Stop> {
        let words: Vec<String> = rest.iter().map(|t| text(t)).collect();
        match words.as_slice() {
            [on, zone, seconds] if on == "on" => {
                let Ok(seconds) = seconds.parse::<u64>() else {
                    self.fail(&format!(
                        "ERROR: Maintenance duration {seconds} is not a valid number\n"
                    ));
                    return Ok(());
                };
                let result = self.admin.set_maintenance_zone(zone, seconds).await;
                if self.admin_result(result)?.is_some() {
                    self.changed = true;
                }
            }
            [off] if off == "off" => {
                let result = self.admin.reset_maintenance_zone().await;
                if self.admin_result(result)?.is_some() {
                    self.changed = true;
                }
            }
            _ => self.usage("maintenance [on|off] [ZONEID] [SECONDS]"),
        }
        Ok(())
    }

    fn option(&mut self, rest: &[Vec<u8>]) {
        let words: Vec<String> = rest.iter().map(|t| text(t)).collect();
        match words.as_slice() {
            [state, name]
                if (state == "on" || state == "off")
                    && (name == "ACCESS_SYSTEM_KEYS" || name == "READ_SYSTEM_KEYS") =>
            {
                self.system_keys = state == "on";
            }
            [state, name] if state == "on" || state == "off" => {
                self.fail(&format!("ERROR: invalid option `{name}'\n"));
            }
            _ => self.usage("option <STATE> <OPTION> <ARG>"),
        }
    }

    /// A key outside the user key space needs `option on ACCESS_SYSTEM_KEYS`
    /// (`key_outside_legal_range`, error 2004).
    fn legal(&mut self, key: &[u8]) -> bool {
        if key.first() == Some(&0xff) && !self.system_keys {
            self.fail("ERROR: Key outside legal range (2004)\n");
            return false;
        }
        true
    }

    async fn read_keys(&mut self, name: &str, rest: &[Vec<u8>]) -> Result<(), Stop> {
        let result = match (name, rest) {
            ("get", [key]) => {
                if !self.legal(key) {
                    return Ok(());
                }
                keys::get(self.admin, key).await
            }
            ("getrange", [begin, end, rest @ ..]) if rest.len() <= 1 => {
                let limit = match rest.first().map(|t| text(t).parse::<usize>()) {
                    None => 25,
                    Some(Ok(limit)) => limit,
                    Some(Err(_)) => {
                        self.fail("ERROR: bad limit\n");
                        return Ok(());
                    }
                };
                if !self.legal(begin) || !self.legal(end) {
                    return Ok(());
                }
                keys::get_range(self.admin, begin, end, limit).await
            }
            _ => {
                self.usage(&format!("{name} <KEY>..."));
                return Ok(());
            }
        };
        if let Some(text) = self.admin_result(result)? {
            self.printed.out(&text);
        }
        Ok(())
    }

    async fn write_keys(&mut self, name: &str, rest: &[Vec<u8>]) -> Result<(), Stop> {
        if !self.write_mode {
            self.fail("ERROR: writemode must be enabled to set or clear keys in the database.\n");
            return Ok(());
        }
        let mutation = match (name, rest) {
            ("set", [key, value]) => Mutation::Set(key.clone(), value.clone()),
            ("clear", [key]) => Mutation::Clear(key.clone()),
            ("clearrange", [begin, end]) => Mutation::ClearRange(begin.clone(), end.clone()),
            _ => {
                self.usage(&format!("{name} <KEY>..."));
                return Ok(());
            }
        };
        let key = match &mutation {
            Mutation::Set(key, _) | Mutation::Clear(key) | Mutation::ClearRange(key, _) => {
                key.clone()
            }
        };
        if !self.legal(&key) {
            return Ok(());
        }
        match self.transaction.as_mut() {
            Some(mutations) => {
                mutations.push(mutation);
                Ok(())
            }
            None => self.commit(&[mutation]).await,
        }
    }

    async fn commit(&mut self, mutations: &[Mutation]) -> Result<(), Stop> {
        let result = keys::commit(self.admin, mutations).await;
        if self.admin_result(result)?.is_some() {
            self.changed = true;
            self.printed.out("Committed\n");
        }
        Ok(())
    }
}

/// What fdbcli prints when the exclusion's commit is refused: the first lines of the
/// special key space's message, then its own hint, chosen by whether the message's last
/// line names "free space" (`excludeServersAndLocalities` in
/// fdbcli/ExcludeCommand.actor.cpp; the message is `checkExclusion`'s in
/// fdbclient/SpecialKeySpace.actor.cpp: 7.1 says "free space", 7.3 and 7.4 say
/// "available space", whose last line then gets the `FORCE failed` hint).
fn exclude_refusal_text(refusal: ExcludeRefusal, version: &fdb_shared::FdbVersion) -> &'static str {
    match refusal {
        ExcludeRefusal::FreeSpace if version.major == 7 && version.minor == 1 => {
            "ERROR: This exclude may cause the total free space in the cluster to drop below 10%.\nType `exclude FORCE <ADDRESS...>' to exclude without checking free space.\n"
        }
        ExcludeRefusal::FreeSpace => {
            "ERROR: This exclude may cause the total available space in the cluster to drop below 10%.\nType `exclude FORCE failed <ADDRESS...>' to exclude without performing safety checks.\n"
        }
        ExcludeRefusal::MetricsMissing => metrics_missing_text(version),
    }
}

/// The refusal when a storage role lacks its metrics (`checkExclusion`'s `errorString`
/// in fdbclient/SpecialKeySpace.actor.cpp), as fdbcli prints it: its last line traded
/// for fdbcli's hint. 7.1's ends "without checking free space." (the `FORCE` hint);
/// 7.3's says "available space" (the `FORCE failed` hint); 7.4 appends the missing
/// field's line, which is then the one dropped.
fn metrics_missing_text(version: &fdb_shared::FdbVersion) -> &'static str {
    match (version.major, version.minor) {
        (7, 1) => {
            "ERROR: Could not calculate the impact of this exclude on the total free space in the cluster.\nPlease try the exclude again in 30 seconds.\nType `exclude FORCE <ADDRESS...>' to exclude without checking free space.\n"
        }
        (7, 3) => {
            "ERROR: Could not calculate the impact of this exclude on the total available space in the cluster.\nPlease try the exclude again in 30 seconds.\nType `exclude FORCE failed <ADDRESS...>' to exclude without performing safety checks.\n"
        }
        _ => {
            "ERROR: Could not calculate the impact of this exclude on the total available space in the cluster.\nPlease try the exclude again in 30 seconds.\nCall set(\"0xff0xff/management/options/exclude/force\", ...) first to exclude without checking available space.\nType `exclude FORCE failed <ADDRESS...>' to exclude without performing safety checks.\n"
        }
    }
}
