//! `fdb-operator` command line.
fn main() {}
