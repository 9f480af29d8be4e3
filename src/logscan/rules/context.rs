//! Rules that explain rather than accuse: why the transport is unknown, why `Using network`
//! in a single-node log is not traffic, simulated nodes on one host, hints about libraries.

use super::{Ctx, DEBUG_HINT, finding, first_evidence, list};
use crate::logscan::analysis::{Finding, Severity, Transport};
use crate::logscan::transport::machine_split;

/// No NCCL line at all (an empty file, `</dev/null`, an empty `kubectl logs`, a log captured
/// without NCCL_DEBUG=INFO): nothing to judge. An error, so that it never reads as a pass;
/// `netcheck analyze` exits 2 on it (bad input: nothing to judge), not 1.
///
/// With `NCCL_DEBUG=VERSION`, or `WARN` and nothing to warn about, NCCL prints its version
/// banner alone (`NCCL version 2.28.9+cuda13.0`, checked on the GPU host): the message then
/// says so and shows the banner, rather than that NCCL printed nothing.
pub fn no_nccl_lines(ctx: &Ctx, out: &mut Vec<Finding>) {
    if ctx.facts.nccl_records > 0 {
        return;
    }
    // The banner, not PyTorch's error text, which ends with the version too (`NCCL error in:
    // ..., unhandled system error, NCCL version 2.21.5`) and is printed whatever NCCL_DEBUG is.
    let banner = ctx
        .facts
        .job_versions
        .iter()
        .find(|v| !v.evidence.text.to_ascii_lowercase().contains("error"));
    let (message, evidence) = match banner {
        Some(banner) => (
            format!(
                "only NCCL's version banner (NCCL {}), no NCCL INFO line: nothing to judge (the job ran with NCCL_DEBUG=VERSION or WARN)",
                banner.value
            ),
            vec![banner.evidence.clone()],
        ),
        None => (
            "no NCCL lines at all: nothing to judge (an empty input, or a log captured without NCCL_DEBUG=INFO)".to_string(),
            vec![],
        ),
    };
    out.push(finding(
        NO_NCCL_LINES,
        Severity::Error,
        message,
        evidence,
        Some(DEBUG_HINT.into()),
    ));
}

/// The id of [`no_nccl_lines`]'s finding.
pub const NO_NCCL_LINES: &str = "no-nccl-lines";

pub fn unknown_transport(ctx: &Ctx, out: &mut Vec<Finding>) {
    if ctx.decision.inter_node != Transport::Unknown || ctx.expect.is_some() {
        return;
    }
    let facts = ctx.facts;
    if facts.nccl_records == 0 {
        // `no_nccl_lines` says it.
        return;
    }
    // A failed or hanging init explains the missing transport better (other findings).
    let init_stuck = facts.ranks.iter().any(|r| !r.open_inits.is_empty());
    if !facts.no_net_plugin.is_empty() || !facts.no_interface.is_empty() || init_stuck {
        return;
    }
    let libfabric_unknown = ctx
        .decision
        .per_rank
        .iter()
        .flatten()
        .find(|(t, _)| *t == Transport::Unknown);
    let (message, evidence) = if let Some((_, e)) =
        libfabric_unknown.filter(|(_, e)| e.text.contains("abric") || e.text.contains("OFI"))
    {
        (
            "traffic used the OFI plugin (Libfabric), but no `Selected provider` line says whether that was EFA or TCP inside libfabric".to_string(),
            vec![e.clone()],
        )
    } else if ctx.decision.rdma_carried {
        (
            "NCCL's IB verbs module (RDMA) carried inter-node traffic, but the log lacks the port list (`NET/IB : Using [0]mlx5_0:1/IB` or `/RoCE`) that tells InfiniBand from RoCE".to_string(),
            first_evidence(ctx, Transport::Unknown),
        )
    } else if ctx.decision.nodes.is_some_and(|n| n > 1) {
        (
            format!(
                "the log shows {} nodes, but no connection lines (`via NET/...`) or network selection that say what carried traffic between them",
                ctx.decision.nodes.unwrap_or(0)
            ),
            vec![],
        )
    } else {
        (
            "the log does not say which transport carried inter-node traffic".to_string(),
            vec![],
        )
    };
    out.push(finding(
        "transport-unknown",
        Severity::Warn,
        message,
        evidence,
        Some(DEBUG_HINT.into()),
    ));
}

pub fn single_node(ctx: &Ctx, out: &mut Vec<Finding>) {
    if ctx.decision.inter_node != Transport::None {
        return;
    }
    let mut kinds: Vec<String> = ctx
        .facts
        .ranks
        .iter()
        .flat_map(|r| r.conns.iter().map(|c| c.label.clone()))
        .collect();
    kinds.sort();
    kinds.dedup();
    let networks: Vec<String> = ctx
        .facts
        .ranks
        .iter()
        .filter_map(|r| r.network.as_ref().map(|f| f.value.clone()))
        .collect();
    let mut message = "no inter-node traffic: every connection stayed within a node".to_string();
    if !kinds.is_empty() {
        message.push_str(&format!(" ({})", list(kinds)));
    }
    if let Some(network) = networks.first() {
        message.push_str(&format!(
            "; `Using network {network}` only names the module NCCL would use between nodes"
        ));
    }
    let evidence = first_evidence(ctx, Transport::None);
    out.push(finding(
        "single-node",
        Severity::Info,
        message,
        evidence,
        None,
    ));
}

/// NCCL counted several nodes, but all ranks share one host name: NCCL_HOSTID or disabled
/// P2P/SHM split one machine (how `netcheck run --simulate-nodes` exercises the network path).
pub fn simulated_nodes(ctx: &Ctx, out: &mut Vec<Finding>) {
    let d = ctx.decision;
    let ranks_seen = d.per_rank.iter().flatten().count();
    let Some(evidence) = machine_split(
        ctx.facts,
        &d.hosts,
        ranks_seen,
        d.nodes.is_some_and(|n| n > 1),
    ) else {
        return;
    };
    out.push(finding(
        "simulated-nodes",
        Severity::Info,
        format!(
            "NCCL counted {} nodes, but every rank runs on host `{}` (NCCL_HOSTID, or P2P and SHM disabled): the \"inter-node\" traffic stayed on this host",
            d.nodes.unwrap_or(0),
            d.hosts[0]
        ),
        evidence,
        None,
    ));
}

/// NCCL 2.22–2.25 opened a library without tuner symbols: usually a net plugin is on the path.
pub fn tuner_probe_hint(ctx: &Ctx, out: &mut Vec<Finding>) {
    let facts = ctx.facts;
    let plugin_lines = facts
        .processes
        .iter()
        .any(|p| p.loaded_plugin.is_some() || p.ofi_version.is_some());
    let probe = facts.processes.iter().find_map(|p| p.tuner_probe.clone());
    let Some(probe) =
        probe.filter(|_| !plugin_lines && ctx.decision.inter_node == Transport::Socket)
    else {
        return;
    };
    out.push(finding(
        "plugin-on-path",
        Severity::Info,
        "a library without tuner symbols was probed (NCCL 2.22–2.25 does this for libnccl-net.so): a net plugin is probably installed, yet traffic used TCP; the NET/Plugin lines that would say why are not in the log".into(),
        vec![probe],
        Some(DEBUG_HINT.into()),
    ));
}

pub fn verbs_missing(ctx: &Ctx, out: &mut Vec<Finding>) {
    let evidence: Vec<_> = ctx
        .facts
        .processes
        .iter()
        .filter_map(|p| p.verbs_missing.clone())
        .collect();
    if evidence.is_empty() {
        return;
    }
    out.push(finding(
        "verbs-missing",
        Severity::Info,
        "libibverbs could not be opened: NCCL cannot use InfiniBand or RoCE in this environment".into(),
        evidence,
        Some("if the hosts have IB/RoCE, install rdma-core (libibverbs) in the image and expose /dev/infiniband".into()),
    ));
}
