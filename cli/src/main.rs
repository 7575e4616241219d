//! `fdb-operator` command line.

/// mimalloc: passes allocate and free many small objects (labels, names, status
/// entries); glibc's malloc spent about a quarter of a 1000-group pass on
/// fragmentation bookkeeping. The scale benchmark uses the same allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    fdb_operator_cli::main()
}
