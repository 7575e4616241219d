//! `fdb-operator crds`: prints the CustomResourceDefinitions.

use std::io::Write;
use std::process::ExitCode;

use fdb_shared::api::crd::{CrdRenderError, crds_yaml};

/// The YAML stream `fdb-operator crds` prints.
pub fn render() -> Result<String, CrdRenderError> {
    crds_yaml()
}

/// Prints the CRDs; exit 1 when they cannot be rendered or written.
pub fn run() -> ExitCode {
    let yaml = match render() {
        Ok(yaml) => yaml,
        Err(error) => {
            eprintln!("error: {}", fdb_shared::error_chain::ErrorChain(&error));
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(yaml.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: cannot write the CRDs to standard output: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `crds/foundationdb-crds.yaml` must be exactly what the types generate. Run with
    /// `UPDATE_CRDS=1` to rewrite it.
    #[test]
    fn committed_crds_are_up_to_date() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crds/foundationdb-crds.yaml");
        let generated = render().unwrap();
        if std::env::var_os("UPDATE_CRDS").is_some() {
            std::fs::write(&path, &generated).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != generated {
            let diff = similar::TextDiff::from_lines(&committed, &generated)
                .unified_diff()
                .context_radius(3)
                .header(
                    "crds/foundationdb-crds.yaml (committed)",
                    "fdb-operator crds (generated)",
                )
                .to_string();
            panic!(
                "crds/foundationdb-crds.yaml is stale; refresh it with\n  \
                 UPDATE_CRDS=1 cargo test -p fdb-operator-cli committed_crds_are_up_to_date\n\
                 or: cargo run --bin fdb-operator -- crds > crds/foundationdb-crds.yaml\n\n{diff}"
            );
        }
    }
}
