//! Renderings of an `Analysis`: a short text summary for terminals, Markdown for PR comments
//! and CI step summaries, and JSON (the `Analysis` itself, pretty-printed by serde).

use std::fmt::Write;
use std::io;

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
        // The evidence kinds in brackets, when any decided (a `why` such as "no NCCL line
        // shows the node count" has none, and `[]` would read as a glitch).
        let _ = if a.basis.is_empty() {
            writeln!(out, "why: {}", a.why)
        } else {
            writeln!(out, "why: {} [{}]", a.why, a.basis.join(", "))
        };
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
        let _ = if a.basis.is_empty() {
            writeln!(out, "| why | {} |", md(&a.why))
        } else {
            writeln!(out, "| why | {} (`{}`) |", md(&a.why), a.basis.join("`, `"))
        };
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

/// Writes `a` as pretty JSON and a newline: byte for byte what `serde_json::to_writer_pretty`
/// writes. A large job's per-rank rows are most of it (10 MB for 5 600 ranks), so with more
/// than `halves::PARALLEL_ITEMS` of them the last two fifths are serialized on another thread
/// while this one writes the rest. (The rows are taken out of `a` meanwhile and put back.)
pub fn json(out: &mut dyn io::Write, a: &mut Analysis) -> io::Result<()> {
    let rows = std::mem::take(&mut a.per_rank);
    let written = json_with_rows(out, a, &rows);
    a.per_rank = rows;
    written
}

fn json_with_rows(out: &mut dyn io::Write, a: &Analysis, rows: &[RankSummary]) -> io::Result<()> {
    let head = serde_json::to_vec_pretty(a)?;
    // The rows go where the empty list is: the top-level key, the only one indented by two
    // spaces (JSON strings hold no raw newline).
    const EMPTY: &[u8] = b"\n  \"per_rank\": []";
    let at = memchr::memmem::find(&head, EMPTY).ok_or_else(|| io::Error::other("per_rank key"))?;
    let (before, after) = (&head[..at + EMPTY.len() - 2], &head[at + EMPTY.len()..]);
    out.write_all(before)?;
    if rows.is_empty() {
        out.write_all(b"[]")?;
    } else {
        out.write_all(b"[")?;
        // This thread writes straight out; the other one into new memory, which costs
        // more per row (page faults): it gets the smaller share.
        let split = if super::halves::worth_it(rows.len()) {
            rows.len() * 3 / 5
        } else {
            rows.len()
        };
        let (first, second) = rows.split_at(split);
        std::thread::scope(|scope| {
            let second = (!second.is_empty()).then(|| {
                scope.spawn(|| {
                    let mut buf = Vec::new();
                    json_rows(&mut buf, second, false).map(|_| buf)
                })
            });
            json_rows(out, first, true)?;
            if let Some(second) = second {
                let buf = super::halves::join(second)?;
                out.write_all(&buf)?;
            }
            io::Result::Ok(())
        })?;
        out.write_all(b"\n  ]")?;
    }
    out.write_all(after)?;
    out.write_all(b"\n")
}

/// Rows as elements of the top-level `per_rank` list: each on a new line, indented two
/// levels, separated by commas (`first`: no comma before the first one).
fn json_rows(out: &mut dyn io::Write, rows: &[RankSummary], first: bool) -> io::Result<()> {
    let mut row_json = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        out.write_all(if first && i == 0 {
            b"\n    "
        } else {
            b",\n    "
        })?;
        row_json.clear();
        serde_json::to_writer_pretty(&mut row_json, row)?;
        let mut rest = &row_json[..];
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            out.write_all(&rest[..=nl])?;
            out.write_all(b"    ")?;
            rest = &rest[nl + 1..];
        }
        out.write_all(rest)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logscan::halves::PARALLEL_ITEMS;
    use crate::logscan::{Options, analyze_reader};

    fn json_of(a: &mut Analysis) -> String {
        let mut out = Vec::new();
        json(&mut out, a).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn json_is_what_serde_writes_with_any_number_of_rows() {
        let log = "h-0:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n\
                   h-1:2:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/Socket/0\n";
        let mut a = analyze_reader(log.as_bytes(), "t", &Options::default()).unwrap();
        let row = a.per_rank[0].clone();
        for rows in [0, 1, 2, PARALLEL_ITEMS + 1, 2 * PARALLEL_ITEMS + 7] {
            a.per_rank = (0..rows)
                .map(|i| RankSummary {
                    rank: Some(i as u32),
                    // Escapes and non-ASCII inside rows, where indentation is added.
                    host: Some(format!("h\n\"{i}\"\u{e9}")),
                    ..row.clone()
                })
                .collect();
            let expected = serde_json::to_string_pretty(&a).unwrap() + "\n";
            assert_eq!(json_of(&mut a), expected, "{rows} rows");
            assert_eq!(a.per_rank.len(), rows, "the rows are put back");
        }
    }
}
