//! The bounds of the served `pods/exec` (issue 40): standard input and output are capped
//! (200 MB of stdin used to be kept whole, 1.1 GB at peak), and a shell text is run only
//! when every part of it is something the simulated container runs (`sh -c 'fdbcli
//! --exec X ; rm -rf /'` ran X and reported success).

use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// The most standard input an exec reads (fdbcli commands piped in are a few KiB).
pub const MAX_EXEC_STDIN: usize = 1024 * 1024;
/// The most output an exec sends; the command stops with an error past it.
pub const MAX_EXEC_OUTPUT: usize = 16 * 1024 * 1024;

/// How long a refused exec still reads (and drops) the standard input its client is
/// sending, so the client reads the refusal before the connection closes.
pub const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The websocket limits of an exec connection: no message or frame larger than the
/// stdin limit (with room for the channel byte and framing).
pub fn websocket_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_EXEC_STDIN + 1024))
        .max_frame_size(Some(MAX_EXEC_STDIN + 1024))
}

/// One message of an exec channel (`v4.channel.k8s.io`: its first byte is the channel,
/// 1 stdout, 2 stderr, 3 the final `Status`), as the websocket carries it.
pub fn frame(channel: u8, data: &[u8]) -> tokio_tungstenite::tungstenite::Message {
    let mut bytes = Vec::with_capacity(data.len() + 1);
    bytes.push(channel);
    bytes.extend_from_slice(data);
    tokio_tungstenite::tungstenite::Message::binary(bytes)
}

/// Splits a shell command line into words (single and double quotes, no expansion).
pub fn split_shell(script: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in script.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return None;
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

/// Whether a shell text has an unquoted operator (`;`, `&`, `|`, `<`, `>`, a backquote,
/// `$(` or a newline): a second command, a redirection or a substitution.
pub fn has_shell_operator(script: &str) -> bool {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for c in script.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '`') => return true,
            (Some('"'), '(') if previous == '$' => return true,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, ';' | '&' | '|' | '<' | '>' | '`' | '\n') => return true,
            (None, '(') if previous == '$' => return true,
            (None, _) => {}
        }
        previous = c;
    }
    false
}

/// The words of an fdbcli command line after `fdbcli` are options (`-x`, `--xyz`) each
/// followed by at most one value; anything else (a second command's words) is refused.
pub fn fdbcli_words_are_options(words: &[String]) -> bool {
    let mut after_option = false;
    for word in words {
        if word.starts_with('-') {
            after_option = true;
        } else if after_option {
            after_option = false;
        } else {
            return false;
        }
    }
    true
}

/// Whether a simple command of a `sh -c` script is one the simulated container runs:
/// `pkill [-FLAG...] fdbserver`, `cat /PATH`, `printf '%s\n' "$N" > /PATH`.
pub fn is_supported(words: &[&str]) -> bool {
    let flag = |w: &&str| {
        w.len() > 1 && w.starts_with('-') && w[1..].bytes().all(|b| b.is_ascii_alphanumeric())
    };
    match words {
        ["pkill", flags @ .., "fdbserver"] => flags.iter().all(flag),
        ["cat", path] => path.starts_with('/'),
        ["printf", "%s\\n", argument, ">", path] => {
            argument.starts_with('$') && path.starts_with('/')
        }
        ["base64", path] => path.starts_with('/'),
        ["base64", "-d", ">", target] => target.starts_with('$') || target.starts_with('/'),
        _ => false,
    }
}

/// The fdbcli command text of an argv (`fdbcli ... --exec TEXT ...`, or a shell running
/// one); `None` when it is not fdbcli, `Some(Err)` when it is fdbcli with something
/// else (a second command, a redirection: refused whole, `serve/exec_bounds.rs`).
pub(super) fn fdbcli_text(command: &[String]) -> Option<Result<String, String>> {
    match command {
        [shell, flag, script] if (shell.ends_with("sh")) && flag == "-c" => {
            let words = split_shell(script)?;
            let text = fdbcli_text(&words)?;
            if has_shell_operator(script) {
                return Some(Err(format!(
                    "sh: `{script}` runs more than fdbcli (an unquoted ;, &, |, <, >, ` or $( ); \
                     the simulated container runs fdbcli alone"
                )));
            }
            Some(text)
        }
        [program, rest @ ..] if program.ends_with("fdbcli") => {
            let text = rest
                .iter()
                .position(|a| a == "--exec")
                .and_then(|at| rest.get(at + 1).cloned())?;
            if !fdbcli_words_are_options(rest) {
                return Some(Err(format!(
                    "fdbcli: unexpected words in `{}`",
                    command.join(" ")
                )));
            }
            Some(Ok(text))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_operators_are_found_outside_quotes_only() {
        for script in [
            "fdbcli --exec X ; rm -rf /",
            "fdbcli --exec X && rm",
            "fdbcli --exec X | sh",
            "fdbcli --exec X > /etc/passwd",
            "fdbcli --exec \"$(rm -rf /)\"",
            "fdbcli --exec `rm`",
            "fdbcli --exec X\nrm",
        ] {
            assert!(has_shell_operator(script), "{script:?}");
        }
        assert!(!has_shell_operator(
            "fdbcli --exec 'kill; kill 1.2.3.4:4501'"
        ));
        assert!(!has_shell_operator("fdbcli -C /f --exec \"status json\""));
    }

    #[test]
    fn only_the_simulated_commands_are_supported() {
        assert!(is_supported(&["pkill", "-9", "fdbserver"]));
        assert!(is_supported(&["cat", "/var/fdb/fdb.cluster"]));
        assert!(is_supported(&[
            "printf",
            "%s\\n",
            "$1",
            ">",
            "/var/fdb/fdb.cluster"
        ]));
        assert!(!is_supported(&["pkill", ";", "rm", "fdbserver"]));
        assert!(!is_supported(&["rm", "-rf", "/"]));
        assert!(!is_supported(&["fdbcli", "--exec", "kill"]));
        let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(fdbcli_words_are_options(&words(&[
            "-C",
            "f",
            "--exec",
            "x",
            "--timeout",
            "5"
        ])));
        assert!(!fdbcli_words_are_options(&words(&[
            "--exec", "x", "rm", "-rf", "/"
        ])));
    }
}
