//! The fdbmonitor conf: generating the template, substituting its variables, and reading
//! back the command lines it starts.

pub mod parse;
pub mod process_config;
pub mod render;
pub mod safe_text;
pub mod substitute;
