//! Human renderings of an `Analysis`: a short text summary for terminals and Markdown for PR
//! comments and CI step summaries. JSON is the `Analysis` itself (serde).

use std::fmt::Write;

use super::analysis::{Analysis, Evidence, Finding, RankSummary};

/// Up to this many ranks are listed one per line; more are grouped per host.
const RANKS_LISTED: usize = 16;

fn yes_no(value: Option<bool>) -> &'static str {
    match value {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown",
    }
}

fn or_dash(items: &[String]) -> String {
    if items.is_empty() {
        "-".to_string()
    } else {
        items.join(", ")
    }
}

fn who(rank: &RankSummary) -> String {
    match (&rank.host, rank.pid, &rank.tag) {
        (Some(host), Some(pid), _) => format!("{host}:{pid}"),
        (_, _, Some(tag)) => tag.clone(),
        _ => "-".to_string(),
    }
}

fn inter(rank: &RankSummary) -> &'static str {
    rank.inter_node_transport.map_or("-", |t| t.as_str())
}

fn evidence_line(e: &Evidence) -> String {
    format!("{}:{}: {}", e.source, e.line, e.text)
}

/// One-screen summary: verdict, transport, ranks, findings with evidence and hints.
pub fn text(a: &Analysis) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "verdict: {}", a.verdict.as_str().to_uppercase());
    let mut transport = format!("inter-node transport: {}", a.inter_node_transport.as_str());
    if let Some(expected) = a.expected {
        let _ = write!(transport, " (expected {})", expected.as_str());
    }
    let _ = writeln!(
        out,
        "{transport}   socket fallback: {}   GDR: {}",
        yes_no(a.socket_fallback),
        yes_no(a.gdr)
    );
    if !a.why.is_empty() {
        let _ = writeln!(out, "why: {} [{}]", a.why, a.basis.join(", "));
    }
    let count = |n: Option<u32>| n.map_or("?".to_string(), |n| n.to_string());
    let _ = writeln!(
        out,
        "NCCL {} · network {} · OFI provider {} · {} node(s), {} rank(s) · hosts {}",
        or_dash(&a.nccl_versions),
        or_dash(&a.networks),
        a.ofi_provider.as_deref().unwrap_or("-"),
        count(a.nodes),
        count(a.ranks),
        or_dash(&a.hosts),
    );
    if !a.per_rank.is_empty() {
        out.push('\n');
        for line in rank_lines(&a.per_rank) {
            let _ = writeln!(out, "  {line}");
        }
    }
    if !a.findings.is_empty() {
        out.push('\n');
    }
    for f in &a.findings {
        let _ = writeln!(out, "{:<5} {}: {}", f.severity.as_str(), f.id, f.message);
        for e in &f.evidence {
            let _ = writeln!(out, "      > {}", evidence_line(e));
        }
        if let Some(hint) = &f.hint {
            let _ = writeln!(out, "      hint: {hint}");
        }
    }
    out
}

/// One line per rank, or per host when there are many ranks.
fn rank_lines(ranks: &[RankSummary]) -> Vec<String> {
    if ranks.len() <= RANKS_LISTED {
        let row = |rank: &str, who: &str, dev: &str, inter: &str, phase: &str, conns: &str| {
            format!("{rank:<5} {who:<28} {dev:<4} {inter:<10} {phase:<22} {conns}")
        };
        let mut lines = vec![row(
            "rank",
            "process",
            "dev",
            "inter-node",
            "last phase",
            "connections",
        )];
        for r in ranks {
            lines.push(row(
                &r.rank.map_or("-".to_string(), |n| n.to_string()),
                &who(r),
                &r.cuda_dev.map_or("-".to_string(), |d| d.to_string()),
                inter(r),
                r.last_phase.as_deref().unwrap_or("-"),
                &r.connection_text(),
            ));
        }
        return lines;
    }
    let mut lines = vec![format!(
        "{:<28} {:<6} {:<16} {}",
        "host", "ranks", "inter-node", "connections"
    )];
    for (host, group) in by_host(ranks) {
        let mut kinds: Vec<&str> = group.iter().map(|r| inter(r)).collect();
        kinds.sort();
        kinds.dedup();
        let mut conns: Vec<&String> = group.iter().flat_map(|r| r.transports.iter()).collect();
        conns.sort();
        conns.dedup();
        let conns: Vec<String> = conns.into_iter().cloned().collect();
        lines.push(format!(
            "{:<28} {:<6} {:<16} {}",
            host,
            group.len(),
            kinds.join(","),
            or_dash(&conns)
        ));
    }
    lines
}

fn by_host(ranks: &[RankSummary]) -> Vec<(String, Vec<&RankSummary>)> {
    let mut groups: Vec<(String, Vec<&RankSummary>)> = Vec::new();
    for r in ranks {
        let host = r
            .host
            .clone()
            .or_else(|| r.tag.clone())
            .unwrap_or_else(|| "-".into());
        match groups.iter_mut().find(|(h, _)| *h == host) {
            Some((_, list)) => list.push(r),
            None => groups.push((host, vec![r])),
        }
    }
    groups.sort_by(|a, b| a.0.cmp(&b.0));
    groups
}

/// Escapes text for a Markdown table cell or inline use.
fn md(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Markdown for PR comments and `$GITHUB_STEP_SUMMARY`.
pub fn markdown(a: &Analysis) -> String {
    let mut out = String::new();
    let icon = match a.verdict {
        super::analysis::Verdict::Pass => "✅",
        super::analysis::Verdict::Warn => "⚠️",
        super::analysis::Verdict::Fail => "❌",
    };
    let _ = writeln!(out, "### {icon} netcheck analyze: {}\n", a.verdict.as_str());
    let _ = writeln!(out, "| | |\n|---|---|");
    let expected = a
        .expected
        .map(|t| format!(" (expected `{}`)", t.as_str()))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "| inter-node transport | `{}`{expected} |",
        a.inter_node_transport.as_str()
    );
    if !a.why.is_empty() {
        let _ = writeln!(out, "| why | {} (`{}`) |", md(&a.why), a.basis.join("`, `"));
    }
    let _ = writeln!(out, "| socket fallback | {} |", yes_no(a.socket_fallback));
    let _ = writeln!(out, "| GPUDirect RDMA | {} |", yes_no(a.gdr));
    let _ = writeln!(out, "| NCCL | {} |", md(&or_dash(&a.nccl_versions)));
    let _ = writeln!(out, "| network | {} |", md(&or_dash(&a.networks)));
    let _ = writeln!(
        out,
        "| OFI provider | {} |",
        md(a.ofi_provider.as_deref().unwrap_or("-"))
    );
    let count = |n: Option<u32>| n.map_or("?".to_string(), |n| n.to_string());
    let _ = writeln!(
        out,
        "| nodes / ranks | {} / {} |",
        count(a.nodes),
        count(a.ranks)
    );
    if !a.findings.is_empty() {
        let _ = writeln!(out, "\n#### Findings\n");
        for f in &a.findings {
            markdown_finding(&mut out, f);
        }
    }
    if !a.per_rank.is_empty() {
        let _ = writeln!(out, "\n#### Ranks\n");
        let lines = rank_lines(&a.per_rank);
        let _ = writeln!(out, "```\n{}\n```", lines.join("\n"));
    }
    out
}

fn markdown_finding(out: &mut String, f: &Finding) {
    let _ = writeln!(
        out,
        "- **{}** `{}`: {}",
        f.severity.as_str(),
        f.id,
        md(&f.message)
    );
    if let Some(hint) = &f.hint {
        let _ = writeln!(out, "  - hint: {}", md(hint));
    }
    if !f.evidence.is_empty() {
        let _ = writeln!(out, "  <details><summary>evidence</summary>\n\n  ```");
        for e in &f.evidence {
            let _ = writeln!(out, "  {}", evidence_line(e).replace("```", "'''"));
        }
        let _ = writeln!(out, "  ```\n  </details>");
    }
}
