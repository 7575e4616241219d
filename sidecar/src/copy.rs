//! The four copy actions (files, binaries, libraries, monitor conf) and atomic writes.
//!
//! Every write goes to a temporary file in the target directory, is fsynced, then
//! renamed over the target (and the directory fsynced), so the main container never sees
//! a half-written cluster file or monitor conf. Every write stays inside the output dir:
//! target directories are reached without following symlinks ([`crate::confined`]).
//!
//! Inputs are opened without blocking and must be regular files: a FIFO or a directory
//! where a ConfigMap key should be is an input error, not a hang or a server fault.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use fdb_shared::monitor_conf::substitute::{SubstitutionError, substitute};
use fdb_shared::sidecar::protocol::MONITOR_CONF_FILE;

use crate::config::SidecarConfig;
use crate::confined::{self, LookupError};

/// Mode of staged binaries (as the Python sidecar).
pub const BINARY_MODE: u32 = 0o744;
/// Mode of other written files.
pub const FILE_MODE: u32 = 0o644;

/// Why a copy action failed.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// A `--require-not-empty` file is missing or empty.
    #[error("No contents for file {}", path.display())]
    NoContents {
        /// The input file.
        path: PathBuf,
    },
    /// A file to copy does not exist in its source directory.
    #[error("Input file {} not found", path.display())]
    MissingInput {
        /// The missing source.
        path: PathBuf,
    },
    /// A file to copy or the template is a directory, FIFO, device or socket.
    #[error("Input file {name} is not a regular file")]
    NotRegularInput {
        /// The name relative to its source directory (server paths stay out of answers).
        name: String,
    },
    /// The monitor conf template is not UTF-8 text.
    #[error("Monitor conf template {name} is not valid UTF-8")]
    TemplateNotUtf8 {
        /// The name relative to the input dir.
        name: String,
    },
    /// The monitor conf template cannot be rendered.
    #[error("Cannot render monitor conf {}", template.display())]
    Render {
        /// The template file.
        template: PathBuf,
        /// The substitution error (names the variable).
        #[source]
        source: SubstitutionError,
    },
    /// A file system operation failed.
    #[error("{operation} {}", path.display())]
    Io {
        /// What was being done.
        operation: &'static str,
        /// The file concerned.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
}

impl CopyError {
    /// Whether the failure is caused by the input (ConfigMap content, such as a template
    /// using an unset variable) rather than a server fault.
    pub fn is_input_problem(&self) -> bool {
        matches!(
            self,
            Self::NoContents { .. }
                | Self::MissingInput { .. }
                | Self::NotRegularInput { .. }
                | Self::TemplateNotUtf8 { .. }
                | Self::Render { .. }
        )
    }
}

fn io_err(operation: &'static str, path: &Path) -> impl FnOnce(io::Error) -> CopyError + use<> {
    let path = path.to_owned();
    move |source| CopyError::Io {
        operation,
        path,
        source,
    }
}

/// Opens the directory that holds `rel` inside `output_dir` (creating it as needed,
/// replacing symlinked components, see [`confined::create_dirs`]) and returns it with
/// the file name.
fn target_dir<'a>(output_dir: &Path, rel: &'a Path) -> Result<(File, &'a OsStr), CopyError> {
    let invalid = || CopyError::Io {
        operation: "cannot write",
        path: output_dir.join(rel),
        source: io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a file name inside the output dir",
        ),
    };
    let names = confined::components(rel).ok_or_else(invalid)?;
    let Some((name, parents)) = names.split_last() else {
        return Err(invalid());
    };
    let dir_path = output_dir.join(rel.parent().unwrap_or(Path::new("")));
    let dir = confined::create_dirs(output_dir, parents)
        .map_err(io_err("cannot create directory", &dir_path))?;
    Ok((dir, name))
}

/// Writes `rel` inside `output_dir` atomically: `fill` writes into a temporary file next
/// to it, which is fsynced, given `mode`, and renamed over the target.
///
/// No component below `output_dir` is followed if it is a symlink (see
/// [`confined::create_dirs`] and [`confined::write_atomic`]). The temporary file gets a
/// random name (`.<name>.tmp.<random>`, created exclusively, retried on collision): in a
/// container the pid is always the same, so a pid-based name could meet a leftover of an
/// earlier run. Only the file created here is ever removed (on failure).
pub fn write_atomic(
    output_dir: &Path,
    rel: &Path,
    mode: u32,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), CopyError> {
    let (dir, name) = target_dir(output_dir, rel)?;
    confined::write_atomic(&dir, name, mode, fill).map_err(|e| CopyError::Io {
        operation: e.operation,
        path: output_dir.join(rel),
        source: e.source,
    })
}

/// Opens the input `name` of `source_dir` for reading; it must be a regular file.
///
/// `O_NONBLOCK`: opening a FIFO for reading would otherwise wait for a writer forever
/// (it has no effect on reads of regular files). Symlinks are followed: the input dir is
/// a ConfigMap mount made of symlinks into `..data`.
fn open_input(source_dir: &Path, name: &str) -> Result<File, CopyError> {
    let path = source_dir.join(name);
    let not_regular = || CopyError::NotRegularInput {
        name: name.to_owned(),
    };
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(&path)
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => CopyError::MissingInput { path: path.clone() },
            io::ErrorKind::IsADirectory => not_regular(),
            _ => io_err("cannot open", &path)(e),
        })?;
    let meta = file.metadata().map_err(io_err("cannot open", &path))?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    Ok(file)
}

/// Copies the input `name` of `source_dir` to `rel` inside `output_dir`, atomically.
fn copy_atomic(
    source_dir: &Path,
    name: &str,
    output_dir: &Path,
    rel: &Path,
    mode: u32,
) -> Result<(), CopyError> {
    let mut input = open_input(source_dir, name)?;
    write_atomic(output_dir, rel, mode, |out| {
        io::copy(&mut input, out).map(|_| ())
    })
}

/// Copies like [`copy_atomic`] unless `rel` already exists as a regular file (returns
/// whether it copied). Anything else there, a symlink included, is replaced.
fn copy_if_missing(
    source_dir: &Path,
    name: &str,
    output_dir: &Path,
    rel: &Path,
    mode: u32,
) -> Result<bool, CopyError> {
    let names = confined::components(rel).unwrap_or_default();
    match confined::check_regular(output_dir, &names) {
        Ok(()) => return Ok(false),
        Err(LookupError::NotFound | LookupError::NotRegular) => {}
        Err(LookupError::Io(e)) => return Err(io_err("cannot inspect", &output_dir.join(rel))(e)),
    }
    copy_atomic(source_dir, name, output_dir, rel, mode)?;
    Ok(true)
}

/// Copy files: checks the `--require-not-empty` files, then copies every `--copy-file`
/// from the input dir to the output dir (always overwriting).
pub fn copy_files(config: &SidecarConfig) -> Result<(), CopyError> {
    let args = &config.args;
    for name in &args.require_not_empty {
        let path = args.input_dir.join(name);
        let non_empty = fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() > 0);
        if !non_empty {
            return Err(CopyError::NoContents { path });
        }
    }
    for name in &args.copy_files {
        copy_atomic(
            &args.input_dir,
            name,
            &args.output_dir,
            Path::new(name),
            FILE_MODE,
        )?;
        tracing::debug!(file = %name, "copied file");
    }
    Ok(())
}

/// Copy binaries: when the main container runs another version, stages every
/// `--copy-binary` into `<out>/bin/<primary>/`, mode 0744, skipping existing targets.
pub fn copy_binaries(config: &SidecarConfig) -> Result<(), CopyError> {
    if !config.version_mismatch() {
        return Ok(());
    }
    let args = &config.args;
    let target_dir = Path::new("bin").join(&config.primary_version);
    for name in &args.copy_binaries {
        let rel = target_dir.join(name);
        if copy_if_missing(&args.binary_dir, name, &args.output_dir, &rel, BINARY_MODE)? {
            tracing::info!(binary = %name, version = %config.primary_version, "staged binary");
        }
    }
    Ok(())
}

/// Copy libraries: `libfdb_c_<V>.so` for each `--copy-library`; the first becomes
/// `<out>/lib/libfdb_c.so`, the others `<out>/lib/multiversion/libfdb_c_<V>.so`;
/// existing targets are kept.
pub fn copy_libraries(config: &SidecarConfig) -> Result<(), CopyError> {
    let args = &config.args;
    for (index, version) in args.copy_libraries.iter().enumerate() {
        let file = format!("libfdb_c_{version}.so");
        let rel = if index == 0 {
            Path::new("lib").join("libfdb_c.so")
        } else {
            Path::new("lib").join("multiversion").join(&file)
        };
        if copy_if_missing(&args.library_dir, &file, &args.output_dir, &rel, FILE_MODE)? {
            tracing::info!(library = %version, "copied client library");
        }
    }
    Ok(())
}

/// Renders the monitor conf template with the substitutions (without writing it).
pub fn render_monitor_conf(config: &SidecarConfig) -> Result<Option<String>, CopyError> {
    let Some(name) = &config.args.input_monitor_conf else {
        return Ok(None);
    };
    let template_path = config.args.input_dir.join(name);
    let mut bytes = Vec::new();
    open_input(&config.args.input_dir, name)?
        .read_to_end(&mut bytes)
        .map_err(io_err("cannot read", &template_path))?;
    let template =
        String::from_utf8(bytes).map_err(|_| CopyError::TemplateNotUtf8 { name: name.clone() })?;
    substitute(&template, &config.substitutions)
        .map(Some)
        .map_err(|source| CopyError::Render {
            template: template_path,
            source,
        })
}

/// Copy monitor conf: renders `--input-monitor-conf` into `<out>/fdbmonitor.conf`.
pub fn copy_monitor_conf(config: &SidecarConfig) -> Result<(), CopyError> {
    let Some(rendered) = render_monitor_conf(config)? else {
        return Ok(());
    };
    write_atomic(
        &config.args.output_dir,
        Path::new(MONITOR_CONF_FILE),
        FILE_MODE,
        |out| out.write_all(rendered.as_bytes()),
    )?;
    tracing::debug!(file = MONITOR_CONF_FILE, "wrote monitor conf");
    Ok(())
}

/// The start-up sequence: copy files, binaries, libraries, monitor conf, in that order.
pub fn run_startup_copies(config: &SidecarConfig) -> Result<(), CopyError> {
    copy_files(config)?;
    copy_binaries(config)?;
    copy_libraries(config)?;
    copy_monitor_conf(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;

    struct Setup {
        dir: tempfile::TempDir,
    }

    impl Setup {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            for sub in ["in", "out", "bin", "lib"] {
                fs::create_dir_all(dir.path().join(sub)).unwrap();
            }
            fs::write(dir.path().join("version"), "7.1.57\n").unwrap();
            fs::write(dir.path().join("in/fdb.cluster"), "test:abc@127.0.0.1:4501").unwrap();
            fs::write(
                dir.path().join("in/fdbmonitor.conf"),
                "command = $BINARY_DIR/fdbserver\nid = $FDB_INSTANCE_ID\n",
            )
            .unwrap();
            fs::write(dir.path().join("bin/fdbserver"), "fdbserver 7.1.57").unwrap();
            fs::write(dir.path().join("lib/libfdb_c_7.1.57.so"), "lib 7.1").unwrap();
            fs::write(dir.path().join("lib/libfdb_c_6.3.25.so"), "lib 6.3").unwrap();
            Self { dir }
        }

        fn path(&self, rel: &str) -> PathBuf {
            self.dir.path().join(rel)
        }

        fn config(&self, extra: &[&str]) -> SidecarConfig {
            self.config_with_env(extra, "storage-7")
        }

        fn config_with_env(&self, extra: &[&str], instance_id: &str) -> SidecarConfig {
            let mut args: Vec<String> = vec![
                "--version-file".into(),
                self.path("version").display().to_string(),
                "--input-dir".into(),
                self.path("in").display().to_string(),
                "--output-dir".into(),
                self.path("out").display().to_string(),
                "--binary-dir".into(),
                self.path("bin").display().to_string(),
                "--library-dir".into(),
                self.path("lib").display().to_string(),
            ];
            args.extend(extra.iter().map(|s| s.to_string()));
            let env = BTreeMap::from([
                ("FDB_INSTANCE_ID".to_owned(), instance_id.to_owned()),
                ("EXTRA".to_owned(), "[fdbserver.2]".to_owned()),
            ]);
            SidecarConfig::from_args(args, &env).unwrap()
        }
    }

    #[test]
    fn startup_copies_write_everything_atomically() {
        let s = Setup::new();
        let config = s.config(&[
            "--copy-file",
            "fdb.cluster",
            "--input-monitor-conf",
            "fdbmonitor.conf",
            "--copy-binary",
            "fdbserver",
            "--main-container-version",
            "7.1.50",
            "--copy-library",
            "7.1.57",
            "--copy-library",
            "6.3.25",
        ]);
        run_startup_copies(&config).unwrap();
        assert_eq!(
            fs::read_to_string(s.path("out/fdb.cluster")).unwrap(),
            "test:abc@127.0.0.1:4501"
        );
        let conf = fs::read_to_string(s.path("out/fdbmonitor.conf")).unwrap();
        assert_eq!(
            conf,
            "command = /var/dynamic-conf/bin/7.1.57/fdbserver\nid = storage-7\n"
        );
        let staged = s.path("out/bin/7.1.57/fdbserver");
        assert_eq!(
            fs::metadata(&staged).unwrap().permissions().mode() & 0o777,
            0o744
        );
        assert_eq!(
            fs::read_to_string(s.path("out/lib/libfdb_c.so")).unwrap(),
            "lib 7.1"
        );
        assert_eq!(
            fs::read_to_string(s.path("out/lib/multiversion/libfdb_c_6.3.25.so")).unwrap(),
            "lib 6.3"
        );
        let leftovers: Vec<_> = fs::read_dir(s.path("out"))
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp."))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn leftover_temporary_files_neither_block_writes_nor_get_removed() {
        let s = Setup::new();
        let out = s.path("out");
        // Leftovers of an earlier run with the same pid (always 1 in a container), named
        // like pid-and-counter temporary files.
        let leftovers: Vec<PathBuf> = (0..256)
            .map(|n| out.join(format!(".fdb.cluster.tmp.{}.{n}", std::process::id())))
            .collect();
        for path in &leftovers {
            fs::write(path, "leftover").unwrap();
        }
        let target = out.join("fdb.cluster");
        let rel = Path::new("fdb.cluster");
        write_atomic(&out, rel, FILE_MODE, |f| f.write_all(b"new")).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");

        let failed = write_atomic(&out, rel, FILE_MODE, |_| Err(io::Error::other("disk full")));
        assert!(failed.is_err());
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
        for path in &leftovers {
            assert_eq!(fs::read_to_string(path).unwrap(), "leftover", "{path:?}");
        }
        // Only the leftovers remain besides the target: our own temp files are gone.
        assert_eq!(fs::read_dir(&out).unwrap().count(), leftovers.len() + 1);
    }

    #[test]
    fn binaries_are_not_staged_without_mismatch_and_existing_targets_are_kept() {
        let s = Setup::new();
        copy_binaries(&s.config(&[
            "--copy-binary",
            "fdbserver",
            "--main-container-version",
            "7.1.57",
        ]))
        .unwrap();
        assert!(!s.path("out/bin").exists());
        fs::create_dir_all(s.path("out/bin/7.1.57")).unwrap();
        fs::write(s.path("out/bin/7.1.57/fdbserver"), "old").unwrap();
        copy_binaries(&s.config(&[
            "--copy-binary",
            "fdbserver",
            "--main-container-version",
            "7.1.50",
        ]))
        .unwrap();
        assert_eq!(
            fs::read_to_string(s.path("out/bin/7.1.57/fdbserver")).unwrap(),
            "old"
        );
    }

    #[test]
    fn require_not_empty_names_the_file() {
        let s = Setup::new();
        fs::write(s.path("in/empty"), "").unwrap();
        let err =
            copy_files(&s.config(&["--require-not-empty", "empty", "--copy-file", "fdb.cluster"]))
                .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("No contents for file {}", s.path("in/empty").display())
        );
        let err = copy_files(&s.config(&["--require-not-empty", "absent"])).unwrap_err();
        assert!(matches!(err, CopyError::NoContents { .. }));
        assert!(!s.path("out/fdb.cluster").exists());
    }

    #[test]
    fn copies_follow_configmap_symlinks_and_overwrite() {
        let s = Setup::new();
        fs::create_dir_all(s.path("in/..data")).unwrap();
        fs::write(s.path("in/..data/cluster"), "v2").unwrap();
        std::os::unix::fs::symlink("..data/cluster", s.path("in/linked")).unwrap();
        fs::write(s.path("out/linked"), "v1").unwrap();
        copy_files(&s.config(&["--copy-file", "linked"])).unwrap();
        assert_eq!(fs::read_to_string(s.path("out/linked")).unwrap(), "v2");
        assert!(
            !fs::symlink_metadata(s.path("out/linked"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn unset_template_variable_fails_without_writing() {
        let s = Setup::new();
        fs::write(s.path("in/fdbmonitor.conf"), "x = $FDB_DNS_NAME\n").unwrap();
        let err =
            copy_monitor_conf(&s.config(&["--input-monitor-conf", "fdbmonitor.conf"])).unwrap_err();
        let text = fdb_shared::error_chain::chain_text(&err);
        assert!(
            text.starts_with("Cannot render monitor conf ")
                && text.contains("$FDB_DNS_NAME is not set"),
            "{text}"
        );
        assert!(!s.path("out/fdbmonitor.conf").exists());
    }

    #[test]
    fn hostile_environment_values_are_refused_without_writing() {
        let s = Setup::new();
        let hostile = "storage-7\n[fdbserver.2]\ncommand = /bin/sh";
        let config = s.config_with_env(&["--input-monitor-conf", "fdbmonitor.conf"], hostile);
        let err = copy_monitor_conf(&config).unwrap_err();
        assert!(err.is_input_problem());
        let text = fdb_shared::error_chain::chain_text(&err);
        assert!(
            text.contains("$FDB_INSTANCE_ID is refused") && text.contains("line break"),
            "{text}"
        );
        assert!(!s.path("out/fdbmonitor.conf").exists());
        fs::write(s.path("in/fdbmonitor.conf"), "x = $EXTRA\n").unwrap();
        let config = s.config(&[
            "--input-monitor-conf",
            "fdbmonitor.conf",
            "--substitute-variable",
            "EXTRA",
        ]);
        let err = copy_monitor_conf(&config).unwrap_err();
        let text = fdb_shared::error_chain::chain_text(&err);
        assert!(text.contains("$EXTRA is refused"), "{text}");
        assert!(!s.path("out/fdbmonitor.conf").exists());
    }

    #[test]
    fn fifo_and_directory_inputs_are_refused_without_blocking() {
        let s = Setup::new();
        fs::remove_file(s.path("in/fdb.cluster")).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(s.path("in/fdb.cluster"))
            .status()
            .unwrap();
        assert!(status.success());
        fs::create_dir(s.path("in/adir")).unwrap();
        // On a plain thread, so that a regression fails the test instead of hanging it.
        let (sender, receiver) = std::sync::mpsc::channel();
        let config = s.config(&["--copy-file", "fdb.cluster"]);
        std::thread::spawn(move || sender.send(copy_files(&config)));
        let err = receiver
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("copying a FIFO must not block")
            .unwrap_err();
        assert!(err.is_input_problem());
        assert_eq!(
            err.to_string(),
            "Input file fdb.cluster is not a regular file"
        );
        let err = copy_files(&s.config(&["--copy-file", "adir"])).unwrap_err();
        assert_eq!(err.to_string(), "Input file adir is not a regular file");
        assert!(!s.path("out/fdb.cluster").exists());
        assert!(!s.path("out/adir").exists());
    }

    #[test]
    fn missing_inputs_are_reported() {
        let s = Setup::new();
        let err = copy_files(&s.config(&["--copy-file", "nope"])).unwrap_err();
        assert!(err.is_input_problem());
        let err = copy_binaries(&s.config(&[
            "--copy-binary",
            "fdbcli",
            "--main-container-version",
            "7.1.50",
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("fdbcli"), "{err}");
        // Nothing is created for a copy that cannot happen.
        assert!(!s.path("out/bin").exists());
    }
}
