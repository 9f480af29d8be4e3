//! One doctor finding: a status, one line saying what was found, the evidence behind it, and
//! what to do about it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Check {
    /// Stable identifier (`gpu.driver`, `env.NCCL_PROTO`, ...), for scripts and CI filters.
    pub id: String,
    pub status: Status,
    pub summary: String,
    #[serde(default)]
    pub evidence: Vec<String>,
    #[serde(default)]
    pub hint: Option<String>,
}

impl Check {
    pub fn new(id: impl Into<String>, status: Status, summary: impl Into<String>) -> Check {
        Check {
            id: id.into(),
            status,
            summary: summary.into(),
            evidence: Vec::new(),
            hint: None,
        }
    }

    pub fn ok(id: impl Into<String>, summary: impl Into<String>) -> Check {
        Check::new(id, Status::Ok, summary)
    }

    pub fn warn(id: impl Into<String>, summary: impl Into<String>) -> Check {
        Check::new(id, Status::Warn, summary)
    }

    pub fn fail(id: impl Into<String>, summary: impl Into<String>) -> Check {
        Check::new(id, Status::Fail, summary)
    }

    /// `warn`, or `fail` when the user said this is required.
    pub fn missing(id: impl Into<String>, required: bool, summary: impl Into<String>) -> Check {
        Check::new(
            id,
            if required { Status::Fail } else { Status::Warn },
            summary,
        )
    }

    pub fn with_evidence<I, S>(mut self, lines: I) -> Check
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.evidence.extend(lines.into_iter().map(Into::into));
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Check {
        self.hint = Some(hint.into());
        self
    }
}

/// Where the host's `/sys`, `/dev` and `/proc` are: `/` normally, a fixture tree in tests.
#[derive(Debug, Clone)]
pub struct HostPaths {
    pub root: PathBuf,
}

impl Default for HostPaths {
    fn default() -> Self {
        HostPaths {
            root: PathBuf::from("/"),
        }
    }
}

impl HostPaths {
    pub fn new(root: impl AsRef<Path>) -> Self {
        HostPaths {
            root: root.as_ref().to_path_buf(),
        }
    }

    pub fn sys(&self) -> PathBuf {
        self.root.join("sys")
    }

    pub fn dev(&self) -> PathBuf {
        self.root.join("dev")
    }

    pub fn proc(&self) -> PathBuf {
        self.root.join("proc")
    }
}

/// A small file's trimmed contents, or `None`.
pub fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}
