//! Rules about the job's health rather than its transport: hangs in init, NCCL errors and
//! warnings, mismatched versions or NIC counts between ranks.

use std::collections::{BTreeMap, HashMap};

use super::{Ctx, finding, labels, list};
use crate::logscan::analysis::{Finding, Severity};
use crate::logscan::facts::{Fact, Phase, Process, release};

/// A rank started communicator init and never finished it: where it stopped.
pub fn init_incomplete(ctx: &Ctx, out: &mut Vec<Finding>) {
    let facts = ctx.facts;
    let mut stuck = Vec::new();
    let mut evidence = Vec::new();
    let mut severity = Severity::Warn;
    let mut missing_note = None;
    let mut torn_note = None;
    // Whether every stuck rank was still in bootstrap, waiting for ranks to check in.
    let mut all_in_bootstrap = true;
    let mut restart_note = None;
    // Per host, GPU and source, the line where the last process to complete an init there
    // started: a restarted job's new workers take the same GPUs.
    let mut completed_on: HashMap<(&str, Option<u32>, usize), u64> = HashMap::new();
    for rank in facts.ranks.iter().filter(|r| r.completed_inits > 0) {
        if let Some(host) = facts.processes[rank.process].host.as_deref() {
            let (source, line) = rank.first_at;
            let first = completed_on.entry((host, rank.dev, source)).or_default();
            *first = (*first).max(line);
        }
    }
    let job_release = facts.job_release();
    for rank in &facts.ranks {
        let Some(open) = rank
            .open_inits
            .iter()
            .find(|o| o.nranks.is_none_or(|n| n > 1))
        else {
            continue;
        };
        let p = &facts.processes[rank.process];
        let number = rank.rank.map_or("?".to_string(), |r| r.to_string());
        // An `Init START` in the form of 2.21 to 2.28 (`Facts::init_started`) was printed
        // after bootstrap up to 2.22: the release the log names decides.
        let phase = if rank.phase == Phase::InitStart
            && open.after_bootstrap.is_none()
            && (p.version.as_ref())
                .map_or(job_release, |v| release(&v.value))
                .is_some_and(|r| r < (2, 23))
        {
            Phase::Bootstrapped
        } else {
            rank.phase
        };
        stuck.push(format!(
            "{} (rank {number}) stopped at `{}`",
            p.label(),
            phase.as_str()
        ));
        // Bootstrap ends only once every rank of the communicator has checked in with the
        // root (bootstrap.cc), and the topology and connection lines come after it: a rank
        // that got that far shows that no rank is missing, whatever this log holds.
        let past_bootstrap = matches!(
            phase,
            Phase::Bootstrapped | Phase::Topology | Phase::Connecting | Phase::Connected
        );
        all_in_bootstrap &= !past_bootstrap;
        let started = facts.mark_evidence(&open.mark);
        if let Some(last) = facts.phase_evidence(rank)
            && last != started
        {
            evidence.push(started);
            evidence.push(last);
        } else {
            evidence.push(started);
        }
        let group = open.comm_id.and_then(|id| facts.groups.get(&id));
        if let Some(group) = group {
            let expected = group.nranks.unwrap_or(0) as usize;
            let seen = group.ranks.len();
            // Other ranks finished, or some never showed up although the log covers every
            // node: a real hang. One pod of a multi-node job lacks the other nodes anyway,
            // and a rank past bootstrap shows that the ranks not in the log did start.
            let every_node = ctx.decision.hosts.len() as u32 >= ctx.decision.nodes.unwrap_or(1);
            // Where Ray folded init lines of several workers into one, a rank's missing lines
            // (its `Init COMPLETE`, or the `Init START` of ranks not seen) may be folded
            // away: neither shows a hang there.
            let folded = facts.folded_inits.contains(&open.mark.source);
            let (source, line) = rank.last_at;
            // A process that started on the same GPU after this rank's last line and
            // completed an init: the job was restarted (torchrun's `--max-restarts`, an
            // elastic agent, Ray Train's retries start new workers on the same devices, and a
            // container's log keeps every attempt). This attempt was given up, not the job.
            let restarted = (p.host.as_deref())
                .and_then(|host| completed_on.get(&(host, rank.dev, source)))
                .is_some_and(|&first| first > line);
            if restarted {
                restart_note = Some(format!(
                    "; a process that started later on the same GPU of `{}` completed an init: the job was restarted, and a later attempt got through",
                    p.host.as_deref().unwrap_or("?")
                ));
            }
            // Others finishing shows a hang only where the log goes on after this rank's
            // last record: a log that ends while the rank still prints its init lines was
            // cut there (or the job is still starting). Lines of two sources (files, pods)
            // cannot be put in order, so there the others' finishing still counts.
            let finished_later = group.completed
                && (group.last_completed_at.0 != source || group.last_completed_at.1 > line);
            // Where the processes' lines are torn (output passed on in blocks, not lines),
            // their order is the order the blocks were written in, and this rank's last lines
            // may still sit in its buffer: others' lines after its own show nothing.
            let torn = group.last_completed_at.0 == source && facts.torn(source);
            let left_behind = finished_later && !torn;
            if finished_later && torn && !folded {
                torn_note = Some(format!(
                    "; in {}, lines of different processes are glued together (output passed on in blocks, not lines), so their order does not show which rank stopped first",
                    facts.sources[source]
                ));
            }
            if !folded
                && !restarted
                && (left_behind || (expected > seen && every_node && !past_bootstrap))
            {
                severity = Severity::Error;
            }
            if expected > seen {
                missing_note = Some(format!(
                    "; only {seen} of {expected} ranks of that communicator appear in the log"
                ));
            }
        }
    }
    if stuck.is_empty() {
        return;
    }
    let folded_note = if facts.folded_inits.is_empty() {
        ""
    } else {
        "; Ray folded init lines of several workers into one (`[repeated Nx across cluster]`), so lines of some ranks are not in the log"
    };
    let hint = if all_in_bootstrap {
        "a rank that never joins init keeps the others waiting in bootstrap: check that every rank started (crash, wrong MASTER_ADDR/port, firewall between nodes) — or the log was cut off"
    } else {
        "every rank had joined the communicator (bootstrap was done), so none is missing: a rank stopped after bootstrap waits on the others' topology exchange or connections — read the other ranks' logs for an error, and check the network between nodes (NCCL_SOCKET_IFNAME, a firewall on NCCL's ports) — or the log was cut off"
    };
    out.push(finding(
        "init-incomplete",
        severity,
        format!(
            "{} rank(s) started communicator init and never completed it: {}{}{folded_note}{}{}",
            stuck.len(),
            list(stuck),
            missing_note.unwrap_or_default(),
            // Said only where they are why no hang is called.
            torn_note
                .filter(|_| severity == Severity::Warn)
                .unwrap_or_default(),
            restart_note
                .filter(|_| severity == Severity::Warn)
                .unwrap_or_default()
        ),
        evidence,
        Some(hint.into()),
    ));
}

/// A network connection failed while it carried data: `NET/IB : Got completion from peer …
/// with status=N` (the verbs work request failed, every release; NCCL then fails the
/// operation), `NET/Socket : socket progress error`, or aws-ofi-nccl's `Request … completed
/// with error` (the libfabric provider's completion carried an error). Often the only sign of the failure in a
/// log taken at `NCCL_DEBUG=WARN`, which prints no error breadcrumbs. The IB status is
/// `enum ibv_wc_status` (libibverbs' verbs.h), named with what usually causes it.
pub fn net_traffic_errors(ctx: &Ctx, out: &mut Vec<Finding>) {
    let facts = ctx.facts;
    let ib: Vec<&Process> = facts
        .processes
        .iter()
        .filter(|p| p.ib_traffic.is_some())
        .collect();
    let socket: Vec<&Process> = (facts.processes.iter())
        .filter(|p| p.socket_traffic.is_some())
        .collect();
    let ofi: Vec<&Process> = facts
        .processes
        .iter()
        .filter(|p| p.ofi_traffic.is_some())
        .collect();
    if ib.is_empty() && socket.is_empty() && ofi.is_empty() {
        return;
    }
    let mut parts = Vec::new();
    let mut hint = None;
    if !ib.is_empty() {
        let statuses: Vec<u32> = (ib.iter())
            .filter_map(|p| wc_status(&p.ib_traffic.as_ref()?.text))
            .collect();
        // A flushed request (5) follows an earlier failure on the same queue pair: name the
        // first status that is not one, if any.
        let first = (statuses.iter().find(|&&s| s != 5))
            .or(statuses.first())
            .copied();
        let what = match first.map(|s| (s, wc_status_name(s))) {
            Some((s, Some((name, meaning)))) => format!(", status {s} {name}: {meaning}"),
            Some((s, None)) => format!(", status {s}"),
            None => String::new(),
        };
        hint = first.and_then(wc_status_hint);
        parts.push(format!(
            "NET/IB completion error on {}{what}",
            labels(ib.iter().copied())
        ));
    }
    if !socket.is_empty() {
        parts.push(format!(
            "NET/Socket progress error{}",
            on(socket.iter().copied())
        ));
    }
    if !ofi.is_empty() {
        let detail = (ofi.iter())
            .find_map(|p| p.ofi_traffic.as_ref()?.value.as_deref())
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        parts.push(format!(
            "a NET/OFI request completed with an error{detail}{}",
            on(ofi.iter().copied())
        ));
    }
    let evidence = (ib.iter().filter_map(|p| p.ib_traffic.clone()))
        .chain(socket.iter().filter_map(|p| p.socket_traffic.clone()))
        .chain(
            ofi.iter()
                .filter_map(|p| Some(p.ofi_traffic.as_ref()?.evidence.clone())),
        )
        .collect();
    out.push(finding(
        "net-traffic-error",
        Severity::Error,
        format!(
            "a network connection failed while carrying data: {}",
            parts.join("; ")
        ),
        evidence,
        Some(hint.unwrap_or("a peer exited or the network between the ranks failed: read the peers' logs from the same moment and check the fabric (`netcheck fabric`)").into()),
    ));
}

/// A verbs call failed in NCCL's verbs wrapper (a WARN; NCCL returns a system error and the
/// operation or init fails): which call, on which processes, the error as printed, and what
/// usually causes it.
pub fn verbs_call_failed(ctx: &Ctx, out: &mut Vec<Finding>) {
    let facts = ctx.facts;
    let failed: Vec<(&Process, &str, &Fact<Option<String>>)> = (facts.processes.iter())
        .flat_map(|p| {
            p.verbs_failures
                .iter()
                .map(move |(call, fact)| (p, call.as_str(), fact))
        })
        .collect();
    let Some(&(_, first_call, first)) = failed.first() else {
        return;
    };
    let mut calls: Vec<String> = Vec::new();
    for (_, call, fact) in &failed {
        let text = match &fact.value {
            Some(detail) => format!("{call} ({detail})"),
            None => call.to_string(),
        };
        if !calls.contains(&text) {
            calls.push(text);
        }
    }
    let processes = on(failed.iter().map(|(p, _, _)| *p));
    let hint = verbs_hint(first_call, first.value.as_deref());
    out.push(finding(
        "ib-verbs-failed",
        Severity::Error,
        format!(
            "an InfiniBand/RoCE verbs call failed: {}{processes}",
            list(calls)
        ),
        failed
            .iter()
            .map(|(_, _, fact)| fact.evidence.clone())
            .collect(),
        Some(hint.into()),
    ));
}

fn verbs_hint(call: &str, detail: Option<&str>) -> &'static str {
    let memlock = detail.is_some_and(|d| d.contains("Cannot allocate memory"));
    if call.starts_with("ibv_reg_") && !memlock {
        "the NIC could not register the buffer: for GPU memory (GPUDirect RDMA) the nvidia-peermem module must be loaded, or DMA-BUF supported (open GPU kernel driver, Linux 5.12+); NCCL_NET_GDR_LEVEL=LOC turns GPUDirect RDMA off to confirm"
    } else if memlock || call.starts_with("ibv_create_") || call == "ibv_alloc_pd" {
        "the NIC refused memory or queue resources: raise the locked-memory limit (`ulimit -l unlimited`; in a container the runtime's memlock limit) and check that no other job holds the device"
    } else if call == "ibv_modify_qp" {
        "the connection between the two queue pairs could not be set up: on RoCE usually the GID index (leave NCCL_IB_GID_INDEX unset so NCCL picks one) or routing between NICs on different rails (NCCL_CROSS_NIC); on InfiniBand check the port state (`ibstat`) on both hosts"
    } else if call == "ibv_open_device" || call == "ibv_get_device_list" {
        "the device could not be opened: in a container mount /dev/infiniband (the RDMA device plugin) and allow IPC_LOCK"
    } else {
        "see the NCCL WARN lines around it; `netcheck doctor` checks the verbs devices, the locked-memory limit and nvidia-peermem"
    }
}

/// NCCL's socket layer gave up connecting to a peer (the bootstrap and NET/Socket both connect
/// to ports each rank listens on, chosen at random): the peer and the error, and what they
/// usually mean.
pub fn socket_connect_failed(ctx: &Ctx, out: &mut Vec<Finding>) {
    let facts = ctx.facts;
    if facts.connect_failures.is_empty() {
        return;
    }
    let (peer, error) = facts.connect_failure.clone().unwrap_or_default();
    let what = format!(
        "{}{}",
        peer.as_deref().unwrap_or("a peer"),
        error
            .as_deref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default()
    );
    let error = error.unwrap_or_default().to_ascii_lowercase();
    let cause = if error.contains("refused") {
        "nothing listened on the peer's port: the peer process exited or has not started yet (read its log)"
    } else if error.contains("no route")
        || error.contains("unreachable")
        || error.contains("timed out")
    {
        "the packets did not reach the peer: a firewall or security group between the nodes (on EKS the node security group must allow all traffic from itself), or NCCL_SOCKET_IFNAME naming an interface the peers cannot reach (docker0, a private bridge)"
    } else {
        "check that the nodes reach each other on all TCP ports and that NCCL_SOCKET_IFNAME names an interface they share"
    };
    out.push(finding(
        "socket-connect-failed",
        Severity::Error,
        format!(
            "NCCL could not open a TCP connection to {what} ({} line(s))",
            facts.connect_failures.total
        ),
        facts.connect_failures.items.clone(),
        Some(format!("NCCL's bootstrap and its socket transport connect to ports each rank listens on, chosen at random; {cause}")),
    ));
}

/// ` on host:pid, …` for the processes that the log names, or nothing.
fn on<'a>(processes: impl IntoIterator<Item = &'a Process>) -> String {
    let mut names: Vec<String> = processes.into_iter().filter_map(Process::name).collect();
    names.dedup();
    if names.is_empty() {
        String::new()
    } else {
        format!(" on {}", list(names))
    }
}

/// The work completion status of a `Got completion` line: `status=12` (2.21+), `with error
/// 12,` (2.4–2.18).
fn wc_status(text: &str) -> Option<u32> {
    let at = text
        .find("status=")
        .map(|at| at + "status=".len())
        .or_else(|| text.find("with error ").map(|at| at + "with error ".len()))?;
    let digits: &str = &text[at..];
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().ok()
}

/// `enum ibv_wc_status` (libibverbs verbs.h): the name and what it means for NCCL.
fn wc_status_name(status: u32) -> Option<(&'static str, &'static str)> {
    Some(match status {
        1 => ("IBV_WC_LOC_LEN_ERR", "a local length error"),
        2 => ("IBV_WC_LOC_QP_OP_ERR", "a local queue pair error"),
        4 => (
            "IBV_WC_LOC_PROT_ERR",
            "a local protection error: the buffer's memory registration did not allow the access",
        ),
        5 => (
            "IBV_WC_WR_FLUSH_ERR",
            "flushed after an earlier failure on the connection",
        ),
        8 => ("IBV_WC_LOC_ACCESS_ERR", "a local access error"),
        9 => ("IBV_WC_REM_INV_REQ_ERR", "the peer rejected the request"),
        10 => (
            "IBV_WC_REM_ACCESS_ERR",
            "the peer refused access to its memory",
        ),
        11 => ("IBV_WC_REM_OP_ERR", "the peer failed the operation"),
        12 => (
            "IBV_WC_RETRY_EXC_ERR",
            "the peer never acknowledged (transport retries exhausted)",
        ),
        13 => (
            "IBV_WC_RNR_RETRY_EXC_ERR",
            "the peer had no receive posted (receiver-not-ready retries exhausted)",
        ),
        19 => ("IBV_WC_FATAL_ERR", "the adapter reported a fatal error"),
        20 => ("IBV_WC_RESP_TIMEOUT_ERR", "the peer's response timed out"),
        21 => ("IBV_WC_GENERAL_ERR", "a general adapter error"),
        _ => return None,
    })
}

fn wc_status_hint(status: u32) -> Option<&'static str> {
    Some(match status {
        12 | 20 => {
            "the packets did not reach the peer or its answer did not come back: a port or link down, a switch or routing problem (on RoCE: the GID index, VLAN or PFC/ECN settings, NCCL_IB_GID_INDEX), or the peer process gone; check `ibstat`/`ibv_devinfo` on both hosts, the peers' logs and the fabric (`netcheck fabric`)"
        }
        4 | 8 | 10 => {
            "memory registration failed or was refused: with GPUDirect RDMA, check that nvidia-peermem (or DMA-BUF) works on both hosts and the memlock limit (`ulimit -l`); NCCL_NET_GDR_LEVEL=LOC turns GPUDirect RDMA off to confirm"
        }
        13 => {
            "the receiver had no buffer posted in time: a peer stalled or exited; read the peers' logs from the same moment"
        }
        _ => return None,
    })
}

pub fn nccl_errors(ctx: &Ctx, out: &mut Vec<Finding>) {
    let facts = ctx.facts;
    if !facts.timeouts.is_empty() {
        out.push(finding(
            "collective-timeout",
            Severity::Error,
            format!("a collective timed out ({} line(s) from PyTorch's watchdog)", facts.timeouts.total),
            facts.timeouts.items.clone(),
            Some("a rank is stuck or the network stalled: analyze the logs of every rank together and compare their last phase".into()),
        ));
    }
    let errors = &facts.errors;
    if errors.is_empty() {
        return;
    }
    let has = |code: &str| {
        errors
            .items
            .iter()
            .any(|e| e.text.trim_end().ends_with(code) || e.text.contains(&format!("{code} [")))
    };
    let (what, hint) = if has("-> 6")
        || errors
            .items
            .iter()
            .any(|e| e.text.contains("ncclRemoteError"))
    {
        (
            "a remote error: a peer exited or the network between ranks failed",
            "check the peer ranks' logs and the fabric (`netcheck fabric`); the NCCL WARN before the error names the failing request",
        )
    } else if has("-> 5") {
        (
            "invalid usage",
            "usually a setting NCCL cannot honour (NCCL_NET, NCCL_* values): see the NCCL WARN before the error",
        )
    } else if has("-> 2") {
        (
            "a system error",
            "see the NCCL WARN before the error (sockets, memory, /dev/shm size)",
        )
    } else {
        ("an error", "see the NCCL WARN lines before the error")
    };
    out.push(finding(
        "nccl-error",
        Severity::Error,
        format!("NCCL returned {what} ({} error line(s))", errors.total),
        errors.items.clone(),
        Some(hint.into()),
    ));
}

pub fn nccl_warnings(ctx: &Ctx, out: &mut Vec<Finding>) {
    let warnings = &ctx.facts.warnings;
    if warnings.is_empty() {
        return;
    }
    out.push(finding(
        "nccl-warn",
        Severity::Warn,
        format!("NCCL logged {} WARN line(s)", warnings.total),
        warnings.items.clone(),
        None,
    ));
}

/// Ranks on different NCCL builds can fail or hang at init.
pub fn mixed_versions(ctx: &Ctx, out: &mut Vec<Finding>) {
    let facts = ctx.facts;
    let mut by_version: BTreeMap<
        &str,
        (Vec<&Process>, Option<&crate::logscan::analysis::Evidence>),
    > = BTreeMap::new();
    for p in &facts.processes {
        if let Some(v) = &p.version {
            let entry = by_version.entry(v.value.as_str()).or_default();
            entry.0.push(p);
            entry.1.get_or_insert(&v.evidence);
        }
    }
    for v in &facts.job_versions {
        by_version
            .entry(v.value.as_str())
            .or_default()
            .1
            .get_or_insert(&v.evidence);
    }
    if by_version.len() < 2 {
        return;
    }
    let parts = by_version.iter().map(|(version, (procs, _))| {
        if procs.is_empty() {
            version.to_string()
        } else {
            format!("{version} on {}", labels(procs.iter().copied()))
        }
    });
    out.push(finding(
        "mixed-nccl-versions",
        Severity::Warn,
        format!("ranks run different NCCL versions: {}", list(parts)),
        by_version.values().filter_map(|(_, e)| e.cloned()).collect(),
        Some("run one NCCL build on every node (same image, same nvidia-nccl wheel); mixed versions can fail or hang in init".into()),
    ));
}

/// One process sees fewer EFA NICs than the others, by aws-ofi-nccl's `found N nics`, or
/// NCCL 2.30 found ranks with different numbers of network devices itself.
pub fn nic_count_mismatch(ctx: &Ctx, out: &mut Vec<Finding>) {
    let before = out.len();
    ofi_nic_count_mismatch(ctx, out);
    let Some(nccl) = &ctx.facts.net_device_mismatch else {
        return;
    };
    let (min, max, stopped) = nccl.value;
    let severity = if stopped {
        Severity::Error
    } else {
        Severity::Warn
    };
    let consequence = if stopped {
        "NCCL stopped communicator init (`Set NCCL_IGNORE_NET_MISMATCH=1 to continue`)"
    } else {
        "NCCL went on because NCCL_IGNORE_NET_MISMATCH is set"
    };
    if let Some(found) = out.get_mut(before) {
        found.evidence.push(nccl.evidence.clone());
        found.message = format!("{}; {consequence}", found.message);
        if stopped {
            found.severity = severity;
        }
        return;
    }
    out.push(finding(
        "nic-count-mismatch",
        severity,
        format!(
            "ranks see different numbers of network devices (min {min}, max {max}): {consequence}"
        ),
        vec![nccl.evidence.clone()],
        Some("a node short of a NIC: compare `ibv_devices` or `fi_info -p efa` on each node and the `vpc.amazonaws.com/efa` (or RDMA device) count each pod requests. NCCL_IGNORE_NET_MISMATCH=1 lets init go on; it does not fix the node".into()),
    ));
}

fn ofi_nic_count_mismatch(ctx: &Ctx, out: &mut Vec<Finding>) {
    let with_nics: Vec<(&Process, u32)> = ctx
        .facts
        .processes
        .iter()
        .filter_map(|p| p.ofi_nics.map(|n| (p, n)))
        .collect();
    let (Some(min), Some(max)) = (
        with_nics.iter().min_by_key(|(_, n)| *n),
        with_nics.iter().max_by_key(|(_, n)| *n),
    ) else {
        return;
    };
    if min.1 == max.1 {
        return;
    }
    let fewer: Vec<&Process> = with_nics
        .iter()
        .filter(|(_, n)| *n < max.1)
        .map(|(p, _)| *p)
        .collect();
    let evidence = [min.0, max.0]
        .iter()
        .filter_map(|p| p.ofi_provider.as_ref().map(|f| f.evidence.clone()))
        .collect();
    out.push(finding(
        "nic-count-mismatch",
        Severity::Warn,
        format!(
            "{} see(s) only {} EFA NIC(s) where others see {}",
            labels(fewer),
            min.1,
            max.1
        ),
        evidence,
        Some("check that every pod requests the same `vpc.amazonaws.com/efa` count and that `fi_info -p efa` on the odd node lists all devices".into()),
    ));
}

pub fn capped(ctx: &Ctx, out: &mut Vec<Finding>) {
    if ctx.facts.capped {
        out.push(finding(
            "input-capped",
            Severity::Info,
            format!(
                "the log is larger than netcheck tracks in detail (more than {} processes or ranks, or many communicators); later details were counted but not stored",
                crate::logscan::facts::MAX_PROCESSES
            ),
            vec![],
            None,
        ));
    }
}

/// Two inputs each hold the same rank of a communicator of the same size (two `rank 0 of 2`):
/// one NCCL communicator numbers its ranks once (init.cc), so these are separate jobs, and
/// reading them as one job would count their hosts as one job's nodes.
pub fn duplicate_ranks(ctx: &Ctx, out: &mut Vec<Finding>) {
    let facts = ctx.facts;
    if facts.sources.len() < 2 {
        return;
    }
    // (world, rank) → the first process that holds it, and its source.
    let mut first: std::collections::HashMap<(u32, u32), (usize, usize)> = Default::default();
    let mut clashes: Vec<(u32, u32, usize, usize)> = Vec::new();
    for (index, r) in facts.ranks.iter().enumerate() {
        let (Some(number), true) = (r.rank, r.world > 1) else {
            continue;
        };
        let Some(source) = facts.processes[r.process].source else {
            continue;
        };
        match first.get(&(r.world, number)) {
            Some(&(earlier, other)) if other != source => {
                if clashes.len() < 8 {
                    clashes.push((number, r.world, earlier, index));
                }
            }
            Some(_) => {}
            None => {
                first.insert((r.world, number), (index, source));
            }
        }
    }
    let Some(&(number, world, a, b)) = clashes.first() else {
        return;
    };
    let (ra, rb) = (&facts.ranks[a], &facts.ranks[b]);
    let (pa, pb) = (&facts.processes[ra.process], &facts.processes[rb.process]);
    let evidence = [ra, rb]
        .iter()
        .filter_map(|r| facts.phase_evidence(r))
        .collect();
    let source = |p: &Process| {
        p.source
            .and_then(|s| facts.sources.get(s))
            .cloned()
            .unwrap_or_default()
    };
    out.push(finding(
        "duplicate-ranks",
        Severity::Warn,
        format!(
            "rank {number} of a {world}-rank communicator appears twice, in {} ({}) and in {} ({}){}: these inputs look like separate jobs, read here as one",
            source(pa),
            pa.label(),
            source(pb),
            pb.label(),
            if clashes.len() > 1 { format!(", and {} more rank(s) likewise", clashes.len() - 1) } else { String::new() }
        ),
        evidence,
        Some("analyse each job's logs on their own: `netcheck analyze job-a.log`, then `netcheck analyze job-b.log`".into()),
    ));
}
