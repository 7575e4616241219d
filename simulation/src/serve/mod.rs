//! `fdb-operator simulate --serve ADDR`: the simulated world's Kubernetes API over HTTP,
//! so `kubectl`, `kubectl-fdb` or any kube client can look around the world and change it
//! while the operator keeps reconciling.
//!
//! The in-memory API server ([`crate::kube`]) answers every request, tagged
//! with the actor [`SERVED_ACTOR`]; this module adds what clients need around it:
//! discovery ([`discovery`]), server-side `Table` printing ([`table`]), the CRDs as
//! `customresourcedefinitions`, the HTTP listener ([`http`]) and the kubeconfig
//! ([`kubeconfig`]). Only loopback addresses are served: there is no authentication.

pub mod control;
pub mod discovery;
pub mod exec;
pub mod exec_bounds;
pub mod exec_database;
mod exec_fdbcli;
mod exec_files;
mod exec_tty;
pub mod http;
pub mod kubeconfig;
pub mod openapi;
pub mod table;
pub mod tool_files;
pub mod tools;
pub mod watch_timing;

use std::net::SocketAddr;
use std::path::PathBuf;

/// The actor the served API's requests are counted and logged as.
pub const SERVED_ACTOR: &str = "kubectl";

/// The fastest simulated clock served: 1000 simulated seconds per wall-clock second (a
/// simulated day in under 90 s). Faster, the world cannot keep up: each tick's catch-up
/// grows, memory with it, and the loop no longer gets to a stop signal in time.
pub const MAX_SPEED: f64 = 1000.0;
/// The slowest simulated clock served (one simulated second in about 17 minutes).
pub const MIN_SPEED: f64 = 0.001;

/// Checks a `--speed`: a finite number from [`MIN_SPEED`] to [`MAX_SPEED`].
pub fn check_speed(speed: f64) -> Result<f64, String> {
    if speed.is_finite() && (MIN_SPEED..=MAX_SPEED).contains(&speed) {
        Ok(speed)
    } else {
        Err(format!(
            "{speed} is not from {MIN_SPEED} to {MAX_SPEED} simulated seconds per wall-clock \
             second"
        ))
    }
}

/// How to serve a world.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The address to listen on (loopback; port 0 picks a free one).
    pub address: SocketAddr,
    /// Where to write the kubeconfig, once the API answers.
    pub kubeconfig: PathBuf,
    /// Simulated seconds per wall-clock second.
    pub speed: f64,
    /// Serve the world to an operator run outside it (`--external-operator`): its own
    /// kubeconfig ([`ServeOptions::operator_kubeconfig`]) points at a listener of its own,
    /// and every request arriving there is the operator's.
    pub external_operator: bool,
    /// With `external_operator`: where to write the stand-in FoundationDB tools
    /// (`--fdb-tools-dir`), and the program they run.
    pub fdb_tools: Option<ToolsDir>,
}

/// `--fdb-tools-dir`: the directory of the stand-in tools and the `fdb-operator`
/// binary they run (`fdb-operator served-tool`).
#[derive(Debug, Clone)]
pub struct ToolsDir {
    /// `DIR`: the tools go to `DIR/<minor>/`.
    pub dir: PathBuf,
    /// The `fdb-operator` binary (absolute).
    pub program: PathBuf,
}

impl ServeOptions {
    /// The external operator's kubeconfig: the users' file with `.operator` appended
    /// (`sim.kubeconfig` -> `sim.kubeconfig.operator`), next to it.
    pub fn operator_kubeconfig(&self) -> PathBuf {
        let mut path = self.kubeconfig.as_os_str().to_owned();
        path.push(".operator");
        PathBuf::from(path)
    }
}

/// Why the world cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address is not a loopback address.
    #[error(
        "{0} is not a loopback address: the served API has no authentication, so only 127.0.0.0/8 or ::1 may serve it"
    )]
    NotLoopback(SocketAddr),
    /// `--external-operator` with a `--speed` other than 1: the operator outside reads
    /// the wall clock, so the world's must follow it.
    #[error(
        "--speed {0} with --external-operator: the external operator runs on the wall clock, so the world runs at speed 1"
    )]
    ExternalSpeed(f64),
    /// `--fdb-tools-dir` without `--external-operator`: the world's own operator runs
    /// the simulated database directly, so the tools would have no user.
    #[error(
        "--fdb-tools-dir needs --external-operator: the tools are for an operator run outside the world"
    )]
    ToolsWithoutExternalOperator,
    /// The stand-in tools could not be written.
    #[error(transparent)]
    Tools(#[from] tool_files::ToolFilesError),
    /// The speed is out of [`MIN_SPEED`]..=[`MAX_SPEED`].
    #[error("--speed {0} is not from 0.001 to 1000 simulated seconds per wall-clock second")]
    InvalidSpeed(f64),
    /// The listener could not be bound.
    #[error("cannot listen on {address}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The listener does not answer its own request.
    #[error("the API served on {address} does not answer: {detail}")]
    NoAnswer {
        /// The address.
        address: SocketAddr,
        /// What failed.
        detail: String,
    },
    /// The kubeconfig could not be written.
    #[error("cannot write the kubeconfig {}", path.display())]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl ServeOptions {
    /// Checks the options: a loopback address and a positive speed.
    pub fn validate(&self) -> Result<(), ServeError> {
        if !self.address.ip().is_loopback() {
            return Err(ServeError::NotLoopback(self.address));
        }
        if check_speed(self.speed).is_err() {
            return Err(ServeError::InvalidSpeed(self.speed));
        }
        if self.external_operator && (self.speed - 1.0).abs() > f64::EPSILON {
            return Err(ServeError::ExternalSpeed(self.speed));
        }
        if self.fdb_tools.is_some() && !self.external_operator {
            return Err(ServeError::ToolsWithoutExternalOperator);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(address: &str, speed: f64) -> ServeOptions {
        ServeOptions {
            address: address.parse().unwrap(),
            kubeconfig: PathBuf::from("k"),
            speed,
            external_operator: false,
            fdb_tools: None,
        }
    }

    #[test]
    fn only_loopback_addresses_and_bounded_speeds_are_served() {
        assert!(options("127.0.0.1:0", 1.0).validate().is_ok());
        assert!(options("[::1]:8001", 60.0).validate().is_ok());
        assert!(matches!(
            options("0.0.0.0:8001", 1.0).validate(),
            Err(ServeError::NotLoopback(_))
        ));
        assert!(matches!(
            options("10.1.2.3:8001", 1.0).validate(),
            Err(ServeError::NotLoopback(_))
        ));
        assert!(matches!(
            options("127.0.0.1:0", 0.0).validate(),
            Err(ServeError::InvalidSpeed(_))
        ));
        assert!(options("127.0.0.1:0", f64::NAN).validate().is_err());
        assert!(options("127.0.0.1:0", 1e308).validate().is_err());
        assert!(options("127.0.0.1:0", 1001.0).validate().is_err());
        assert!(options("127.0.0.1:0", 1000.0).validate().is_ok());
        assert!(options("127.0.0.1:0", 0.001).validate().is_ok());
        let external = |speed| ServeOptions {
            external_operator: true,
            ..options("127.0.0.1:0", speed)
        };
        assert!(external(1.0).validate().is_ok());
        assert!(matches!(
            external(10.0).validate(),
            Err(ServeError::ExternalSpeed(_))
        ));
        assert_eq!(
            external(1.0).operator_kubeconfig(),
            PathBuf::from("k.operator")
        );
    }
}
