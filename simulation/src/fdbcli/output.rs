//! What a simulated tool run printed and how it ended.

use fdb_operator::fdb::ToolOutput;

/// Standard output, standard error and the exit code of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Printed {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// The exit code.
    pub code: i32,
}

impl Printed {
    /// A run that printed `stderr` and exited with `code`.
    pub fn failed(code: i32, stderr: &str) -> Self {
        Self {
            stdout: String::new(),
            stderr: stderr.to_owned(),
            code,
        }
    }

    /// Prints on standard output.
    pub fn out(&mut self, text: &str) {
        self.stdout.push_str(text);
    }

    /// Prints on standard error.
    pub fn err(&mut self, text: &str) {
        self.stderr.push_str(text);
    }

    /// Appends what another part printed; its exit code wins.
    pub fn append(&mut self, other: &Printed) {
        self.stdout.push_str(&other.stdout);
        self.stderr.push_str(&other.stderr);
        self.code = other.code;
    }
}

impl From<Printed> for ToolOutput {
    fn from(printed: Printed) -> Self {
        Self {
            stdout: printed.stdout,
            stderr: printed.stderr,
            exit_code: Some(printed.code),
        }
    }
}
