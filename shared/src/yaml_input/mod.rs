//! Reading YAML (or JSON) that a person wrote, with bounds: manifests for
//! `fdb-operator explain`, scenarios for `fdb-operator simulate`.
//!
//! Limits, each named in its error:
//! - [`MAX_INPUT_BYTES`] (4 MiB) per file: a FoundationDBCluster manifest or a scenario is
//!   a few KiB; Kubernetes itself refuses objects above about 1.5 MiB.
//! - [`MAX_NESTING_DEPTH`] (64) levels of mappings and sequences: the deepest real
//!   manifests (pod templates with affinities) need about 20. Checked by a linear
//!   pre-scan before parsing, because the YAML parser slows down with depth on every
//!   token (100 000 flow levels take minutes), and again exactly while building values.
//! - [`MAX_VALUES`] values per document after expanding aliases (an "alias bomb" is a
//!   few lines that expand to billions of values).
//!
//! Also refused, each with the line: a key given twice in one mapping (YAML keeps only
//! one), and `.nan` / `.inf` (JSON has no such numbers; they would silently become
//! `null`). A UTF-8 byte order mark at the start of the text is ignored.

mod locate;
mod prescan;
mod strict;

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::de::DeserializeSeed;
use serde_json::Value;

/// The largest file read, in bytes (4 MiB).
pub const MAX_INPUT_BYTES: usize = 4 * 1024 * 1024;
/// The deepest nesting of mappings and sequences accepted.
pub const MAX_NESTING_DEPTH: usize = 64;
/// The most values one document may hold, aliases expanded.
pub const MAX_VALUES: usize = 1_000_000;

/// The UTF-8 byte order mark some editors put at the start of a file.
const BYTE_ORDER_MARK: char = '\u{feff}';

/// Why a text cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The text is larger than [`MAX_INPUT_BYTES`].
    #[error(
        "the file is {bytes} bytes, above the limit of {limit} bytes (4 MiB) for a manifest \
         or scenario; remove what is not needed or split it"
    )]
    TooLarge {
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: usize,
    },
    /// Mappings and sequences nest deeper than [`MAX_NESTING_DEPTH`].
    #[error(
        "line {line}: mappings and sequences nest deeper than {limit} levels, the most \
         this reader accepts; flatten the document"
    )]
    TooDeep {
        /// Where the limit was passed.
        line: usize,
        /// The limit.
        limit: usize,
    },
    /// Not valid YAML, or refused while reading it (duplicate key, `.nan`, ...); the
    /// message names the path and the line.
    #[error("{message}")]
    Syntax {
        /// The parser's message, with path, line and column.
        message: String,
        /// The 1-based line, when known.
        line: Option<usize>,
    },
}

impl InputError {
    /// The 1-based line the error is about, when known.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::TooLarge { .. } => None,
            Self::TooDeep { line, .. } => Some(*line),
            Self::Syntax { line, .. } => *line,
        }
    }

    fn from_yaml(error: &serde_yaml_ng::Error) -> Self {
        Self::Syntax {
            message: error.to_string(),
            line: error.location().map(|location| location.line()),
        }
    }
}

/// A file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be opened or read (or is not UTF-8).
    #[error("cannot read {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is too large.
    #[error("cannot read {path}")]
    Input {
        /// The file.
        path: PathBuf,
        /// The limit it passes.
        #[source]
        source: InputError,
    },
}

/// One step of a path into a document: a mapping key or a sequence index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    /// A mapping key.
    Key(String),
    /// A sequence index (0-based).
    Index(usize),
}

/// Reads a text file of at most [`MAX_INPUT_BYTES`], without reading more than that
/// from it (a huge file or a device is refused, not loaded).
pub fn read_file(path: &Path) -> Result<String, ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let limit = u64::try_from(MAX_INPUT_BYTES).unwrap_or(u64::MAX);
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    check_size(bytes.len()).map_err(|source| ReadError::Input {
        path: path.to_owned(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|error| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text: {error}"),
        ))
    })
}

fn check_size(bytes: usize) -> Result<(), InputError> {
    if bytes > MAX_INPUT_BYTES {
        return Err(InputError::TooLarge {
            bytes: u64::try_from(bytes).unwrap_or(u64::MAX),
            limit: MAX_INPUT_BYTES,
        });
    }
    Ok(())
}

/// Checks a text's size and nesting before it is parsed, and returns it without a
/// leading byte order mark.
pub fn prepare(text: &str) -> Result<&str, InputError> {
    check_size(text.len())?;
    let text = text.strip_prefix(BYTE_ORDER_MARK).unwrap_or(text);
    if let Some(line) = prescan::excess_nesting_line(text, MAX_NESTING_DEPTH) {
        return Err(InputError::TooDeep {
            line,
            limit: MAX_NESTING_DEPTH,
        });
    }
    Ok(text)
}

/// One document of a text.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The document as JSON (`null` when empty), read leniently when it has a problem:
    /// the last of duplicate keys kept, `.nan` and `.inf` read as `null`.
    pub value: Value,
    /// The first thing a strict reading refuses (a duplicate key, `.nan`, `.inf`), with
    /// its path and line.
    pub problem: Option<InputError>,
}

fn read_value(
    document: serde_yaml_ng::Deserializer<'_>,
    strict: bool,
) -> Result<Value, InputError> {
    let mut budget = strict::Budget::new();
    strict::ValueSeed {
        budget: &mut budget,
        depth: 0,
        strict,
    }
    .deserialize(document)
    .map_err(|error| InputError::from_yaml(&error))
}

/// Every document of a text as JSON, within the limits above. A document that only a
/// strict reading refuses is returned with its [`Document::problem`]; a document that is
/// not YAML at all fails the whole text.
pub fn documents(text: &str) -> Result<Vec<Document>, InputError> {
    let text = prepare(text)?;
    let mut out = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        match read_value(document, true) {
            Ok(value) => out.push(Document {
                value,
                problem: None,
            }),
            Err(problem) => {
                let again = serde_yaml_ng::Deserializer::from_str(text)
                    .nth(index)
                    .ok_or_else(|| problem.clone())?;
                let value = read_value(again, false).map_err(|_| problem.clone())?;
                out.push(Document {
                    value,
                    problem: Some(problem),
                });
            }
        }
    }
    Ok(out)
}

/// The single document of a text as JSON, read strictly, within the limits above.
pub fn single_document(text: &str) -> Result<Value, InputError> {
    read_value(serde_yaml_ng::Deserializer::from_str(prepare(text)?), true)
}

/// Every document of a text read strictly (a duplicate key, `.nan` or `.inf` refused with
/// its line), its nesting and values bounded as above; the size is the caller's to bound
/// (a snapshot's captured objects are larger than a manifest:
/// `simulation/src/scenario/snapshot.rs`).
pub fn strict_documents(text: &str) -> Result<Vec<Value>, InputError> {
    let text = text.strip_prefix(BYTE_ORDER_MARK).unwrap_or(text);
    if let Some(line) = prescan::excess_nesting_line(text, MAX_NESTING_DEPTH) {
        return Err(InputError::TooDeep {
            line,
            limit: MAX_NESTING_DEPTH,
        });
    }
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|document| read_value(document, true))
        .collect()
}

/// The 1-based line of the node at `path` in document `document` (0-based) of `text`,
/// when the text parses and has such a node.
pub fn line_of(text: &str, document: usize, path: &[PathSegment]) -> Option<usize> {
    let text = prepare(text).ok()?;
    let document = serde_yaml_ng::Deserializer::from_str(text).nth(document)?;
    locate::line_in_document(document, path)
}

#[cfg(test)]
mod tests;
