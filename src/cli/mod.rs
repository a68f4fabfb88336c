//! Command-line entry points. `main.rs` parses arguments and calls these.

pub mod demo;
pub mod eval;
pub mod probe;

/// Process exit codes shared by the subcommands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything ran and passed.
    Ok = 0,
    /// An evaluation errored, fell below `--min-score` or failed its threshold.
    Failed = 1,
    /// Bad usage or configuration (the message names the file and key path).
    Usage = 2,
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e as u8)
    }
}
