//! `pods/exec` with a terminal (`tty=true`), as `kubectl exec -it` and `kubectl fdb exec`
//! from a terminal ask for it: the container's output reaches the client on channel 1
//! alone (a terminal merges standard error into it) with the terminal's line endings
//! (`\r\n`), and terminal size messages (channel 4) are taken.
//!
//! `fdbcli` without `--exec` is interactive there, as the real one at a terminal
//! (`fdbcli/fdbcli.actor.cpp`): it greets (`Using cluster file ...`, the database's
//! state, `Welcome to the fdbcli. For help, type `help'.`), prompts `fdb> `, and the
//! terminal echoes what is typed (backspace erases); each line runs when Enter is
//! pressed, through the same simulated fdbcli as `--exec` (so it is recorded and judged as
//! the user's), until `exit`/`quit`, Ctrl-D on an empty line (exit 0), or Ctrl-C (the
//! terminal's interrupt: exit 130, as a process ended by SIGINT). Other commands run as
//! without a terminal, their output sent as a terminal shows it.

use futures::{SinkExt as _, StreamExt as _};
use serde_json::Value;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

use super::exec::{ExecOutput, ExecRequest, SimulatedExec};
use super::exec_bounds::{MAX_EXEC_STDIN, frame};

/// fdbcli's prompt.
const PROMPT: &str = "fdb> ";
/// The cluster file the main container's fdbcli reads (the ConfigMap's, mounted).
const CLUSTER_FILE: &str = "/var/dynamic-conf/fdb.cluster";

/// Whether the command is fdbcli reading its commands from its input (no `--exec`).
pub(super) fn is_interactive_fdbcli(command: &[String]) -> bool {
    command.first().is_some_and(|p| p.ends_with("fdbcli"))
        && !command.iter().any(|arg| arg == "--exec")
}

/// Text as a terminal shows it: every line ending is `\r\n`.
fn on_terminal(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\n', "\r\n")
}

impl SimulatedExec {
    /// Runs the request with a terminal on `socket`; returns the exit code.
    pub(super) async fn run_with_terminal<S>(
        &self,
        pod: &Value,
        request: &ExecRequest,
        socket: &mut WebSocketStream<S>,
    ) -> i32
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        if request.stdin && is_interactive_fdbcli(&request.command) {
            return interactive_fdbcli(self, pod, socket).await;
        }
        let output: ExecOutput = self.execute(pod, request, "").await;
        let shown = on_terminal(&format!("{}{}", output.stdout, output.stderr));
        if !shown.is_empty() {
            let _ = socket.send(frame(1, shown.as_bytes())).await;
        }
        output.exit_code
    }
}

/// What one key press does to the line being typed.
#[derive(Debug, PartialEq, Eq)]
enum Key {
    /// Echo this and keep it in the line.
    Typed(char),
    /// Erase the last character.
    Erase,
    /// Run the line.
    Enter,
    /// Ctrl-D: end of input when the line is empty.
    EndOfInput,
    /// Ctrl-C: the terminal interrupts the process.
    Interrupt,
    /// Nothing (another control character).
    Ignored,
}

fn key(c: char) -> Key {
    match c {
        '\r' | '\n' => Key::Enter,
        '\u{7f}' | '\u{8}' => Key::Erase,
        '\u{4}' => Key::EndOfInput,
        '\u{3}' => Key::Interrupt,
        c if c.is_control() => Key::Ignored,
        c => Key::Typed(c),
    }
}

async fn interactive_fdbcli<S>(
    exec: &SimulatedExec,
    pod: &Value,
    socket: &mut WebSocketStream<S>,
) -> i32
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let state = {
        let _turn = exec.turn.lock().await;
        exec.fdbcli(pod, "status minimal").await
    };
    let greeting = format!(
        "Using cluster file `{CLUSTER_FILE}'.\n\n{}\n\nWelcome to the fdbcli. For help, type `help'.\n{PROMPT}",
        state.stdout.trim()
    );
    if socket
        .send(frame(1, on_terminal(&greeting).as_bytes()))
        .await
        .is_err()
    {
        return 1;
    }
    let mut line = String::new();
    let mut typed = 0usize;
    while let Some(Ok(message)) = socket.next().await {
        let data = match &message {
            Message::Binary(bytes) => match bytes.split_first() {
                Some((0, data)) => data.to_vec(),
                // Channel 4: the terminal's size; channel 255: input closed.
                Some((255, [0])) => return 0,
                _ => continue,
            },
            Message::Close(_) => return 0,
            _ => continue,
        };
        typed += data.len();
        if typed > MAX_EXEC_STDIN {
            let _ = socket
                .send(frame(
                    1,
                    b"\r\nERROR: input above the container's limit\r\n",
                ))
                .await;
            return 1;
        }
        let mut echo = String::new();
        for c in String::from_utf8_lossy(&data).chars() {
            match key(c) {
                Key::Typed(c) => {
                    line.push(c);
                    echo.push(c);
                }
                Key::Erase => {
                    if line.pop().is_some() {
                        echo.push_str("\u{8} \u{8}");
                    }
                }
                Key::Ignored => {}
                Key::Interrupt => {
                    echo.push_str("^C\r\n");
                    let _ = socket.send(frame(1, echo.as_bytes())).await;
                    return 130;
                }
                Key::EndOfInput if line.is_empty() => {
                    let _ = socket.send(frame(1, echo.as_bytes())).await;
                    return 0;
                }
                Key::EndOfInput => {}
                Key::Enter => {
                    echo.push_str("\r\n");
                    let command = std::mem::take(&mut line);
                    let command = command.trim();
                    if matches!(command, "exit" | "quit") {
                        let _ = socket.send(frame(1, echo.as_bytes())).await;
                        return 0;
                    }
                    if !command.is_empty() {
                        // One simulated moment per line, between two advances.
                        let _turn = exec.turn.lock().await;
                        let output = exec.fdbcli(pod, command).await;
                        echo.push_str(&on_terminal(&format!("{}{}", output.stdout, output.stderr)));
                    }
                    echo.push_str(PROMPT);
                }
            }
        }
        if !echo.is_empty() && socket.send(frame(1, echo.as_bytes())).await.is_err() {
            return 1;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_line_endings_are_a_terminal_s() {
        assert_eq!(key('a'), Key::Typed('a'));
        assert_eq!(key('\r'), Key::Enter);
        assert_eq!(key('\u{7f}'), Key::Erase);
        assert_eq!(key('\u{3}'), Key::Interrupt);
        assert_eq!(key('\u{4}'), Key::EndOfInput);
        assert_eq!(key('\u{1b}'), Key::Ignored);
        assert_eq!(on_terminal("a\nb\r\nc"), "a\r\nb\r\nc");
        assert!(is_interactive_fdbcli(&["fdbcli".into()]));
        assert!(is_interactive_fdbcli(&[
            "/usr/bin/fdbcli".into(),
            "--timeout".into(),
            "5".into()
        ]));
        assert!(!is_interactive_fdbcli(&[
            "fdbcli".into(),
            "--exec".into(),
            "status".into()
        ]));
        assert!(!is_interactive_fdbcli(&["sh".into()]));
    }
}
