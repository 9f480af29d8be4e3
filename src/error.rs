//! One error type for the whole tool. Each variant maps to one documented exit code
//! (see `exit.rs`), and every message says what was being done; `hint` says what to do.

use std::path::PathBuf;

use crate::exit;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag or argument combination that cannot work.
    #[error("{message}")]
    Usage {
        message: String,
        hint: Option<String>,
    },

    /// An input file could not be opened or read.
    #[error("cannot read `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// An output file or folder could not be written.
    #[error("cannot write `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// Input that was read but is not what it should be (bad JSON, bad config field, ...).
    /// `what` names the file and, where known, the field.
    #[error("{what}: {message}")]
    BadInput {
        what: String,
        message: String,
        hint: Option<String>,
    },

    /// The command exists in the contract but is not built yet.
    #[error("`netcheck {0}` is not implemented yet")]
    NotBuilt(&'static str),

    /// Something the command needs is not installed or not reachable.
    #[error("{what}")]
    MissingEnvironment { what: String, hint: String },

    /// The environment is there but failed: API errors, unschedulable pods, NCCL errors.
    #[error("{what}")]
    Infrastructure { what: String, hint: Option<String> },

    /// A deadline passed; `what` names the rank, phase and peer where known.
    #[error("timed out: {what}")]
    Timeout { what: String, hint: Option<String> },

    /// Ctrl-C or SIGTERM.
    #[error("interrupted")]
    Interrupted,
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage { .. }
            | Error::Read { .. }
            | Error::Write { .. }
            | Error::BadInput { .. }
            | Error::NotBuilt(_) => exit::BAD_INPUT,
            Error::MissingEnvironment { .. } => exit::MISSING_ENVIRONMENT,
            Error::Infrastructure { .. } => exit::INFRASTRUCTURE,
            Error::Timeout { .. } => exit::TIMEOUT,
            Error::Interrupted => exit::INTERRUPTED,
        }
    }

    /// One line telling the user what to do next, where we know it.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Usage { hint, .. }
            | Error::BadInput { hint, .. }
            | Error::Infrastructure { hint, .. }
            | Error::Timeout { hint, .. } => hint.clone(),
            Error::MissingEnvironment { hint, .. } => Some(hint.clone()),
            Error::NotBuilt(_) => {
                Some("see `netcheck --help` for the commands that are available".into())
            }
            Error::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Some("check the path; use `-` to read from stdin".into())
            }
            _ => None,
        }
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Error::Usage {
            message: message.into(),
            hint: None,
        }
    }

    pub fn bad_input(what: impl Into<String>, message: impl Into<String>) -> Self {
        Error::BadInput {
            what: what.into(),
            message: message.into(),
            hint: None,
        }
    }

    pub fn missing(what: impl Into<String>, hint: impl Into<String>) -> Self {
        Error::MissingEnvironment {
            what: what.into(),
            hint: hint.into(),
        }
    }

    pub fn infra(what: impl Into<String>) -> Self {
        Error::Infrastructure {
            what: what.into(),
            hint: None,
        }
    }

    pub fn read(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Read {
            path: path.into(),
            source,
        }
    }

    pub fn write(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Write {
            path: path.into(),
            source,
        }
    }

    /// Prints `error: ...`, each cause as `caused by: ...`, and the hint.
    pub fn print(&self) {
        crate::say!("error: {self}");
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            crate::say!("  caused by: {cause}");
            source = cause.source();
        }
        if let Some(hint) = self.hint() {
            crate::say!("  hint: {hint}");
        }
    }
}

/// What a command that ran to the end concluded. Errors are the other outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Passed, possibly with warnings.
    Pass,
    /// The check ran and failed (exit 1).
    Fail,
    /// The input held nothing to judge (exit 2, as bad input): `analyze` on a log with no
    /// NCCL line at all. A verdict on nothing is neither a pass nor a fail of the network.
    NothingToJudge,
}

impl Outcome {
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Pass => exit::PASS,
            Outcome::Fail => exit::CHECK_FAILED,
            Outcome::NothingToJudge => exit::BAD_INPUT,
        }
    }
}
