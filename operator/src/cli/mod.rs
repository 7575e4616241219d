//! The operator's own commands (`run`, `explain`, `crds`), as library functions: the
//! `fdb-operator` binary (the `cli/` crate) parses the command line and calls them, beside
//! `simulate`, which lives with the simulation.

pub mod crds;
pub mod explain;
pub mod explain_backup;
pub mod fdbcli_tls;
pub mod manifest;
pub mod pod_template_args;
pub mod run;
