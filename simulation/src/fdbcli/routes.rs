//! The tools of one operator image reaching several databases (a fleet): each run goes
//! to the database its cluster file leads to, as a real tool connects to the
//! coordinators its cluster file names. A run whose cluster file leads to none of them
//! goes to the first database's tools, which answer as for a file of another database,
//! and is recorded on no database.

use std::path::Path;

use fdb_operator::fdb::{ToolOutput, ToolRun, ToolRunError, ToolRunner};

use super::SimulatedTools;

/// The same image's tools, one [`SimulatedTools`] per database.
#[derive(Debug, Clone)]
pub struct RoutedTools {
    first: SimulatedTools,
    others: Vec<SimulatedTools>,
}

impl RoutedTools {
    /// The tools of the first database, then of the others.
    pub fn new(first: SimulatedTools, others: Vec<SimulatedTools>) -> Self {
        Self { first, others }
    }

    /// The tools of the database `run`'s cluster file leads to; for a file leading
    /// to none, the first's, recording the run on no database.
    fn route(&self, run: &ToolRun) -> std::borrow::Cow<'_, SimulatedTools> {
        self.route_by(|tools| tools.leads_here(run))
    }

    /// The tools of the database a cluster file holding `text` leads to (what a served
    /// world's stand-in read from the file it was given with `-C`); for a file leading
    /// to none, or none given, the first's, which then answer as fdbcli does for
    /// coordinators it cannot reach (or without a cluster file), recording the run on
    /// no database. Never another database's answer.
    pub fn route_text(&self, text: Option<&str>) -> std::borrow::Cow<'_, SimulatedTools> {
        match text {
            Some(text) => self.route_by(|tools| tools.leads_here_text(text)),
            None => self.route_by(|_| false),
        }
    }

    fn route_by(
        &self,
        leads_here: impl Fn(&SimulatedTools) -> bool,
    ) -> std::borrow::Cow<'_, SimulatedTools> {
        if self.others.is_empty() {
            return std::borrow::Cow::Borrowed(&self.first);
        }
        std::iter::once(&self.first)
            .chain(&self.others)
            .find(|tools| leads_here(tools))
            .map_or_else(
                || std::borrow::Cow::Owned(self.first.on_no_database()),
                std::borrow::Cow::Borrowed,
            )
    }
}

#[async_trait::async_trait]
impl ToolRunner for RoutedTools {
    async fn run(&self, run: &ToolRun) -> Result<ToolOutput, ToolRunError> {
        self.route(run).run(run).await
    }

    fn is_installed(&self, program: &Path) -> bool {
        self.first.is_installed(program)
    }
}
