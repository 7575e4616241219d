//! Parsing fdbcli's output into a [`DatabaseStatus`].

use super::DatabaseStatus;

/// Why fdbcli's output is not a status document.
#[derive(Debug, thiserror::Error)]
pub enum StatusParseError {
    /// The output has no `{` at all (e.g. only an error message).
    #[error("no JSON document in the output (it starts with {prefix:?})")]
    NoDocument {
        /// The beginning of the output, for the message.
        prefix: String,
    },
    /// The document is not valid JSON or has the wrong top-level shape.
    #[error("invalid status JSON at line {line}, column {column}")]
    Json {
        /// Line of the error, counted from the first `{`.
        line: usize,
        /// Column of the error.
        column: usize,
        /// The JSON error.
        source: serde_json::Error,
    },
}

impl DatabaseStatus {
    /// Parses the output of `fdbcli --exec "status json"`: fdbcli may print warnings
    /// before the document, so parsing starts at the first `{`. Text after the document
    /// is ignored.
    pub fn parse_fdbcli_output(text: &str) -> Result<Self, StatusParseError> {
        let start = text.find('{').ok_or_else(|| StatusParseError::NoDocument {
            prefix: text.chars().take(120).collect(),
        })?;
        let mut stream =
            serde_json::Deserializer::from_str(&text[start..]).into_iter::<DatabaseStatus>();
        match stream.next() {
            Some(Ok(status)) => Ok(status),
            Some(Err(source)) => Err(StatusParseError::Json {
                line: source.line(),
                column: source.column(),
                source,
            }),
            None => Err(StatusParseError::NoDocument {
                prefix: text.chars().take(120).collect(),
            }),
        }
    }

    /// Converts an already parsed JSON value (e.g. one rendered by the simulation).
    pub fn from_json_value(value: serde_json::Value) -> Result<Self, StatusParseError> {
        serde_json::from_value(value).map_err(|source| StatusParseError::Json {
            line: source.line(),
            column: source.column(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_leading_text_and_ignores_trailing_text() {
        let text =
            "WARNING: something\n{\"client\":{\"database_status\":{\"available\":true}}}\n>>> \n";
        let status = DatabaseStatus::parse_fdbcli_output(text).unwrap();
        assert!(status.is_available());
    }

    #[test]
    fn reports_missing_and_broken_documents() {
        let error = DatabaseStatus::parse_fdbcli_output("ERROR: timed out").unwrap_err();
        assert!(error.to_string().contains("timed out"), "{error}");
        let error = DatabaseStatus::parse_fdbcli_output("{\"client\": [1,").unwrap_err();
        assert!(matches!(error, StatusParseError::Json { .. }), "{error}");
    }

    #[test]
    fn missing_sections_default() {
        let status = DatabaseStatus::parse_fdbcli_output("{}").unwrap();
        assert!(!status.is_available());
        assert!(status.cluster.processes.is_empty());
    }
}
