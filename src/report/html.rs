//! `report.html`: one self-contained file (plots as PNG data URIs, no external CSS or
//! scripts) with the summary plus the details a support case needs: hosts, ranks, NCCL
//! environment and log evidence.

use base64::Engine;

use super::plot::png;
use super::summary::{Block, Table, blocks};
use super::{Document, Exporter, Run};
use crate::error::Result;

pub struct Html;

const STYLE: &str = "body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:2em auto;\
max-width:1300px;padding:0 1em;color:#222}table{border-collapse:collapse;margin:0.5em 0 1.5em}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;font-size:14px}\
td:first-child,th:first-child{text-align:left}th{background:#f3f3f3}img{max-width:100%;\
border:1px solid #eee;margin:0.5em 0}code,pre{background:#f6f6f6;font-size:13px}\
pre{padding:0.5em;overflow-x:auto}details{margin:0.3em 0 1em}";

impl Exporter for Html {
    fn file_name(&self) -> String {
        "report.html".into()
    }

    fn render(&self, doc: &Document) -> Result<Vec<u8>> {
        let mut out =
            String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
        out += "<title>netcheck report</title><style>";
        out += STYLE;
        out += "</style></head><body>\n";
        for block in blocks(doc, true) {
            out += &render_block(doc, &block)?;
        }
        out += "<h2>Details</h2>\n";
        for run in doc.runs.iter().chain(doc.baseline.iter()) {
            out += &details(run);
        }
        out += &format!(
            "<p><small>netcheck {} · generated {}</small></p>\n</body></html>\n",
            env!("CARGO_PKG_VERSION"),
            crate::results::now_rfc3339()
        );
        Ok(out.into_bytes())
    }
}

fn render_block(doc: &Document, block: &Block) -> Result<String> {
    Ok(match block {
        Block::Heading(level, text) => format!("<h{level}>{}</h{level}>\n", esc(text)),
        Block::Paragraph(text) => format!("<p>{}</p>\n", inline(text)),
        Block::List(items) => {
            let items: String = items
                .iter()
                .map(|i| format!("<li>{}</li>", esc(i)))
                .collect();
            format!("<ul>{items}</ul>\n")
        }
        Block::Table(t) => table(t),
        Block::Image(kind) => {
            let data = base64::engine::general_purpose::STANDARD.encode(png(doc, kind)?);
            format!(
                "<figure><img alt=\"{}\" src=\"data:image/png;base64,{data}\"></figure>\n",
                esc(&kind.title(doc))
            )
        }
    })
}

fn table(t: &Table) -> String {
    let mut s = String::from("<table><tr>");
    for h in &t.headers {
        s += &format!("<th>{}</th>", esc(h));
    }
    s += "</tr>\n";
    for row in &t.rows {
        s += "<tr>";
        for cell in row {
            s += &format!("<td>{}</td>", inline(cell));
        }
        s += "</tr>\n";
    }
    s + "</table>\n"
}

/// Per run: hosts, ranks, environment, findings with their evidence lines.
fn details(run: &Run) -> String {
    let r = &run.record;
    let mut s = format!(
        "<details><summary>{} ({})</summary>\n",
        esc(&run.label),
        esc(&run.origin)
    );
    s += "<h4>Hosts</h4><ul>";
    for h in &r.hosts {
        let gpus: Vec<String> = h
            .gpus
            .iter()
            .map(|g| format!("{} {}", g.index, g.name))
            .collect();
        s += &format!("<li>{}: {}</li>", esc(&h.hostname), esc(&gpus.join(", ")));
    }
    s += "</ul>";
    if let Some(n) = &r.nccl {
        s += &format!(
            "<p>NCCL {} {}</p>",
            esc(&n.version),
            esc(n.library_path.as_deref().unwrap_or(""))
        );
    }
    if !r.environment.is_empty() {
        let env: Vec<String> = r
            .environment
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        s += &format!("<h4>Environment</h4><pre>{}</pre>", esc(&env.join("\n")));
    }
    let analyses = r.analysis.iter().map(|a| ("run".to_string(), a)).chain(
        r.pairs
            .iter()
            .filter_map(|p| p.analysis.as_ref().map(|a| (p.name.clone(), a))),
    );
    for (name, a) in analyses {
        for f in &a.findings {
            s += &format!(
                "<h4>{} · {:?} · {}</h4><p>{}</p>",
                esc(&name),
                f.severity,
                esc(&f.id),
                esc(&f.message)
            );
            if let Some(h) = &f.hint {
                s += &format!("<p>hint: {}</p>", esc(h));
            }
            let evidence: Vec<String> = f
                .evidence
                .iter()
                .map(|e| format!("{}:{}: {}", e.source, e.line, e.text))
                .collect();
            if !evidence.is_empty() {
                s += &format!("<pre>{}</pre>", esc(&evidence.join("\n")));
            }
        }
    }
    s += &raw_record(run);
    s + "</details>\n"
}

/// The results file itself, so the bundle carries the data behind every number (skipped
/// above a size that would make the page unwieldy; the file is beside it then).
fn raw_record(run: &Run) -> String {
    const MAX_EMBEDDED_BYTES: usize = 4 << 20;
    let json = serde_json::to_string(&run.record).expect("RunRecord serializes");
    if json.len() > MAX_EMBEDDED_BYTES {
        return format!(
            "<p>results JSON not embedded ({} MB); see {}</p>",
            json.len() >> 20,
            esc(&run.origin)
        );
    }
    format!(
        "<h4>Results JSON</h4><pre class=\"results\">{}</pre>",
        esc(&json)
    )
}

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Escapes, then turns the Markdown `**bold**` used in summary text into `<b>`.
fn inline(text: &str) -> String {
    let escaped = esc(text);
    let mut out = String::new();
    for (i, part) in escaped.split("**").enumerate() {
        if i % 2 == 1 {
            out += &format!("<b>{part}</b>");
        } else {
            out += part;
        }
    }
    out
}
