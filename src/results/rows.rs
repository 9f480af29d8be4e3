//! The rows of a record as report and gate both read them: every row once with its pair or
//! group, and the median that folds pairs into one value.

use super::{ResultRow, RunRecord};

/// Every row of a record once, with its pair or group. `launch` may copy each pair's rows to
/// the top level tagged with the pair's name; a pair's own rows count only when the top level
/// does not carry them already.
pub fn grouped_rows(record: &RunRecord) -> Vec<(Option<&str>, &ResultRow)> {
    let copied: std::collections::BTreeSet<&str> = record
        .rows
        .iter()
        .filter_map(|r| r.group.as_deref())
        .collect();
    let own = record.rows.iter().map(|r| (r.group.as_deref(), r));
    let pairs = record
        .pairs
        .iter()
        .filter(|p| !copied.contains(p.name.as_str()))
        .flat_map(|p| p.rows.iter().map(move |r| (Some(p.name.as_str()), r)));
    own.chain(pairs).collect()
}

/// Every row of a record once (see [`grouped_rows`]).
pub fn all_rows(record: &RunRecord) -> impl Iterator<Item = &ResultRow> {
    grouped_rows(record).into_iter().map(|(_, r)| r)
}

/// The median; `None` for no values.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::results::{PairResult, TimeStats};

    #[test]
    fn medians() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    #[test]
    fn rows_copied_to_the_top_level_count_once() {
        let mut r = pairs_record();
        assert_eq!(grouped_rows(&r).len(), 2, "rows only in the pairs");
        r.rows = r.pairs.iter().flat_map(|p| p.rows.clone()).collect();
        assert_eq!(
            grouped_rows(&r).len(),
            2,
            "rows copied to the top level (launch)"
        );
    }

    /// A `launch` record of two pairs, `a+b` and `c+d`, one all_gather row each, kept in the
    /// pairs only (`launch` may also copy them to the top level, tagged with the pair).
    pub(crate) fn pairs_record() -> RunRecord {
        let row = |group: Option<&str>| ResultRow {
            op: "all_gather".into(),
            dtype: "float32".into(),
            bytes: 1 << 30,
            count: 1,
            in_place: false,
            redop: None,
            iters: None,
            time_us: TimeStats::default(),
            algbw_gbs: None,
            busbw_gbs: Some(100.0),
            wrong: Some(0),
            group: group.map(str::to_string),
        };
        let pair = |name: &str| PairResult {
            name: name.into(),
            nodes: name.split('+').map(str::to_string).collect(),
            status: "pass".into(),
            message: None,
            rows: vec![row(Some(name))],
            analysis: None,
        };
        let mut r = RunRecord::new("launch");
        r.pairs = vec![pair("a+b"), pair("c+d")];
        r
    }
}
