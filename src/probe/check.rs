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
    /// The check failed because something required (`--require`, `--expect-efa`) is not
    /// there at all: a missing environment (exit 3), not a broken one (exit 1).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub missing: bool,
}

impl Check {
    pub fn new(id: impl Into<String>, status: Status, summary: impl Into<String>) -> Check {
        Check {
            id: id.into(),
            status,
            summary: summary.into(),
            evidence: Vec::new(),
            hint: None,
            missing: false,
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

    /// `warn`, or `fail` when the user said this is required (then a missing environment).
    pub fn missing(id: impl Into<String>, required: bool, summary: impl Into<String>) -> Check {
        let check = Check::new(
            id,
            if required { Status::Fail } else { Status::Warn },
            summary,
        );
        if required { check.absent() } else { check }
    }

    /// Marks a failed check as "required but not there" (exit 3).
    pub fn absent(mut self) -> Check {
        self.missing = self.status == Status::Fail;
        self
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

/// The variable that puts `/sys` elsewhere (a fake tree, a host's sysfs mounted into a pod).
pub const SYSFS_ROOT_ENV: &str = "NETCHECK_SYSFS_ROOT";
/// The variable that puts `/proc` elsewhere.
pub const PROCFS_ROOT_ENV: &str = "NETCHECK_PROCFS_ROOT";

/// Where the host's `/sys`, `/dev` and `/proc` are: `/` normally, a fixture tree in tests;
/// `sys` and `proc` can each be put elsewhere on their own.
#[derive(Debug, Clone)]
pub struct HostPaths {
    pub root: PathBuf,
    /// Instead of `<root>/sys`.
    pub sys: Option<PathBuf>,
    /// Instead of `<root>/proc`.
    pub proc: Option<PathBuf>,
}

impl Default for HostPaths {
    fn default() -> Self {
        HostPaths::new("/")
    }
}

impl HostPaths {
    pub fn new(root: impl AsRef<Path>) -> Self {
        HostPaths {
            root: root.as_ref().to_path_buf(),
            sys: None,
            proc: None,
        }
    }

    /// `root`, with `/sys` and `/proc` taken from `NETCHECK_SYSFS_ROOT` and
    /// `NETCHECK_PROCFS_ROOT` where `env` sets them (non-empty).
    pub fn from_env(
        root: impl AsRef<Path>,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Self {
        let get = |k: &str| env.get(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        HostPaths {
            sys: get(SYSFS_ROOT_ENV),
            proc: get(PROCFS_ROOT_ENV),
            ..HostPaths::new(root)
        }
    }

    pub fn sys(&self) -> PathBuf {
        self.sys.clone().unwrap_or_else(|| self.root.join("sys"))
    }

    pub fn dev(&self) -> PathBuf {
        self.root.join("dev")
    }

    pub fn proc(&self) -> PathBuf {
        self.proc.clone().unwrap_or_else(|| self.root.join("proc"))
    }
}

/// A small file's trimmed contents, or `None`.
pub fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}
