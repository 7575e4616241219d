//! fdbmonitor configuration files: parsing them, and the command lines fdbmonitor derives
//! from them.

pub mod parse;
