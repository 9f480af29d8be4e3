//! Step 4b: rules turn facts and the transport decision into findings. One rule is one small
//! function in the table below; each has a fixture that triggers it and one that must not
//! (tests/analyze.rs). The verdict follows from the findings' severities.

mod context;
mod health;
mod network;

pub use context::NO_NCCL_LINES;

use super::analysis::{Evidence, Finding, Severity, Transport, Verdict};
use super::facts::{Facts, Process};
use super::transport::Decision;

/// What every rule may look at.
pub struct Ctx<'a> {
    pub facts: &'a Facts,
    pub decision: &'a Decision,
    pub expect: Option<Transport>,
}

type Rule = fn(&Ctx, &mut Vec<Finding>);

/// Every rule, in the order its findings are most useful to read (the output is then sorted
/// by severity, keeping this order within a severity).
const RULES: &[Rule] = &[
    context::no_nccl_lines,
    network::expectation,
    network::socket_fallback,
    network::mixed_transports,
    network::no_net_plugin,
    network::no_interface,
    network::plugin_failed,
    network::efa_provider_missing,
    network::ofi_tcp_provider,
    network::ib_disabled,
    network::rdma_unused,
    network::tcp_inter_node,
    context::unknown_transport,
    network::gdr_disabled,
    network::socket_interface,
    network::socket_link_local,
    network::multi_node_nvlink,
    network::mnnvl_not_working,
    health::init_incomplete,
    health::net_traffic_errors,
    health::verbs_call_failed,
    health::socket_connect_failed,
    health::nccl_errors,
    health::nccl_warnings,
    health::mixed_versions,
    health::nic_count_mismatch,
    health::duplicate_ranks,
    context::single_node,
    context::simulated_nodes,
    context::tuner_probe_hint,
    context::verbs_missing,
    health::capped,
];

pub fn findings(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for rule in RULES {
        rule(ctx, &mut out);
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

/// `fail` with any error, `warn` with any warning, else `pass`.
pub fn verdict(findings: &[Finding]) -> Verdict {
    match findings.iter().map(|f| f.severity).max() {
        Some(Severity::Error) => Verdict::Fail,
        Some(Severity::Warn) => Verdict::Warn,
        _ => Verdict::Pass,
    }
}

fn finding(
    id: &str,
    severity: Severity,
    message: String,
    evidence: Vec<Evidence>,
    hint: Option<String>,
) -> Finding {
    let mut evidence = evidence;
    evidence.truncate(super::facts::MAX_EVIDENCE);
    Finding {
        id: id.to_string(),
        severity,
        message,
        evidence,
        hint,
    }
}

const DEBUG_HINT: &str = "capture the whole log from NCCL init on with NCCL_DEBUG=INFO \
(NCCL_DEBUG_SUBSYS=INIT,NET is enough)";

/// Evidence of one rank whose inter-node transport is `t`.
pub(super) fn first_evidence(ctx: &Ctx, t: Transport) -> Vec<Evidence> {
    ctx.decision
        .per_rank
        .iter()
        .flatten()
        .filter(|(x, _)| *x == t)
        .map(|(_, e)| e.clone())
        .take(1)
        .collect()
}

/// `a, b, c and 4 more`: names for a message, never unbounded.
pub(super) fn list<I: IntoIterator<Item = String>>(items: I) -> String {
    let items: Vec<String> = items.into_iter().collect();
    const SHOWN: usize = 4;
    if items.len() <= SHOWN {
        items.join(", ")
    } else {
        format!(
            "{} and {} more",
            items[..SHOWN].join(", "),
            items.len() - SHOWN
        )
    }
}

fn labels<'a>(processes: impl IntoIterator<Item = &'a Process>) -> String {
    let mut names: Vec<String> = processes.into_iter().map(Process::label).collect();
    names.dedup();
    list(names)
}
