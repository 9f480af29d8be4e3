//! The Analysis JSON contract (`netcheck.analysis.v1`, DESIGN.md): what `analyze --format json`
//! prints and what results embed. Field names are relied upon by users' scripts.

use serde::{Deserialize, Serialize};

pub const ANALYSIS_SCHEMA: &str = "netcheck.analysis.v1";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Analysis {
    pub schema: String,
    pub nccl_versions: Vec<String>,
    pub networks: Vec<String>,
    pub ofi_provider: Option<String>,
    pub nodes: Option<u32>,
    pub ranks: Option<u32>,
    pub inter_node_transport: Transport,
    pub socket_fallback: Option<bool>,
    /// The kinds of evidence that decided `inter_node_transport` and `socket_fallback`
    /// (`nnodes`, `channel-lines`, `distinct-hosts`, `network-module`, `ofi-provider`, ...).
    #[serde(default)]
    pub basis: Vec<String>,
    /// The same in words, for people: `2 hosts; network AWS Libfabric; provider efa`.
    #[serde(default)]
    pub why: String,
    pub gdr: Option<bool>,
    pub per_rank: Vec<RankSummary>,
    pub findings: Vec<Finding>,
    pub verdict: Verdict,
    /// Host names the log shows (NCCL's prefix or nccl-tests' rank table), sorted.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// `--expect`, when one was given.
    #[serde(default)]
    pub expected: Option<Transport>,
}

/// What carried traffic between nodes. `none`: only intra-node traffic; `unknown`: the logs
/// don't say. Never a guess.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Efa,
    Ib,
    Roce,
    Socket,
    Tcpx,
    /// Multi-node NVLink (GB200/GB300 NVL72: `MNNVL 1`, `P2P/MNNVL` between hosts).
    Nvlink,
    Other,
    None,
    Unknown,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Efa => "efa",
            Transport::Ib => "ib",
            Transport::Roce => "roce",
            Transport::Socket => "socket",
            Transport::Tcpx => "tcpx",
            Transport::Nvlink => "nvlink",
            Transport::Other => "other",
            Transport::None => "none",
            Transport::Unknown => "unknown",
        }
    }
}

/// Per rank (one `host:pid` with one CUDA device) what its log showed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RankSummary {
    /// NCCL rank when the log names it, else `None`.
    pub rank: Option<u32>,
    pub host: Option<String>,
    pub pid: Option<u32>,
    pub cuda_dev: Option<u32>,
    pub nccl_version: Option<String>,
    /// `Using network X` / `Assigned NET plugin X` for this rank.
    pub network: Option<String>,
    /// What this rank's connections to other nodes used (`efa`, `socket`, ...), or `none`.
    pub inter_node_transport: Option<Transport>,
    /// Distinct connection kinds seen, e.g. `P2P/CUMEM`, `SHM`, `NET/Socket`.
    pub transports: Vec<String>,
    pub ofi_provider: Option<String>,
    pub nics: Option<u32>,
    /// The last initialisation phase this rank reached (for hangs).
    pub last_phase: Option<String>,
    /// Wrapper tag (`[1,3]`, `[rank3]`, ...) identifying the rank when NCCL's `host:pid` is
    /// missing from the log.
    #[serde(default)]
    pub tag: Option<String>,
    /// `cudaDriverVersion`, e.g. `13000`.
    #[serde(default)]
    pub cuda_driver: Option<String>,
    /// aws-ofi-nccl's fabric (`efa`, `efa-direct`), 1.14+.
    #[serde(default)]
    pub ofi_fabric: Option<String>,
    /// IB/RoCE devices NCCL listed, as `mlx5_0/IB`.
    #[serde(default)]
    pub net_devices: Vec<String>,
    /// Whether this rank's network connections used GPUDirect RDMA (`/GDRDMA`); null without
    /// network connections.
    #[serde(default)]
    pub gdr: Option<bool>,
    /// The largest `nNodes` of the communicators this rank joined (NCCL 2.20+).
    #[serde(default)]
    pub nodes: Option<u32>,
    /// NCCL's `localRanks` and `localRank` in that communicator (2.20+): how many ranks NCCL
    /// put on this rank's node and which one this is.
    #[serde(default)]
    pub local_ranks: Option<u32>,
    #[serde(default)]
    pub local_rank: Option<u32>,
    /// Per connection kind, the peers it reached: which links stayed inside the node and
    /// which crossed the network.
    #[serde(default)]
    pub connections: Vec<ConnectionSummary>,
}

impl RankSummary {
    /// `NET/Socket with 2,3; P2P/CUMEM with 1`: each connection kind with the ranks it reached, so
    /// a reader sees which links stayed in the node and which crossed the network; `-` when
    /// the log shows no connection.
    pub fn connection_text(&self) -> String {
        const SHOWN: usize = 8;
        if self.connections.is_empty() {
            return if self.transports.is_empty() {
                "-".to_string()
            } else {
                self.transports.join(", ")
            };
        }
        let kinds: Vec<String> = self
            .connections
            .iter()
            .map(|c| {
                if c.peers.is_empty() {
                    return c.transport.clone();
                }
                let mut peers: Vec<String> =
                    c.peers.iter().take(SHOWN).map(u32::to_string).collect();
                if c.peers.len() > SHOWN {
                    peers.push(format!("+{}", c.peers.len() - SHOWN));
                }
                format!("{} with {}", c.transport, peers.join(","))
            })
            .collect();
        kinds.join("; ")
    }
}

/// One connection kind of one rank, e.g. `NET/Socket` to ranks 2 and 3 over 8 channel lines.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ConnectionSummary {
    pub transport: String,
    /// NCCL ranks at the other end (sorted; at most 64; empty when the lines don't name them).
    pub peers: Vec<u32>,
    /// Connection lines seen (one per channel and direction).
    pub lines: u64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warn,
    Error,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Finding {
    /// Stable identifier, e.g. `socket-fallback`.
    pub id: String,
    pub severity: Severity,
    pub message: String,
    pub evidence: Vec<Evidence>,
    pub hint: Option<String>,
}

/// A log line that shows a fact or a finding. One pointer wide: the fold keeps an optional
/// piece of evidence for each of some forty facts of every process and rank (up to 16 384
/// each), nearly all of them empty, so the line itself lives behind the pointer. Reads its
/// fields through `Deref` (`evidence.line`); serialises as `EvidenceLine`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(transparent)]
pub struct Evidence(Box<EvidenceLine>);

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EvidenceLine {
    /// File name (or `<stdin>`), shared by every piece of evidence from that source.
    pub source: std::sync::Arc<str>,
    /// 1-based line number in that source.
    pub line: u64,
    pub text: String,
}

impl Evidence {
    pub fn new(source: std::sync::Arc<str>, line: u64, text: String) -> Self {
        Evidence(Box::new(EvidenceLine { source, line, text }))
    }
}

impl std::ops::Deref for Evidence {
    type Target = EvidenceLine;

    fn deref(&self) -> &EvidenceLine {
        &self.0
    }
}

impl std::ops::DerefMut for Evidence {
    fn deref_mut(&mut self) -> &mut EvidenceLine {
        &mut self.0
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Warn,
    Fail,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Warn => "warn",
            Verdict::Fail => "fail",
        }
    }
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Error => "error",
        }
    }
}

impl std::str::FromStr for Transport {
    type Err = String;

    /// Parses the names used in JSON and by `--expect` (`efa`, `ib`, `roce`, `socket`, ...).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let all = [
            Transport::Efa,
            Transport::Ib,
            Transport::Roce,
            Transport::Socket,
            Transport::Tcpx,
            Transport::Nvlink,
            Transport::Other,
            Transport::None,
            Transport::Unknown,
        ];
        all.into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| format!("unknown transport `{s}`"))
    }
}
