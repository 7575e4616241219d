//! FoundationDB connection strings: `description:generation_id@coordinator,coordinator,...`.

use std::fmt;
use std::str::FromStr;

use crate::address::{AddressParseError, ProcessAddress};

/// The content of a cluster file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConnectionString {
    /// The database description (letters, digits and `_`).
    pub description: String,
    /// The generation ID, changed on every coordinator change (letters and digits).
    pub generation_id: String,
    /// The coordinators, in the order written.
    pub coordinators: Vec<ProcessAddress>,
}

/// Why a connection string is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionStringError {
    /// The `@` between the ID part and the coordinators is missing.
    #[error("connection string {input:?} has no `@` (expected description:id@coordinators)")]
    MissingAt {
        /// The text that failed to parse.
        input: String,
    },
    /// The `:` between description and generation ID is missing.
    #[error("connection string {input:?} has no `:` between description and ID")]
    MissingColon {
        /// The text that failed to parse.
        input: String,
    },
    /// The description is empty or has characters other than letters, digits and `_`.
    #[error(
        "connection string {input:?}: description {description:?} must be non-empty letters, digits or `_`"
    )]
    InvalidDescription {
        /// The text that failed to parse.
        input: String,
        /// The offending description.
        description: String,
    },
    /// The generation ID is empty or has characters other than letters and digits.
    #[error(
        "connection string {input:?}: generation ID {generation_id:?} must be non-empty letters or digits"
    )]
    InvalidGenerationId {
        /// The text that failed to parse.
        input: String,
        /// The offending ID.
        generation_id: String,
    },
    /// No coordinators are listed.
    #[error("connection string {input:?} lists no coordinators")]
    NoCoordinators {
        /// The text that failed to parse.
        input: String,
    },
    /// A coordinator address is invalid.
    #[error("connection string {input:?}: coordinator {index}")]
    InvalidCoordinator {
        /// The text that failed to parse.
        input: String,
        /// Zero-based position of the coordinator.
        index: usize,
        /// The address error.
        source: AddressParseError,
    },
    /// The same coordinator is listed twice.
    #[error("connection string {input:?} lists coordinator {address} twice")]
    DuplicateCoordinator {
        /// The text that failed to parse.
        input: String,
        /// The repeated address.
        address: String,
    },
}

fn valid_description(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn valid_generation_id(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric())
}

impl ConnectionString {
    /// Parses a connection string; surrounding whitespace (a cluster file's newline) and
    /// `#` comment lines are ignored.
    pub fn parse(input: &str) -> Result<Self, ConnectionStringError> {
        let text = input
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty() && !line.starts_with('#'))
            .unwrap_or("");
        let owned = || input.trim().to_owned();
        let (ids, coordinators_text) = text
            .split_once('@')
            .ok_or_else(|| ConnectionStringError::MissingAt { input: owned() })?;
        let (description, generation_id) = ids
            .split_once(':')
            .ok_or_else(|| ConnectionStringError::MissingColon { input: owned() })?;
        if !valid_description(description) {
            return Err(ConnectionStringError::InvalidDescription {
                input: owned(),
                description: description.to_owned(),
            });
        }
        if !valid_generation_id(generation_id) {
            return Err(ConnectionStringError::InvalidGenerationId {
                input: owned(),
                generation_id: generation_id.to_owned(),
            });
        }
        if coordinators_text.trim().is_empty() {
            return Err(ConnectionStringError::NoCoordinators { input: owned() });
        }
        let mut coordinators: Vec<ProcessAddress> = Vec::new();
        for (index, part) in coordinators_text.split(',').enumerate() {
            let address = ProcessAddress::parse(part).map_err(|source| {
                ConnectionStringError::InvalidCoordinator {
                    input: owned(),
                    index,
                    source,
                }
            })?;
            if coordinators.contains(&address) {
                return Err(ConnectionStringError::DuplicateCoordinator {
                    input: owned(),
                    address: address.to_string(),
                });
            }
            coordinators.push(address);
        }
        Ok(Self {
            description: description.to_owned(),
            generation_id: generation_id.to_owned(),
            coordinators,
        })
    }

    /// The same database with other coordinators and a new generation ID.
    pub fn with_coordinators(
        &self,
        generation_id: impl Into<String>,
        coordinators: Vec<ProcessAddress>,
    ) -> Self {
        Self {
            description: self.description.clone(),
            generation_id: generation_id.into(),
            coordinators,
        }
    }

    /// Whether any coordinator is given by DNS name.
    pub fn uses_dns_names(&self) -> bool {
        self.coordinators.iter().any(ProcessAddress::is_dns_name)
    }
}

impl fmt::Display for ConnectionString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}@", self.description, self.generation_id)?;
        for (index, coordinator) in self.coordinators.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{coordinator}")?;
        }
        Ok(())
    }
}

impl FromStr for ConnectionString {
    type Err = ConnectionStringError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        Self::parse(input)
    }
}

crate::text_serde::serde_as_text!(ConnectionString);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_round_trip() {
        let text = "test_cluster:aHeD9ocNXOUxi0dyzU3k7Bhg53SpyrBV@10.1.18.253:4501,10.1.18.254:4501,[::1]:4500:tls";
        let parsed = ConnectionString::parse(text).unwrap();
        assert_eq!(parsed.description, "test_cluster");
        assert_eq!(parsed.generation_id, "aHeD9ocNXOUxi0dyzU3k7Bhg53SpyrBV");
        assert_eq!(parsed.coordinators.len(), 3);
        assert!(parsed.coordinators[2].tls);
        assert_eq!(parsed.to_string(), text);
        let file = format!("# comment\n{text}\n");
        assert_eq!(ConnectionString::parse(&file).unwrap(), parsed);
    }

    #[test]
    fn changing_coordinators_keeps_the_description() {
        let parsed = ConnectionString::parse("db:abc@10.0.0.1:4501").unwrap();
        let changed =
            parsed.with_coordinators("xyz", vec![ProcessAddress::new("pod.svc.local", 4501)]);
        assert_eq!(changed.to_string(), "db:xyz@pod.svc.local:4501");
        assert!(changed.uses_dns_names());
    }

    #[test]
    fn errors_name_the_problem() {
        for (text, expected) in [
            ("db:abc", "no `@`"),
            ("dbabc@10.0.0.1:4501", "no `:`"),
            ("d-b:abc@10.0.0.1:4501", "description"),
            ("db:a_c@10.0.0.1:4501", "generation ID"),
            ("db:abc@", "no coordinators"),
            ("db:abc@10.0.0.1", "coordinator 0"),
            ("db:abc@10.0.0.1:4501,10.0.0.1:4501", "twice"),
        ] {
            let error = ConnectionString::parse(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
    }
}
