//! Report rendering speed: `cargo bench --bench report_speed`.
//!
//! Target (issue 4): a report over 1 000 result rows and a 64-node heatmap renders in < 2 s.
//! The inputs are SYNTHETIC (generated here, never measured): one run with 1 000 rows
//! (10 dtypes × 2 ops × 2 placements × 25 sizes), and a `launch` ring over 64 nodes (every one
//! of the 2 016 pairs, 16 rows each: 32 256 rows). Each case renders every exporter of
//! `netcheck report` (PNG + SVG plots, Markdown, HTML with the PNGs inline, JSON) into a
//! temporary folder, five times; the median and the slowest are printed.
//! Results are recorded in docs/report.md.

use std::time::{Duration, Instant};

use netcheck::report::{self, Document, Run};
use netcheck::results::{PairResult, ResultRow, RunRecord, TimeStats};

fn row(op: &str, dtype: &str, bytes: u64, in_place: bool, peak: f64) -> ResultRow {
    let t = 15.0 + bytes as f64 / (peak * 1e3);
    let alg = bytes as f64 / t / 1e3;
    ResultRow {
        op: op.into(),
        dtype: dtype.into(),
        bytes,
        count: bytes / 8,
        in_place,
        redop: None,
        iters: Some(20),
        time_us: TimeStats {
            mean: t,
            min: Some(t * 0.95),
            p50: Some(t),
            p99: Some(t * 1.3),
            max: Some(t * 1.6),
        },
        algbw_gbs: Some(alg),
        busbw_gbs: Some(alg / 2.0),
        wrong: Some(0),
        group: None,
    }
}

fn thousand_rows() -> RunRecord {
    let mut r = RunRecord::new("run");
    r.label = Some("synthetic: 1000 rows".into());
    let dtypes = [
        "float32", "float16", "bfloat16", "float64", "int8", "uint8", "int32", "uint32", "int64",
        "uint64",
    ];
    for (i, dtype) in dtypes.iter().enumerate() {
        for op in ["all_gather", "reduce_scatter"] {
            for in_place in [false, true] {
                for s in 6..31 {
                    r.rows
                        .push(row(op, dtype, 1 << s, in_place, 500.0 - 10.0 * i as f64));
                }
            }
        }
    }
    assert_eq!(r.rows.len(), 1000);
    r
}

fn ring_over_64_nodes() -> RunRecord {
    let mut r = RunRecord::new("launch");
    r.label = Some("synthetic: 64-node ring".into());
    let nodes: Vec<String> = (0..64)
        .map(|i| format!("ip-10-0-{}-{}.ec2.internal", i / 16, i))
        .collect();
    for i in 0..64 {
        for j in i + 1..64 {
            let peak = if i == 17 || j == 17 { 150.0 } else { 400.0 };
            let rows = ["all_gather", "reduce_scatter"]
                .iter()
                .flat_map(|op| {
                    [false, true].into_iter().flat_map(move |ip| {
                        (0..4).map(move |k| row(op, "float32", 1 << (24 + 2 * k), ip, peak))
                    })
                })
                .collect();
            r.pairs.push(PairResult {
                name: format!("{}+{}", nodes[i], nodes[j]),
                nodes: vec![nodes[i].clone(), nodes[j].clone()],
                status: "pass".into(),
                message: None,
                rows,
                analysis: None,
            });
        }
    }
    r
}

fn time(name: &str, record: RunRecord) {
    let rows: usize = record.rows.len() + record.pairs.iter().map(|p| p.rows.len()).sum::<usize>();
    let mut samples: Vec<Duration> = Vec::new();
    let mut files = 0;
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let start = Instant::now();
        let doc = Document::new(vec![Run::new(record.clone(), "bench.json")]);
        let exporters = report::report_exporters(&doc);
        files = report::write_all(&doc, &exporters, dir.path())
            .unwrap()
            .len();
        samples.push(start.elapsed());
    }
    samples.sort();
    println!(
        "{name}: {rows} rows, {files} files: median {:.3} s, slowest {:.3} s",
        samples[2].as_secs_f64(),
        samples[4].as_secs_f64()
    );
}

fn main() {
    time("1000 rows", thousand_rows());
    time("64-node ring heatmap", ring_over_64_nodes());
}
