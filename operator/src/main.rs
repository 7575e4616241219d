//! `fdb-operator` command line.

fn main() -> std::process::ExitCode {
    fdb_operator::cli::main()
}
