//! The `fdb-operator` command line, as a library so tests can parse it as the binary does:
//! [`commands`] holds the subcommands, [`simulate`] runs a scenario in the simulated world.

pub mod commands;
pub mod served_tool;
pub mod simulate;
pub mod snapshot;
pub mod stop_signals;

pub use commands::{Cli, Command, main, run};
