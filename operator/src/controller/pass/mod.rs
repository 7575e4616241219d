//! One reconcile pass: the driver over the ordered steps, the executor of their plans,
//! the plan vocabulary, the pass's state, facts and I/O, the look-ahead of pod deletions,
//! and when a cluster is looked at again.

pub mod driver;
pub mod executor;
pub mod facts;
pub mod forecast;
pub mod io;
pub mod outcome;
pub mod plan;
pub mod requeue;
pub mod state;
