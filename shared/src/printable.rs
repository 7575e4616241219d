//! FoundationDB's printable byte strings: letters, digits and `/ . _ - :` as themselves,
//! every other byte as `\xNN` (and `\\` for a backslash when reading). fdbcli and
//! fdbrestore read keys in this form.

/// Escapes bytes for an fdbcli command: letters, digits and `/ . _ - :` stay, every other
/// byte becomes `\xNN`. The result has no spaces, quotes or `;`, so it is always one
/// token of an `--exec` command.
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    for &byte in bytes {
        if byte.is_ascii_alphanumeric() || b"/._-:".contains(&byte) {
            text.push(char::from(byte));
        } else {
            text.push_str(&format!("\\x{byte:02x}"));
        }
    }
    text
}

/// Why an escaped byte string is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a valid escaped byte string: {reason}")]
pub struct UnescapeError {
    /// The input.
    pub text: String,
    /// What is wrong.
    pub reason: &'static str,
}

/// Reverses fdbcli's printable escaping: `\xNN` is a byte, `\\` a backslash, anything
/// else itself.
pub fn unescape_bytes(text: &str) -> Result<Vec<u8>, UnescapeError> {
    let error = |reason| UnescapeError {
        text: text.to_owned(),
        reason,
    };
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte != b'\\' {
            out.push(byte);
            index += 1;
            continue;
        }
        match bytes.get(index + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                index += 2;
            }
            Some(b'x') => {
                let hex = bytes
                    .get(index + 2..index + 4)
                    .ok_or_else(|| error("`\\x` needs two hex digits"))?;
                let hex = std::str::from_utf8(hex).map_err(|_| error("invalid hex digits"))?;
                out.push(u8::from_str_radix(hex, 16).map_err(|_| error("invalid hex digits"))?);
                index += 4;
            }
            _ => return Err(error("a backslash must be followed by `\\` or `x`")),
        }
    }
    Ok(out)
}
