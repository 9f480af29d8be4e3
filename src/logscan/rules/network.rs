//! Rules about the network path: expectation, TCP fallback, plugin and provider failures,
//! interfaces, GDR, and the explanations that keep single-node logs from looking like a
//! fallback.

use super::{Ctx, DEBUG_HINT, finding, first_evidence, labels, list};
use crate::logscan::analysis::{Finding, Severity, Transport};
use crate::logscan::facts::{PluginFailure, Process};
use crate::logscan::transport::{
    NodeCount, describe, failure_text, ip_protocol, is_tcp_provider, shows_ipoib,
};

const EFA_HINT: &str = "check that the pod requests `vpc.amazonaws.com/efa` (and the node runs the EFA \
device plugin), that `fi_info -p efa` lists devices inside the container, that FI_PROVIDER is unset \
or `efa`, and that aws-ofi-nccl is on LD_LIBRARY_PATH (or named by NCCL_NET_PLUGIN)";
const IB_HINT: &str = "check that rdma-core (libibverbs) is in the image, /dev/infiniband is visible \
in the container, `ibv_devices` lists the HCAs, NCCL_IB_DISABLE is unset and NCCL_IB_HCA (if set) names existing devices";

/// The hint for a plugin or provider failure on a log that shows one machine: EFA or
/// InfiniBand matter only between machines, and many single-host instances (g5, g6, a
/// workstation) have neither.
const ONE_HOST_PLUGIN_HINT: &str = "harmless on one host: traffic between its GPUs never uses the network plugin. On a host without EFA or InfiniBand (EC2 g5/g6, a workstation) this is expected; set NCCL_NET=Socket to skip the plugin. Before a multi-node run on EFA or IB instances, run `netcheck doctor` there";

/// Whether the log shows one machine: one node, or one host and nothing beyond it.
fn one_host(ctx: &Ctx) -> bool {
    ctx.decision.inter_node == Transport::None
        || ctx.decision.node_count.count == NodeCount::One
        || ctx.decision.one_host.is_some()
}

fn expect_hint(expect: Transport) -> String {
    match expect {
        Transport::Efa => EFA_HINT.to_string(),
        Transport::Ib | Transport::Roce => IB_HINT.to_string(),
        Transport::Socket => {
            "NCCL picked another network; set NCCL_NET=Socket if TCP is intended".into()
        }
        Transport::Tcpx => {
            "check that the GPUDirect-TCPX/TCPXO plugin is installed and selected (NCCL_NET_PLUGIN)"
                .into()
        }
        _ => DEBUG_HINT.to_string(),
    }
}

/// `--expect X` and the logs show something else (or cannot tell): the check fails.
pub fn expectation(ctx: &Ctx, out: &mut Vec<Finding>) {
    let Some(expect) = ctx.expect else { return };
    let actual = ctx.decision.inter_node;
    if actual == expect && ctx.decision.seen.len() <= 1 {
        return;
    }
    let shown = match actual {
        Transport::None => {
            "no inter-node traffic (every connection stayed within a node)".to_string()
        }
        Transport::Unknown => {
            "nothing that says which transport carried inter-node traffic".to_string()
        }
        _ if ctx.decision.seen.len() > 1 => format!(
            "a mix: {}",
            list(ctx.decision.seen.iter().map(|t| t.as_str().to_string()))
        ),
        other => format!("`{}`", other.as_str()),
    };
    let evidence = first_evidence(ctx, actual);
    out.push(finding(
        "expectation-not-met",
        Severity::Error,
        format!(
            "expected inter-node traffic over `{}`, but the logs show {shown}",
            expect.as_str()
        ),
        evidence,
        Some(if actual == Transport::Unknown {
            DEBUG_HINT.to_string()
        } else {
            expect_hint(expect)
        }),
    ));
}

pub fn socket_fallback(ctx: &Ctx, out: &mut Vec<Finding>) {
    if ctx.decision.socket_fallback != Some(true) {
        return;
    }
    let signals = &ctx.decision.rdma_signals;
    let why = if signals.is_empty() {
        format!(
            "`--expect {}` asked for RDMA",
            ctx.expect.map_or("?", |t| t.as_str())
        )
    } else {
        describe(signals)
    };
    let mut evidence = first_evidence(ctx, Transport::Socket);
    evidence.extend(signals.iter().map(|s| s.evidence.clone()));
    let failures: Vec<PluginFailure> = ctx
        .facts
        .processes
        .iter()
        .flat_map(|p| p.plugin_failures.iter().map(|(f, _)| *f))
        .collect();
    let hint = failures
        .first()
        .map(|f| failure_hint(*f, ctx))
        .unwrap_or_else(|| match ctx.expect {
            Some(expect) => expect_hint(expect),
            None if has_ib(ctx) => IB_HINT.to_string(),
            None => EFA_HINT.to_string(),
        });
    // The OFI plugin on libfabric's tcp provider: name what ran, not "Socket".
    let ofi_on_tcp = ctx.facts.processes.iter().find_map(|p| {
        let provider = p
            .ofi_provider
            .as_ref()
            .filter(|f| is_tcp_provider(&f.value))?;
        let ran = p.ranks.iter().find_map(|&r| {
            let net = ctx.facts.ranks[r].network.as_ref()?;
            (!net.value.eq_ignore_ascii_case("socket")).then(|| net.value.clone())
        });
        Some((
            ran.unwrap_or_else(|| "Libfabric".into()),
            provider.value.clone(),
        ))
    });
    let headline = match ofi_on_tcp {
        Some((net, provider)) => format!(
            "inter-node traffic went over {}: NCCL used the OFI plugin (`{net}`) on libfabric's `{provider}` provider, not EFA, although an RDMA path was expected or present",
            ip_protocol(&provider)
        ),
        None => "inter-node traffic fell back to TCP sockets although an RDMA path was expected or present".to_string(),
    };
    out.push(finding(
        "socket-fallback",
        Severity::Error,
        format!("{headline}: {why}"),
        evidence,
        Some(hint),
    ));
}

/// IB ports listed or sockets over IPoIB (the hosts carry InfiniBand), or IB devices chosen
/// by NCCL_IB_HCA: the IB hint, not the EFA one.
fn has_ib(ctx: &Ctx) -> bool {
    ctx.facts
        .processes
        .iter()
        .any(|p| !p.ib_devices.is_empty() || shows_ipoib(p) || p.env("NCCL_IB_HCA").is_some())
}

fn failure_hint(failure: PluginFailure, ctx: &Ctx) -> String {
    match failure {
        PluginFailure::RequestedNotFound => {
            let name = ctx
                .facts
                .processes
                .iter()
                .find_map(|p| p.requested_plugin.as_ref())
                .map_or("?", |f| f.value.as_str());
            format!(
                "NCCL_NET_PLUGIN={name} names a plugin NCCL could not load: put its directory on \
                 LD_LIBRARY_PATH (aws-ofi-nccl: /opt/amazon/ofi-nccl/lib or /opt/aws-ofi-nccl/lib) \
                 or fix NCCL_NET_PLUGIN"
            )
        }
        PluginFailure::LoadFailed => "the dynamic loader could not load the net plugin (the \
            line says why: a library it needs is not on the library path, or is older than the \
            one it was built against), so NCCL used its built-in transports: for aws-ofi-nccl, \
            put the libfabric it was built with (the EFA installer's /opt/amazon/efa/lib) ahead \
            of any other on LD_LIBRARY_PATH; `ldd` on the plugin inside the container lists what \
            is missing"
            .into(),
        PluginFailure::Incompatible => "the plugin exports no ncclNetPlugin API version this NCCL \
            supports: install an aws-ofi-nccl (or other plugin) build that matches the NCCL version"
            .into(),
        PluginFailure::OfiProviderMissing | PluginFailure::OfiInitFailed => EFA_HINT.to_string(),
        PluginFailure::OfiLibfabricTooOld => {
            let too_old = (ctx.facts.processes.iter()).find(|p| p.ofi_libfabric_needed.is_some());
            let needed = too_old
                .and_then(|p| p.ofi_libfabric_needed.as_deref())
                .unwrap_or("a newer version");
            let found = too_old
                .and_then(|p| p.ofi_libfabric.as_deref())
                .map_or_else(|| "an older one".to_string(), |v| format!("libfabric {v}"));
            format!(
                "aws-ofi-nccl's EFA support needs libfabric {needed} or newer and loaded {found} \
                 first on the library path: use the EFA installer's libfabric \
                 (/opt/amazon/efa/lib) ahead of any distribution or conda copy"
            )
        }
        PluginFailure::InitFailed => "the plugin's own NET/... lines above say why it failed; \
            `netcheck doctor` checks the plugin, libfabric and devices"
            .into(),
        PluginFailure::NoneUsable => NO_NET_HINT.to_string(),
    }
}

/// Some ranks on RDMA, others on TCP (or any two different inter-node transports).
pub fn mixed_transports(ctx: &Ctx, out: &mut Vec<Finding>) {
    let seen = &ctx.decision.seen;
    if seen.len() < 2 {
        return;
    }
    let mut parts = Vec::new();
    let mut evidence = Vec::new();
    for t in seen {
        let ranks: Vec<usize> = ctx
            .decision
            .per_rank
            .iter()
            .enumerate()
            .filter(|(_, x)| matches!(x, Some((y, _)) if y == t))
            .map(|(i, _)| i)
            .collect();
        let procs = ranks
            .iter()
            .map(|&r| &ctx.facts.processes[ctx.facts.ranks[r].process]);
        parts.push(format!(
            "{} rank(s) on `{}` ({})",
            ranks.len(),
            t.as_str(),
            labels(procs)
        ));
        evidence.extend(first_evidence(ctx, *t));
    }
    out.push(finding(
        "mixed-transports",
        Severity::Error,
        format!(
            "ranks disagree on the inter-node transport: {}",
            parts.join("; ")
        ),
        evidence,
        Some(format!(
            "compare the odd hosts' devices, plugin and environment with the others; {EFA_HINT}"
        )),
    ));
}

const NO_NET_HINT: &str = "NCCL_NET forces a network that is not available here (e.g. NCCL_NET=IB \
without IB devices), or every plugin failed: unset NCCL_NET or fix the plugin named above";

pub fn no_net_plugin(ctx: &Ctx, out: &mut Vec<Finding>) {
    let list = &ctx.facts.no_net_plugin;
    if list.is_empty() {
        return;
    }
    let (message, hint) = match &ctx.facts.network_not_found {
        Some(name) => (
            format!(
                "NCCL_NET asks for network `{}`, which no plugin or built-in transport here provides (`Error: network {} not found.`, {} time(s)): communicator init failed",
                name.value, name.value, list.total
            ),
            not_found_hint(&name.value),
        ),
        None => (
            format!(
                "NCCL could not initialise any network (`Failed to initialize any NET plugin`, {} time(s)): communicator init failed",
                list.total
            ),
            NO_NET_HINT.to_string(),
        ),
    };
    out.push(finding(
        "no-net-plugin",
        Severity::Error,
        message,
        list.items.clone(),
        Some(hint),
    ));
}

/// NCCL found no interface for its sockets (bootstrap, NET/Socket): init cannot start. The
/// usual cause is `NCCL_SOCKET_IFNAME` (or `NCCL_OOB_NET_IFNAME`) naming an interface the
/// pod or host does not have.
pub fn no_interface(ctx: &Ctx, out: &mut Vec<Finding>) {
    let list = &ctx.facts.no_interface;
    if list.is_empty() {
        return;
    }
    let asked = ["NCCL_SOCKET_IFNAME", "NCCL_OOB_NET_IFNAME"]
        .iter()
        .find_map(|var| {
            ctx.facts
                .processes
                .iter()
                .find_map(|p| p.env(var))
                .map(|fact| (var, fact))
        });
    let mut evidence = list.items.clone();
    let setting = match asked {
        Some((var, fact)) => {
            evidence.insert(0, fact.evidence.clone());
            format!(", and {var}={} matches none of the host's", fact.value)
        }
        None => String::new(),
    };
    evidence.truncate(5);
    out.push(finding(
        "no-interface",
        Severity::Error,
        format!(
            "NCCL found no network interface to use for its sockets{setting} ({} time(s)): communicator init cannot start",
            list.total
        ),
        evidence,
        Some("NCCL_SOCKET_IFNAME takes interface name prefixes (`eth`, `ens`), `=eth0` for exactly one, `^lo,docker` to exclude: list the pod's interfaces (`ip -br addr`) and name one that exists (a Kubernetes pod usually has eth0; a hostNetwork pod sees the node's, such as ens5)".into()),
    ));
}

/// Multi-node NVLink (GB200/GB300 NVL72-class) is there but unusable, IMEX not being set
/// up: 2.27+ stops init unless `NCCL_MNNVL_ENABLE=0`, which sends the traffic between hosts
/// over the network instead.
pub fn mnnvl_not_working(ctx: &Ctx, out: &mut Vec<Finding>) {
    let Some(broken) = &ctx.facts.mnnvl_broken else {
        return;
    };
    let (clique, stopped) = broken.value;
    let list = &ctx.facts.mnnvl_broken_lines;
    let (severity, consequence) = if stopped {
        (
            Severity::Error,
            "NCCL stopped communicator init (it goes on over the network only with NCCL_MNNVL_ENABLE=0)",
        )
    } else {
        (
            Severity::Warn,
            "NCCL does not use it, so traffic between hosts takes the network",
        )
    };
    out.push(finding(
        "mnnvl-not-working",
        severity,
        format!(
            "multi-node NVLink (a clique of {clique} GPUs) is available but not working ({} time(s)): {consequence}",
            list.total
        ),
        list.items.clone(),
        Some("IMEX is not set up: the nvidia-imex service must run on every node of the NVLink domain (`nvidia-imex-ctl -N` lists them) and the process needs an IMEX channel (/dev/nvidia-caps-imex-channels; on Kubernetes, a ComputeDomain of NVIDIA's DRA driver). NCCL_MNNVL_ENABLE=0 runs without it, over the slower network".into()),
    ));
}

/// What to check when `NCCL_NET` names a network NCCL did not find. aws-ofi-nccl registers
/// as `AWS Libfabric` up to 1.12 and as `Libfabric` from 1.13 (which also answers to `AWS
/// Libfabric` and `OFI` when `NCCL_NET` says so); IB needs verbs devices.
fn not_found_hint(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    if lower.contains("libfabric") || lower == "ofi" {
        format!(
            "`{name}` names the aws-ofi-nccl plugin's network: either the plugin did not load ({EFA_HINT}), or it goes by another name (`AWS Libfabric` up to 1.12; `Libfabric` from 1.13, which also answers to `AWS Libfabric` and `OFI`). Or unset NCCL_NET"
        )
    } else if lower == "ib" {
        format!("NCCL_NET=IB needs InfiniBand/RoCE devices in the container: {IB_HINT}")
    } else {
        NO_NET_HINT.to_string()
    }
}

/// A net plugin that was tried and failed. In a single-node run this is a warning only: no
/// traffic fell back, but a multi-node run in the same environment would.
pub fn plugin_failed(ctx: &Ctx, out: &mut Vec<Finding>) {
    let relevant = |f: PluginFailure| {
        !matches!(
            f,
            PluginFailure::OfiProviderMissing | PluginFailure::NoneUsable
        )
    };
    let failing: Vec<&Process> = ctx
        .facts
        .processes
        .iter()
        .filter(|p| p.plugin_failures.iter().any(|(f, _)| relevant(*f)))
        .collect();
    // With a fallback, the socket-fallback finding already carries these lines.
    if ctx.decision.socket_fallback == Some(true) {
        return;
    }
    let Some(first) = failing.first() else { return };
    let kind = first
        .plugin_failures
        .iter()
        .map(|(f, _)| *f)
        .find(|f| relevant(*f))
        .unwrap_or(PluginFailure::InitFailed);
    let evidence = failing
        .iter()
        .flat_map(|p| {
            p.plugin_failures
                .iter()
                .filter(|(f, _)| relevant(*f))
                .map(|(_, e)| e.clone())
        })
        .collect();
    let consequence = match ctx.decision.inter_node {
        // NCCL_NET pinned to the failed plugin: nothing ran, nothing fell back.
        _ if !ctx.facts.no_net_plugin.is_empty() => {
            "; no other network was allowed, so NCCL could not initialise (no-net-plugin)"
        }
        Transport::None => {
            "; this run had no inter-node traffic, so nothing fell back, but a multi-node run in this environment would use TCP"
        }
        Transport::Socket => "; NCCL used TCP sockets instead",
        _ => "",
    };
    out.push(finding(
        "net-plugin-failed",
        Severity::Warn,
        format!(
            "{} on {}{consequence}",
            failure_text(kind),
            labels(failing.iter().copied())
        ),
        evidence,
        Some(match kind {
            f if f.is_ofi() && one_host(ctx) && ctx.expect.is_none() => {
                ONE_HOST_PLUGIN_HINT.to_string()
            }
            _ => failure_hint(kind, ctx),
        }),
    ));
}

/// aws-ofi-nccl found no usable provider, or libfabric said the EFA provider found nothing.
pub fn efa_provider_missing(ctx: &Ctx, out: &mut Vec<Finding>) {
    // A warning that leaves the provider usable is not a missing provider: what
    // aws-ofi-nccl selected afterwards decides.
    let efa_selected = ctx.facts.processes.iter().any(|p| {
        p.ofi_provider
            .as_ref()
            .is_some_and(|f| f.value.to_ascii_lowercase().starts_with("efa"))
    });
    if efa_selected && ctx.decision.inter_node != Transport::Socket {
        return;
    }
    let mut evidence: Vec<_> = ctx
        .facts
        .processes
        .iter()
        .filter(|p| p.ofi_provider.is_none())
        .flat_map(|p| p.plugin_failures.iter())
        .filter(|(f, _)| *f == PluginFailure::OfiProviderMissing)
        .map(|(_, e)| e.clone())
        .collect();
    let efa_lines = ctx
        .facts
        .libfabric_warnings
        .items
        .iter()
        .filter(|e| e.text.contains("efa"));
    evidence.extend(efa_lines.cloned());
    if evidence.is_empty() {
        return;
    }
    out.push(finding(
        "efa-provider-missing",
        Severity::Warn,
        "libfabric offered no usable EFA provider: no EFA device is visible to the process".into(),
        evidence,
        Some(if one_host(ctx) && ctx.expect.is_none() {
            ONE_HOST_PLUGIN_HINT.to_string()
        } else {
            EFA_HINT.to_string()
        }),
    ));
}

pub fn ofi_tcp_provider(ctx: &Ctx, out: &mut Vec<Finding>) {
    let tcp: Vec<&Process> = ctx
        .facts
        .processes
        .iter()
        .filter(|p| {
            p.ofi_provider
                .as_ref()
                .is_some_and(|f| is_tcp_provider(&f.value))
        })
        .collect();
    let Some(first) = tcp.first().and_then(|p| p.ofi_provider.as_ref()) else {
        return;
    };
    out.push(finding(
        "ofi-tcp-provider",
        Severity::Warn,
        format!(
            "aws-ofi-nccl selected libfabric's `{}` provider on {}: its traffic is plain {} inside libfabric, not EFA",
            first.value,
            labels(tcp.iter().copied()),
            ip_protocol(&first.value)
        ),
        tcp.iter().filter_map(|p| p.ofi_provider.as_ref().map(|f| f.evidence.clone())).collect(),
        Some(EFA_HINT.to_string()),
    ));
}

pub fn ib_disabled(ctx: &Ctx, out: &mut Vec<Finding>) {
    let signals: Vec<_> = ctx
        .decision
        .rdma_signals
        .iter()
        .filter(|s| s.why.starts_with("NCCL_IB_DISABLE"))
        .collect();
    if signals.is_empty() {
        return;
    }
    out.push(finding(
        "ib-disabled",
        Severity::Warn,
        "NCCL_IB_DISABLE=1 is set on hosts with InfiniBand interfaces".into(),
        signals.iter().map(|s| s.evidence.clone()).collect(),
        Some("unset NCCL_IB_DISABLE unless TCP is intended (HPC-X's IBext plugin needs NCCL_IBEXT_DISABLE instead)".into()),
    ));
}

/// TCP between nodes chosen on purpose (`NCCL_NET=Socket`, FastSocket) where an RDMA path was
/// there: not a fallback by the contract, since someone asked for it, but the fabric went
/// unused, which a node-group check should not pass in silence.
pub fn rdma_unused(ctx: &Ctx, out: &mut Vec<Finding>) {
    let d = ctx.decision;
    if d.inter_node != Transport::Socket
        || !d.deliberate_tcp
        || d.one_host.is_some()
        || ctx.expect == Some(Transport::Socket)
        || d.rdma_signals.is_empty()
    {
        return;
    }
    let mut evidence = first_evidence(ctx, Transport::Socket);
    evidence.extend(d.rdma_signals.iter().map(|s| s.evidence.clone()));
    out.push(finding(
        "rdma-unused",
        Severity::Warn,
        format!(
            "TCP between nodes was chosen (NCCL_NET=Socket or FastSocket) although an RDMA path was there: {}",
            describe(&d.rdma_signals)
        ),
        evidence,
        Some("unset NCCL_NET, or set it to the RDMA network (`IB`, `Libfabric`), unless TCP is intended; `--expect socket` says it is".into()),
    ));
}

/// TCP between nodes with nothing RDMA in sight: not a fallback by the contract, but rarely
/// what a GPU cluster wants.
pub fn tcp_inter_node(ctx: &Ctx, out: &mut Vec<Finding>) {
    let d = ctx.decision;
    // One machine split into NCCL nodes: the TCP stayed on it (`simulated-nodes` says so),
    // and advice about EFA between machines would be beside the point.
    if d.inter_node != Transport::Socket
        || d.socket_fallback == Some(true)
        || d.one_host.is_some()
        || d.deliberate_tcp
        || ctx.expect == Some(Transport::Socket)
    {
        return;
    }
    let why = match d.socket_fallback {
        Some(false) => {
            "no RDMA device or plugin attempt is in the log, so this is not counted as a fallback"
        }
        _ => "the init lines that would show whether an RDMA path was tried are not in the log",
    };
    out.push(finding(
        "tcp-inter-node",
        Severity::Warn,
        format!("inter-node traffic went over TCP sockets; {why}"),
        first_evidence(ctx, Transport::Socket),
        Some(format!("if these nodes have EFA or InfiniBand, run with `--expect efa` or `--expect ib` and {EFA_HINT}")),
    ));
}

/// RDMA between nodes without GPUDirect RDMA: data is staged through host memory.
pub fn gdr_disabled(ctx: &Ctx, out: &mut Vec<Finding>) {
    let rdma = matches!(
        ctx.decision.inter_node,
        Transport::Efa | Transport::Ib | Transport::Roce
    );
    if !rdma || ctx.decision.gdr != Some(false) {
        return;
    }
    let explained = ctx
        .facts
        .processes
        .iter()
        .find_map(|p| p.ofi_gdr_off.clone());
    // The instance type aws-ofi-nccl's platform table matched, where the log shows it.
    let platform = ctx
        .facts
        .processes
        .iter()
        .find_map(|p| p.ofi_platform.as_ref())
        .filter(|_| explained.is_none() && ctx.decision.inter_node == Transport::Efa);
    let generic_hint = "expected on EC2 G-series (g5, g6, g6e); on P-series or IB clusters check nvidia-peermem or DMA-BUF support and NCCL_NET_GDR_LEVEL";
    let (severity, message, hint) = match (&explained, platform) {
        (Some(_), _) => (
            Severity::Info,
            "EFA without GPUDirect RDMA: the OFI plugin reports the platform does not support it, so data is staged through host memory".to_string(),
            generic_hint.to_string(),
        ),
        (None, Some(p)) if instance_has_gdr(&p.value) == Some(true) => (
            Severity::Warn,
            format!(
                "EFA ran without GPUDirect RDMA (no `/GDRDMA` on the connection lines) on {}, an instance type that has it: data is staged through host memory",
                p.value
            ),
            format!(
                "{} supports GPUDirect RDMA over EFA: check that the node loads nvidia-peermem or offers DMA-BUF (open GPU kernel modules), that FI_EFA_USE_DEVICE_RDMA is not 0, and NCCL_NET_GDR_LEVEL",
                p.value
            ),
        ),
        (None, Some(p)) if instance_has_gdr(&p.value) == Some(false) => (
            Severity::Info,
            format!(
                "EFA without GPUDirect RDMA on {}, which has none: data is staged through host memory, as expected there",
                p.value
            ),
            "GPUDirect RDMA over EFA needs a P-series instance from p4d on".to_string(),
        ),
        _ => (
            Severity::Warn,
            "inter-node RDMA ran without GPUDirect RDMA (no `/GDRDMA` on the connection lines): data is staged through host memory".to_string(),
            generic_hint.to_string(),
        ),
    };
    // NCCL's own `GPU Direct RDMA Disabled for …` says why, where the log has it.
    let nccl_off = ctx
        .facts
        .processes
        .iter()
        .find_map(|p| p.gdr_nic_off.as_ref())
        .filter(|_| severity == Severity::Warn);
    let hint = match nccl_off.map(|e| e.text.as_str()) {
        Some(text) if text.contains("(no module") => "NCCL found no GPUDirect RDMA kernel support on the node (`no module`): load nvidia-peermem, or use DMA-BUF (open GPU kernel modules)".to_string(),
        Some(text) if text.contains("(distance ") => "NCCL judged the GPU and the NIC too far apart on PCI for GPUDirect RDMA (`distance`, NCCL_NET_GDR_LEVEL): check the PCI topology (`nvidia-smi topo -m`) and which NIC each GPU uses".to_string(),
        _ => hint,
    };
    let mut evidence: Vec<_> = explained.into_iter().collect();
    evidence.extend(platform.map(|p| p.evidence.clone()));
    evidence.extend(nccl_off.cloned());
    evidence.extend(first_evidence(ctx, ctx.decision.inter_node));
    out.push(finding(
        "gdr-disabled",
        severity,
        message,
        evidence,
        Some(hint),
    ));
}

/// Whether an EC2 instance type (as aws-ofi-nccl's platform table names it: `p4d.24xlarge`,
/// `P4d`, `p5en.48xlarge`, `p6-b200.48xlarge`, `g6e.48xlarge`) has GPUDirect RDMA over EFA:
/// P-series from p4d on do; p3dn and the G-series have EFA without it; `None` for others.
fn instance_has_gdr(instance: &str) -> Option<bool> {
    let lower = instance.to_ascii_lowercase();
    let mut chars = lower.chars();
    let family = chars.next()?;
    let generation = chars.next()?.to_digit(10)?;
    match family {
        'p' => Some(generation >= 4),
        'g' => Some(false),
        _ => None,
    }
}

/// TCP sockets may carry traffic between nodes: NCCL's Socket transport did, or the log
/// leaves it open.
fn tcp_may_cross_nodes(ctx: &Ctx) -> bool {
    match ctx.decision.inter_node {
        Transport::Socket => true,
        Transport::Unknown => ctx.decision.node_count.count != NodeCount::One,
        _ => false,
    }
}

/// NCCL's sockets on a link-local address (169.254.x, fe80::; e.g. EKS Pod Identity's
/// `pod-id-link0`): it cannot reach other nodes, so a TCP path over it hangs.
pub fn socket_link_local(ctx: &Ctx, out: &mut Vec<Finding>) {
    let mut names: Vec<String> = Vec::new();
    let mut evidence = Vec::new();
    for p in &ctx.facts.processes {
        if let Some(fact) = p.link_local.as_ref().filter(|_| tcp_may_cross_nodes(ctx)) {
            names.extend(fact.value.iter().cloned());
            evidence.push(fact.evidence.clone());
        }
        let several = ctx.decision.node_count.count != NodeCount::One
            && ctx.decision.inter_node != Transport::None;
        if let (Some(e), true) = (&p.bootstrap_link_local, several) {
            names.extend(p.bootstrap_interface.iter().map(|f| f.value.clone()));
            evidence.push(e.clone());
        }
    }
    if evidence.is_empty() {
        return;
    }
    names.sort();
    names.dedup();
    out.push(finding(
        "socket-link-local",
        Severity::Warn,
        format!(
            "NCCL's sockets use `{}` on a link-local address (169.254.x.x / fe80::), which cannot reach other nodes: connections over it hang",
            names.join("`, `")
        ),
        evidence,
        Some(format!(
            "exclude it: NCCL_SOCKET_IFNAME=^{},lo,docker (or name the data interface, e.g. NCCL_SOCKET_IFNAME=eth0)",
            names.join(",")
        )),
    ));
}

/// Multi-node NVLink (GB200/GB300 NVL72): which ranks reached other hosts over NVLink and
/// which over the network beside it (EFA on p6e-gb200).
pub fn multi_node_nvlink(ctx: &Ctx, out: &mut Vec<Finding>) {
    let d = ctx.decision;
    if d.nvlink_ranks == 0 {
        return;
    }
    let evidence = first_evidence(ctx, Transport::Nvlink);
    let network = d.seen.iter().find(|t| **t != Transport::Nvlink);
    let message = match network {
        Some(t) => format!(
            "multi-node NVLink (MNNVL) carried traffic between hosts for {} rank(s); ranks outside the NVLink domain used {}",
            d.nvlink_ranks,
            t.as_str()
        ),
        None => format!(
            "multi-node NVLink (MNNVL) carried the traffic between hosts for {} rank(s): one NVLink domain (GB200/GB300 NVL72), not a single node",
            d.nvlink_ranks
        ),
    };
    let mut evidence = evidence;
    if let Some(t) = network {
        evidence.extend(first_evidence(ctx, *t));
    }
    out.push(finding(
        "multi-node-nvlink",
        Severity::Info,
        message,
        evidence,
        None,
    ));
}

/// NCCL's sockets (transport or bootstrap) on loopback or a container bridge.
pub fn socket_interface(ctx: &Ctx, out: &mut Vec<Finding>) {
    let bad = |name: &str| {
        name == "lo"
            || ["docker", "veth", "virbr", "br-", "cni", "flannel"]
                .iter()
                .any(|p| name.starts_with(p))
    };
    let mut names = Vec::new();
    let mut evidence = Vec::new();
    for p in &ctx.facts.processes {
        // The NET/Socket list matters only where TCP may carry traffic between nodes, the
        // bootstrap interface wherever there may be several nodes.
        let transport = p
            .socket_interfaces
            .as_ref()
            .filter(|_| tcp_may_cross_nodes(ctx))
            .filter(|f| f.value.iter().any(|n| bad(n)));
        let bootstrap = p
            .bootstrap_interface
            .as_ref()
            .filter(|_| ctx.decision.inter_node != Transport::None)
            .filter(|f| bad(&f.value));
        if let Some(fact) = transport {
            names.extend(fact.value.iter().filter(|n| bad(n)).cloned());
            evidence.push(fact.evidence.clone());
        }
        if let Some(fact) = bootstrap {
            names.push(fact.value.clone());
            evidence.push(fact.evidence.clone());
        }
    }
    if evidence.is_empty() {
        return;
    }
    names.sort();
    names.dedup();
    out.push(finding(
        "socket-interface",
        Severity::Warn,
        format!(
            "NCCL's sockets use `{}`: a loopback or container-bridge interface cannot reach other nodes",
            names.join("`, `")
        ),
        evidence,
        Some("set NCCL_SOCKET_IFNAME to the host's data interface (e.g. `eth0`), or exclude the bad ones with `^docker,lo,veth`".into()),
    ));
}

#[cfg(test)]
mod tests {
    use super::instance_has_gdr;

    #[test]
    fn instance_types_with_and_without_gpudirect_rdma() {
        for (instance, gdr) in [
            ("p4d.24xlarge", Some(true)),
            ("P4d", Some(true)),
            ("p4de.24xlarge", Some(true)),
            ("p5.48xlarge", Some(true)),
            ("p5en.48xlarge", Some(true)),
            ("p6-b200.48xlarge", Some(true)),
            ("p3dn.24xlarge", Some(false)),
            ("g5.48xlarge", Some(false)),
            ("g6e.48xlarge", Some(false)),
            ("trn1.32xlarge", None),
            ("p-series", None),
            ("", None),
        ] {
            assert_eq!(instance_has_gdr(instance), gdr, "{instance}");
        }
    }
}
