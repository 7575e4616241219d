//! `fdb-sidecar` command line.
fn main() {}
