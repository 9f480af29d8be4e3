//! `summary.md`: the verdict, runs, transport and curves as GitHub-flavoured Markdown, small
//! enough for a CI step summary (GitHub allows 1 MiB per step; we stop well before).

use super::summary::{Block, blocks};
use super::{Document, Exporter};
use crate::error::Result;

/// Markdown summaries stay below this many bytes.
pub const MAX_MARKDOWN_BYTES: usize = 900 * 1024;

/// `images`: link the PNG plots that `netcheck report` writes beside the summary.
pub struct Markdown {
    pub images: bool,
}

impl Exporter for Markdown {
    fn file_name(&self) -> String {
        "summary.md".into()
    }

    fn render(&self, doc: &Document) -> Result<Vec<u8>> {
        let mut out = String::new();
        for block in blocks(doc, self.images) {
            let text = render_block(&block);
            if out.len() + text.len() > MAX_MARKDOWN_BYTES {
                out += "\n_The summary stops here to stay under the CI step-summary limit; \
                        report.json and report.html have everything._\n";
                break;
            }
            out += &text;
        }
        Ok(out.into_bytes())
    }
}

fn render_block(block: &Block) -> String {
    match block {
        Block::Heading(level, text) => {
            format!("{} {}\n\n", "#".repeat(*level as usize), escape(text))
        }
        Block::Paragraph(text) => format!("{text}\n\n"),
        Block::List(items) => {
            let mut s: String = items.iter().map(|i| format!("- {}\n", escape(i))).collect();
            s.push('\n');
            s
        }
        Block::Table(t) => {
            let row = |cells: &[String]| {
                let cells: Vec<String> = cells.iter().map(|c| escape(c)).collect();
                format!("| {} |\n", cells.join(" | "))
            };
            let mut s = row(&t.headers);
            s += &format!("|{}\n", "---|".repeat(t.headers.len()));
            for r in &t.rows {
                s += &row(r);
            }
            s.push('\n');
            s
        }
        Block::Image(kind) => format!("![{}]({}.png)\n\n", kind.stem(), kind.stem()),
    }
}

/// Keeps table cells intact: pipes and newlines would break the row.
fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Run;
    use crate::results::{ResultRow, RunRecord, TimeStats};

    #[test]
    fn huge_inputs_stay_under_the_step_summary_limit() {
        // 1500 dtypes × 2 placements × 30 sizes: ~1.8 MB of tables uncut (synthetic rows).
        let mut record = RunRecord::new("run");
        for t in 0..1500 {
            for in_place in [false, true] {
                for s in 0..30u64 {
                    record.rows.push(ResultRow {
                        op: "all_gather".into(),
                        dtype: format!("type{t}"),
                        bytes: 1024 << s,
                        count: 1,
                        in_place,
                        redop: None,
                        iters: None,
                        time_us: TimeStats {
                            mean: 10.0 + s as f64,
                            ..Default::default()
                        },
                        algbw_gbs: Some(1.0),
                        busbw_gbs: Some(0.5 + s as f64),
                        wrong: Some(0),
                        group: None,
                    });
                }
            }
        }
        let doc = Document::new(vec![Run::new(record, "big.json")]);
        let md = String::from_utf8(Markdown { images: false }.render(&doc).unwrap()).unwrap();
        assert!(md.len() <= MAX_MARKDOWN_BYTES + 200, "{}", md.len());
        assert!(
            md.len() > MAX_MARKDOWN_BYTES / 2,
            "the cap, not a small input, cut it"
        );
        assert!(
            md.trim_end()
                .ends_with("report.json and report.html have everything._"),
            "{}",
            &md[md.len() - 300..]
        );
    }
}
