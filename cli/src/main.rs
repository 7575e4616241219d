//! `fdb-operator` command line.

/// mimalloc: passes allocate and free many small objects (labels, names, status
/// entries); glibc's malloc spent about a quarter of a 1000-group pass on
/// fragmentation bookkeeping. The scale benchmark uses the same allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // No transparent huge pages for this process. mimalloc advises huge pages on its
    // arena (MADV_HUGEPAGE), and khugepaged then backs every 2 MiB range of it that holds
    // any live object with a whole huge page: an operator at rest over 100 clusters grew
    // from 143 to over 180 MiB resident with no pass running (docs/operations.md,
    // "Sizing"). A kernel without this prctl keeps its huge pages; nothing else changes.
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
    fdb_operator_cli::main()
}
