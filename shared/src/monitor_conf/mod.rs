//! The fdbmonitor configuration: rendering `$NAME` templates with the sidecar's
//! substitutions.

pub mod substitute;
