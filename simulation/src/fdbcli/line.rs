//! fdbcli's reading of a command line (`parseLine` in `fdbcli/fdbcli.actor.cpp`): `;`
//! separates commands, blanks separate tokens, double quotes group, and a backslash
//! escapes (`\\`, `\"`, `\xNN` a byte). Tokens are bytes.

/// One command: its tokens.
pub type Tokens = Vec<Vec<u8>>;

/// Why a line did not parse (fdbcli refuses the whole command that holds it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineError {
    /// A backslash not followed by `\`, `"`, a blank or `xNN`.
    MalformedEscape,
    /// A quote left open.
    UnterminatedQuote,
}

/// The commands of a line, each a list of tokens, or why it did not parse.
pub fn parse_line(line: &str) -> Result<Vec<Tokens>, LineError> {
    let bytes = line.as_bytes();
    let mut commands = vec![Vec::new()];
    let mut token: Vec<u8> = Vec::new();
    let (mut in_token, mut quoted) = (false, false);
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        index += 1;
        match byte {
            b'\\' => {
                let (value, used) = escape(&bytes[index..]).ok_or(LineError::MalformedEscape)?;
                token.push(value);
                index += used;
                in_token = true;
            }
            b'"' => {
                quoted = !quoted;
                in_token = true;
            }
            b';' if !quoted => {
                end_token(&mut commands, &mut token, &mut in_token);
                commands.push(Vec::new());
            }
            b' ' | b'\t' | b'\n' | b'\r' if !quoted => {
                end_token(&mut commands, &mut token, &mut in_token);
            }
            other => {
                token.push(other);
                in_token = true;
            }
        }
    }
    if quoted {
        return Err(LineError::UnterminatedQuote);
    }
    end_token(&mut commands, &mut token, &mut in_token);
    Ok(commands)
}

fn end_token(commands: &mut [Tokens], token: &mut Vec<u8>, in_token: &mut bool) {
    if *in_token && let Some(command) = commands.last_mut() {
        command.push(std::mem::take(token));
    }
    *in_token = false;
}

/// The byte an escape stands for and how many bytes after the backslash it used.
fn escape(rest: &[u8]) -> Option<(u8, usize)> {
    match rest.first()? {
        b'\\' => Some((b'\\', 1)),
        b'"' => Some((b'"', 1)),
        b' ' => Some((b' ', 1)),
        b'x' => {
            let hex = std::str::from_utf8(rest.get(1..3)?).ok()?;
            Some((u8::from_str_radix(hex, 16).ok()?, 3))
        }
        _ => None,
    }
}

/// A byte string as fdbcli prints it (`printable` in `flow/Arena.h`): printable ASCII
/// as itself, a backslash doubled, anything else `\xNN`.
pub fn printable(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    for &byte in bytes {
        match byte {
            b'\\' => text.push_str("\\\\"),
            32..=126 => text.push(char::from(byte)),
            _ => text.push_str(&format!("\\x{byte:02x}")),
        }
    }
    text
}

/// A token as text (lossy: tokens the builders send are ASCII).
pub fn text(token: &[u8]) -> String {
    String::from_utf8_lossy(token).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_tokens_quotes_and_escapes() {
        let parsed = parse_line("kill; kill 10.0.0.1:4501 ; sleep 5").unwrap();
        assert_eq!(parsed.len(), 3);
        assert_eq!(parsed[1], vec![b"kill".to_vec(), b"10.0.0.1:4501".to_vec()]);
        let parsed = parse_line("set \\xff\\x02/a \"b c\"").unwrap();
        assert_eq!(parsed[0][1], b"\xff\x02/a".to_vec());
        assert_eq!(parsed[0][2], b"b c".to_vec());
        assert_eq!(parse_line("get \"a"), Err(LineError::UnterminatedQuote));
        assert_eq!(parse_line("get \\q"), Err(LineError::MalformedEscape));
        assert_eq!(printable(b"\xff\x02/a b\\"), "\\xff\\x02/a b\\\\");
    }
}
