//! One module per command; [`run`] dispatches.

pub mod analyze;
pub mod buggify;
pub mod coordinators;
pub mod deprecation;
pub mod get;
pub mod recover;
pub mod remove;
pub mod restart;
pub mod snapshot;
pub mod update;
pub mod version;

use crate::cli::{Command, GetCommand, RemoveCommand, UpdateCommand};
use crate::error::PluginError;
use crate::session::Session;

/// Runs a command; returns its exit status.
pub async fn run(session: &Session, command: Command) -> Result<u8, PluginError> {
    match command {
        Command::Version(args) => version::run(session, &args).await,
        Command::Analyze(args) => analyze::run(session, args).await,
        Command::Remove(RemoveCommand::ProcessGroups(args)) => remove::run(session, args).await,
        Command::Cordon(args) => remove::cordon(session, args).await,
        Command::Restart(args) => restart::run(session, args).await,
        Command::Exec(args) => restart::exec_command(session, args).await,
        Command::Buggify(command) => buggify::run(session, command).await,
        Command::FixCoordinatorIps(args) => coordinators::run(session, &args).await,
        Command::RecoverMultiRegionCluster(args) => recover::run(session, &args).await,
        Command::Get(GetCommand::Configuration(args)) => get::configuration(session, &args).await,
        Command::Get(GetCommand::ExclusionStatus(args)) => {
            get::exclusion_status(session, &args).await
        }
        Command::Deprecation(args) => deprecation::run(session, &args).await,
        Command::Update(UpdateCommand::ConnectionString(args)) => {
            update::connection_string(session, &args).await
        }
        Command::Snapshot(args) => snapshot::snapshot(session, &args).await,
        Command::Rehearse(args) => snapshot::rehearse(session, &args).await,
    }
}

/// Adds `items` to `list` (each once); true when the list changed.
pub fn add_all(list: &mut Vec<String>, items: &[String]) -> bool {
    let before = list.len();
    for item in items {
        if !list.contains(item) {
            list.push(item.clone());
        }
    }
    list.len() != before
}

/// Removes `items` from `list`; true when the list changed.
pub fn remove_all(list: &mut Vec<String>, items: &[String]) -> bool {
    let before = list.len();
    list.retain(|entry| !items.contains(entry));
    list.len() != before
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_edits_are_idempotent_and_say_whether_they_changed_anything() {
        let mut list = vec!["a".to_owned()];
        assert!(add_all(&mut list, &["b".into(), "a".into()]));
        assert_eq!(list, ["a", "b"]);
        assert!(!add_all(&mut list, &["b".into()]));
        assert!(remove_all(&mut list, &["a".into()]));
        assert!(!remove_all(&mut list, &["a".into()]));
        assert_eq!(list, ["b"]);
    }
}
