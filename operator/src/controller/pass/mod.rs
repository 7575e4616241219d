//! One reconcile pass: the driver over the ordered steps, the executor of their plans,
//! the plan vocabulary, the pass's state, facts and I/O, the look-ahead of pod deletions,
//! and when a cluster is looked at again.

pub(crate) mod driver;
pub(crate) mod executor;
pub(crate) mod facts;
pub(crate) mod forecast;
pub(crate) mod io;
pub(crate) mod outcome;
pub(crate) mod plan;
pub(crate) mod requeue;
pub(crate) mod state;
