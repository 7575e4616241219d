//! `exec` with a terminal, as the Go plugin's `exec` runs one (its
//! internal/kubernetes/kubernetes.go `ExecuteCommandRaw`, kubectl's `SetupTTY`): when
//! standard input is a terminal, the pod's command gets a terminal of its own (`tty=true`,
//! standard error merged into its output), this terminal is put in raw mode (each key goes
//! to the command as typed; the remote terminal echoes) and restored however the command
//! ends, and its size follows this terminal's (`SIGWINCH`).

use std::io::IsTerminal as _;

use kube::api::TerminalSize;
use rustix::termios::{self, OptionalActions, Termios};

/// Whether standard input is a terminal (the Go plugin then asks for one).
pub fn stdin_is_terminal() -> bool {
    std::io::stdin().is_terminal()
}

/// Standard input's terminal in raw mode until dropped, when its settings are restored.
#[derive(Debug)]
pub struct RawMode {
    saved: Termios,
}

impl RawMode {
    /// Puts standard input's terminal in raw mode.
    pub fn enter() -> std::io::Result<Self> {
        let stdin = std::io::stdin();
        let saved = termios::tcgetattr(&stdin)?;
        let mut raw = saved.clone();
        raw.make_raw();
        termios::tcsetattr(&stdin, OptionalActions::Now, &raw)?;
        Ok(Self { saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // Best effort: the terminal may be gone already.
        let _ = termios::tcsetattr(std::io::stdin(), OptionalActions::Now, &self.saved);
    }
}

/// The size of standard input's terminal (`None` when it has none).
pub fn size() -> Option<TerminalSize> {
    termios::tcgetwinsize(std::io::stdin())
        .ok()
        .map(|size| TerminalSize {
            width: size.ws_col,
            height: size.ws_row,
        })
}

/// Sends this terminal's size to `sizes` now and whenever it changes, until the exec
/// ends (the receiver is dropped).
pub async fn follow_size(mut sizes: futures::channel::mpsc::Sender<TerminalSize>) {
    use futures::SinkExt as _;
    use tokio::signal::unix::{SignalKind, signal};
    if let Some(size) = size()
        && sizes.send(size).await.is_err()
    {
        return;
    }
    let Ok(mut changes) = signal(SignalKind::window_change()) else {
        return;
    };
    while changes.recv().await.is_some() {
        if let Some(size) = size()
            && sizes.send(size).await.is_err()
        {
            return;
        }
    }
}
