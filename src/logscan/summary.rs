//! Step 6: the `Analysis` of a job from its facts — the transport decision, the findings and
//! the verdict, and the summary fields (versions, networks, provider, per-rank rows).

use super::analysis::{ANALYSIS_SCHEMA, Analysis, ConnectionSummary, RankSummary, Transport};
use super::facts::Facts;
use super::halves;
use super::rules::{self, Ctx};
use super::transport::{self, Decision};

/// The analysis of everything folded into `facts`.
pub fn analysis(facts: &Facts, expect: Option<Transport>) -> Analysis {
    let decision = transport::decide(facts, expect);
    let findings = || {
        rules::findings(&Ctx {
            facts,
            decision: &decision,
            expect,
        })
    };
    // A large job's rows take as long as the findings: build them side by side.
    let (per_rank, findings) = if halves::worth_it(facts.ranks.len()) {
        std::thread::scope(|scope| {
            let rows = scope.spawn(|| per_rank(facts, &decision));
            let findings = findings();
            (halves::join(rows), findings)
        })
    } else {
        (per_rank(facts, &decision), findings())
    };
    let verdict = rules::verdict(&findings);
    Analysis {
        schema: ANALYSIS_SCHEMA.to_string(),
        nccl_versions: nccl_versions(facts),
        networks: networks(facts),
        ofi_provider: ofi_provider(facts),
        nodes: decision.nodes,
        ranks: rank_count(facts),
        inter_node_transport: decision.inter_node,
        socket_fallback: decision.socket_fallback,
        basis: decision
            .basis
            .iter()
            .map(|b| b.as_str().to_string())
            .collect(),
        why: decision.why.clone(),
        gdr: decision.gdr,
        per_rank,
        findings,
        verdict,
        hosts: decision.hosts.clone(),
        expected: expect,
    }
}

fn sorted_unique(mut items: Vec<String>) -> Vec<String> {
    items.sort();
    items.dedup();
    items
}

/// The distinct names, sorted: copied once each, not once per rank (a large job repeats
/// the same few names thousands of times).
fn distinct<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut names: Vec<&str> = names.collect();
    names.sort_unstable();
    names.dedup();
    names.into_iter().map(str::to_string).collect()
}

fn nccl_versions(facts: &Facts) -> Vec<String> {
    let versions = facts
        .processes
        .iter()
        .filter_map(|p| p.version.as_ref().map(|f| f.value.as_str()))
        .chain(facts.job_versions.iter().map(|f| f.value.as_str()));
    distinct(versions)
}

/// `Using network` names, and network names on connection lines (the only ones some
/// excerpts have). A CollNet plugin (`via COLLNET/SHARP`) runs beside the network, not as
/// one: its name is listed only where no network is shown at all.
fn networks(facts: &Facts) -> Vec<String> {
    let conn_networks = |collnet: bool| {
        facts.ranks.iter().flat_map(move |r| {
            r.conns
                .iter()
                .filter(move |c| c.is_collnet() == collnet)
                .filter_map(|c| c.network.as_deref())
        })
    };
    let chosen = facts
        .ranks
        .iter()
        .filter_map(|r| r.network.as_ref().map(|f| f.value.as_str()));
    let networks = distinct(chosen.chain(conn_networks(false)));
    if networks.is_empty() {
        return distinct(conn_networks(true));
    }
    networks
}

fn ofi_provider(facts: &Facts) -> Option<String> {
    let providers = distinct(
        facts
            .processes
            .iter()
            .filter_map(|p| p.ofi_provider.as_ref().map(|f| f.value.as_str())),
    );
    if providers.is_empty() {
        return transport::job_provider(facts);
    }
    Some(providers.join(", "))
}

fn rank_count(facts: &Facts) -> Option<u32> {
    let world = facts.ranks.iter().map(|r| r.world).max().unwrap_or(0);
    if world > 0 {
        return Some(world);
    }
    let numbered = facts.ranks.iter().filter(|r| r.rank.is_some()).count();
    (numbered > 0).then_some(numbered as u32)
}

fn per_rank(facts: &Facts, decision: &Decision) -> Vec<RankSummary> {
    let mut out: Vec<RankSummary> = facts
        .ranks
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let p = &facts.processes[r.process];
            let network_conns = r.conns.iter().filter(|c| c.is_network());
            let gdr = network_conns
                .clone()
                .next()
                .map(|_| network_conns.clone().any(|c| c.gdr));
            RankSummary {
                rank: r.rank,
                host: p.host.clone(),
                pid: p.pid,
                cuda_dev: r.dev,
                nccl_version: p.version.as_ref().map(|f| f.value.clone()),
                network: r.network.as_ref().map(|f| f.value.clone()),
                inter_node_transport: decision.per_rank[i].as_ref().map(|(t, _)| *t),
                transports: sorted_unique(r.conns.iter().map(|c| c.label.clone()).collect()),
                ofi_provider: p.ofi_provider.as_ref().map(|f| f.value.clone()),
                nics: p.ofi_nics,
                last_phase: r.phase_mark.as_ref().map(|_| r.phase.as_str().to_string()),
                tag: p.tag.clone(),
                cuda_driver: p.cuda_driver.clone(),
                ofi_fabric: p.ofi_fabric.clone(),
                net_devices: p
                    .ib_devices
                    .iter()
                    .map(|d| format!("{}/{}", d.name, d.link_layer))
                    .collect(),
                gdr,
                nodes: r.max_nnodes.as_ref().map(|f| f.value),
                local_ranks: r.local_ranks,
                local_rank: r.local_rank,
                connections: {
                    let mut conns: Vec<ConnectionSummary> = r
                        .conns
                        .iter()
                        .map(|c| ConnectionSummary {
                            transport: c.label.clone(),
                            peers: c.peers.clone(),
                            lines: c.count,
                        })
                        .collect();
                    conns.sort_by(|a, b| a.transport.cmp(&b.transport));
                    conns
                },
            }
        })
        .collect();
    out.sort_by(|a, b| {
        (a.rank.is_none(), a.rank, &a.host, a.pid, a.cuda_dev, &a.tag).cmp(&(
            b.rank.is_none(),
            b.rank,
            &b.host,
            b.pid,
            b.cuda_dev,
            &b.tag,
        ))
    });
    out
}
