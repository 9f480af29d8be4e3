//! The human table printed while `run` measures, in nccl-tests' layout (same columns, same
//! names, out-of-place and in-place side by side), so users can read it like nccl-tests output.

use crate::results::ResultRow;

/// Turns rows, as they arrive, into table lines. Pure: the caller prints.
#[derive(Default)]
pub struct TablePrinter {
    current_op: Option<(String, String)>,
    /// An out-of-place row waiting for its in-place twin.
    pending: Option<ResultRow>,
    /// Whether each size gets an in-place row (from the sweep settings).
    pub expect_in_place: bool,
    pub expect_out_of_place: bool,
    /// Rows arrive before their check (it runs after the timed sweep): `#wrong` says "later"
    /// instead of nccl-tests' "N/A" for a check that is off.
    pub check_later: bool,
}

pub const HEADER: [&str; 3] = [
    "#                                                              out-of-place                       in-place          ",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
];

impl TablePrinter {
    pub fn new(out_of_place: bool, in_place: bool, check_later: bool) -> TablePrinter {
        TablePrinter {
            expect_in_place: in_place,
            expect_out_of_place: out_of_place,
            check_later,
            ..Default::default()
        }
    }

    /// Lines to print now that `row` finished.
    pub fn push(&mut self, row: ResultRow) -> Vec<String> {
        let mut lines = vec![];
        let key = (row.op.clone(), row.dtype.clone());
        if self.current_op.as_ref() != Some(&key) {
            lines.extend(self.flush());
            lines.push(format!("# Collective: {}  ({})", row.op, row.dtype));
            lines.extend(HEADER.iter().map(|s| s.trim_end().to_string()));
            self.current_op = Some(key);
        }
        match (row.in_place, self.pending.take()) {
            (false, previous) => {
                if let Some(p) = previous {
                    lines.push(self.line(Some(&p), None));
                }
                if self.expect_in_place {
                    self.pending = Some(row);
                } else {
                    lines.push(self.line(Some(&row), None));
                }
            }
            (true, Some(oop)) if oop.bytes == row.bytes => {
                lines.push(self.line(Some(&oop), Some(&row)))
            }
            (true, previous) => {
                if let Some(p) = previous {
                    lines.push(self.line(Some(&p), None));
                }
                lines.push(self.line(None, Some(&row)));
            }
        }
        lines
    }

    /// Lines still held back (an out-of-place row whose in-place twin never came).
    pub fn flush(&mut self) -> Vec<String> {
        self.pending
            .take()
            .map(|p| vec![self.line(Some(&p), None)])
            .unwrap_or_default()
    }
}

impl TablePrinter {
    fn line(&self, oop: Option<&ResultRow>, ip: Option<&ResultRow>) -> String {
        line(oop, ip, if self.check_later { "later" } else { "N/A" })
    }
}

fn line(oop: Option<&ResultRow>, ip: Option<&ResultRow>, unchecked: &str) -> String {
    let any = oop.or(ip).expect("one of the two");
    let redop = any.redop.as_deref().unwrap_or("none");
    let mut s = format!(
        "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}",
        any.bytes,
        any.count,
        crate::engine::dtype::DType::parse(&any.dtype)
            .map(|d| d.name())
            .unwrap_or(&any.dtype),
        redop,
        -1
    );
    for r in [oop, ip] {
        match r {
            Some(r) => s.push_str(&format!(
                "  {:>7}  {:>6}  {:>6}  {:>5}",
                time(r.time_us.mean),
                bw(r.algbw_gbs),
                bw(r.busbw_gbs),
                r.wrong
                    .map(|w| w.to_string())
                    .unwrap_or_else(|| unchecked.into())
            )),
            None => s.push_str(&format!("  {:>7}  {:>6}  {:>6}  {:>5}", "-", "-", "-", "-")),
        }
    }
    s
}

fn time(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{us:.0}")
    } else {
        format!("{us:.2}")
    }
}

fn bw(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "N/A".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(bytes: u64, in_place: bool, mean: f64) -> ResultRow {
        ResultRow {
            busbw_gbs: crate::results::gbs(bytes, mean).map(|a| a / 2.0),
            ..ResultRow::for_test("all_gather", bytes, in_place, mean)
        }
    }

    #[test]
    fn pairs_out_of_place_and_in_place_on_one_line() {
        let mut t = TablePrinter::new(true, true, false);
        let first = t.push(row(1024, false, 14.5));
        assert!(first[0].starts_with("# Collective: all_gather"));
        assert_eq!(
            first.len(),
            4,
            "title + 3 header lines, the row waits for its twin"
        );
        let lines = t.push(row(1024, true, 14.0));
        assert_eq!(lines.len(), 1);
        let cols: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(
            cols,
            [
                "1024", "128", "float", "none", "-1", "14.50", "0.07", "0.04", "0", "14.00",
                "0.07", "0.04", "0"
            ]
        );
    }

    #[test]
    fn a_missing_twin_is_flushed() {
        let mut t = TablePrinter::new(true, true, false);
        t.push(row(1024, false, 14.5));
        let lines = t.push(row(2048, false, 15.0));
        assert!(lines[0].contains("14.50") && lines[0].ends_with("-"));
        assert_eq!(t.flush().len(), 1);
    }

    #[test]
    fn an_unchecked_row_says_whether_its_check_comes_later() {
        let unchecked = |r: ResultRow| ResultRow { wrong: None, ..r };
        for (later, word) in [(true, "later"), (false, "N/A")] {
            let mut t = TablePrinter::new(true, false, later);
            let lines = t.push(unchecked(row(1024, false, 14.5)));
            let last = lines.last().unwrap();
            assert!(last.contains(&format!("0.04  {word:>5}")), "{last}");
        }
    }
}
