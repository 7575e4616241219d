//! `kubectl fdb exec` from a terminal, against a served simulated world: the plugin runs
//! on a pseudo-terminal (as in an SRE's shell), so the pod's fdbcli gets a terminal too:
//! its greeting and `fdb> ` prompt, what is typed echoed by the remote terminal (not
//! twice), each line run on Enter, and this terminal's settings restored at the end.

// Test-only: helpers may panic on unexpected input.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use support::*;

/// A process on a pseudo-terminal, and everything it printed so far.
struct OnTerminal {
    child: std::process::Child,
    master: File,
    slave: File,
    printed: Arc<Mutex<String>>,
}

impl OnTerminal {
    fn spawn(command: &mut Command) -> Self {
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let name = ptsname(&master, Vec::new()).unwrap();
        let slave = File::options()
            .read(true)
            .write(true)
            .open(name.to_str().unwrap())
            .unwrap();
        let child = command
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave.try_clone().unwrap()))
            .spawn()
            .unwrap();
        let master = File::from(master);
        let printed = Arc::new(Mutex::new(String::new()));
        let mut reader = master.try_clone().unwrap();
        let sink = printed.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(read) = reader.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buffer[..read]));
            }
        });
        Self {
            child,
            master,
            slave,
            printed,
        }
    }

    fn printed(&self) -> String {
        self.printed.lock().unwrap().clone()
    }

    /// Waits until the output holds `text` `times` times.
    fn wait_for(&self, text: &str, times: usize) {
        let started = Instant::now();
        while self.printed().matches(text).count() < times {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "no {text:?} (x{times}) in {:?}",
                self.printed()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn type_keys(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
    }

    fn wait(&mut self) -> i32 {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap();
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "still running: {:?}",
                self.printed()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn exec_from_a_terminal_gives_fdbcli_a_terminal_and_restores_this_one() {
    let world = World::serve(
        &scenario("terminal", "{nodes: 11}", "  - reconcile: {}\n"),
        1.0,
    );
    let mut fdbcli = OnTerminal::spawn(
        Command::new(env!("CARGO_BIN_EXE_kubectl-fdb"))
            .arg("--kubeconfig")
            .arg(&world.kubeconfig)
            .args(["exec", "-it", "-c", "sample", "--", "fdbcli"]),
    );
    fdbcli.wait_for("fdb> ", 1);
    let greeting = fdbcli.printed();
    assert!(
        greeting.contains("Welcome to the fdbcli. For help, type `help'.\r\n"),
        "{greeting:?}"
    );
    assert!(
        greeting.contains("The database is available."),
        "{greeting:?}"
    );
    // Raw mode here: the local terminal neither echoes nor waits for a line.
    let local = rustix::termios::tcgetattr(&fdbcli.slave).unwrap();
    assert!(
        !local
            .local_modes
            .contains(rustix::termios::LocalModes::ECHO),
        "{local:?}"
    );
    // A typo erased with backspace, then Enter: the line runs as corrected.
    fdbcli.type_keys("statuz\u{7f}s minimal\r");
    fdbcli.wait_for("fdb> ", 2);
    let after = fdbcli.printed();
    let answer = &after[greeting.len()..];
    // Echoed once (by the remote terminal), the erase shown as a terminal shows it.
    assert!(
        answer.starts_with("statuz\u{8} \u{8}s minimal\r\n"),
        "{answer:?}"
    );
    assert!(
        answer.contains("The database is available.\r\n"),
        "{answer:?}"
    );
    fdbcli.type_keys("exit\r");
    assert_eq!(fdbcli.wait(), 0, "{:?}", fdbcli.printed());
    // The terminal's settings are back as they were.
    let restored = rustix::termios::tcgetattr(&fdbcli.slave).unwrap();
    assert!(
        restored
            .local_modes
            .contains(rustix::termios::LocalModes::ECHO),
        "{restored:?}"
    );

    // Ctrl-C reaches the command (the terminal's interrupt), not the plugin alone.
    let mut interrupted = OnTerminal::spawn(
        Command::new(env!("CARGO_BIN_EXE_kubectl-fdb"))
            .arg("--kubeconfig")
            .arg(&world.kubeconfig)
            .args(["exec", "-c", "sample", "--", "fdbcli"]),
    );
    interrupted.wait_for("fdb> ", 1);
    interrupted.type_keys("\u{3}");
    assert_eq!(interrupted.wait(), 130, "{:?}", interrupted.printed());
    let result = world.stop();
    assert!(result.violations.is_empty(), "{:?}", result.violations);
}
