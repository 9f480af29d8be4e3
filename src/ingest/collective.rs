//! Which collective a table measured, when the output does not print its name (nccl-tests
//! before 2.17 has no `Collective test starting` line), the way someone who knows nccl-tests
//! reads it:
//!
//! - the columns: since 2.13 every table has `redop` and `root`; `redop` is `none` for the
//!   data-movement collectives, `root` is -1 for unrooted ones. Before 2.13 a column was
//!   printed only when the test had it (all_gather: neither; all_reduce and reduce_scatter:
//!   `redop`; broadcast: `root`; reduce: both);
//! - `count` is per rank for all_gather, reduce_scatter, alltoall, gather, scatter and
//!   hypercube (size = count · type size · ranks) and the whole buffer for the others;
//! - busbw/algbw is 2(n−1)/n for all_reduce, (n−1)/n for all_gather, reduce_scatter,
//!   alltoall, gather and scatter, 1 for broadcast, reduce, sendrecv and hypercube (old
//!   all_gather builds put (n−1)/n into algbw instead, so busbw = algbw);
//! - alltoall and sendrecv never check the in-place result: `#wrong` is `N/A` there while the
//!   out-of-place column has numbers.
//!
//! Names the output gives (the `Collective test starting` line, the binary on a command line,
//! a failure's source file, the file name) decide when the table allows them; prose that
//! names one of the remaining candidates breaks a tie. What is still ambiguous is ingested
//! as the most common candidate, with every candidate and a warning in the record.

#[cfg(test)]
use super::Point;
use super::{Section, lines};

/// How a collective shows in the table.
struct Signature {
    op: &'static str,
    /// `redop` cell: `Some(true)` a reduction operator, `Some(false)` `none`, `None` empty.
    reduces: Option<bool>,
    rooted: bool,
    per_rank_count: bool,
    bus: Bus,
    /// In-place results are checked (`#wrong` has numbers when validation is on).
    checks_in_place: bool,
    /// Columns before 2.13: (`redop`, `root`).
    old_columns: (bool, bool),
}

#[derive(Clone, Copy, PartialEq)]
enum Bus {
    /// 2(n−1)/n
    AllReduce,
    /// (n−1)/n
    Ring,
    /// 1
    One,
    /// 1, with algbw over (n−1)/n of the size
    HyperCube,
}

/// Most commonly run first: the order ties are broken in. The columns: op, `reduces`,
/// `rooted`, `per_rank_count`, `bus`, `checks_in_place`, `old_columns`.
#[rustfmt::skip]
const SIGNATURES: &[Signature] = &[
    sig("all_reduce",     Some(true),  false, false, Bus::AllReduce, true,  (true, false)),
    sig("all_gather",     Some(false), false, true,  Bus::Ring,      true,  (false, false)),
    sig("reduce_scatter", Some(true),  false, true,  Bus::Ring,      true,  (true, false)),
    sig("alltoall",       Some(false), false, true,  Bus::Ring,      false, (false, false)),
    sig("broadcast",      Some(false), true,  false, Bus::One,       true,  (false, true)),
    sig("reduce",         Some(true),  true,  false, Bus::One,       true,  (true, true)),
    sig("sendrecv",       Some(true),  false, false, Bus::One,       false, (false, false)),
    sig("gather",         Some(false), true,  true,  Bus::Ring,      true,  (false, true)),
    sig("scatter",        Some(false), true,  true,  Bus::Ring,      true,  (false, true)),
    sig("hypercube",      None,        false, true,  Bus::HyperCube, true,  (false, false)),
];

const fn sig(
    op: &'static str,
    reduces: Option<bool>,
    rooted: bool,
    per_rank_count: bool,
    bus: Bus,
    checks_in_place: bool,
    old_columns: (bool, bool),
) -> Signature {
    Signature {
        op,
        reduces,
        rooted,
        per_rank_count,
        bus,
        checks_in_place,
        old_columns,
    }
}

/// The table's columns, as far as they tell the collective.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Layout {
    pub has_redop: bool,
    pub has_root: bool,
    /// The 2018 layout (`bytes N type op time algbw busbw res`): columns say nothing.
    pub v1: bool,
}

/// Where a collective's name came from, strongest first.
#[derive(Debug, Clone, Default)]
pub struct Hints {
    /// `Collective test starting: X` or the JSON's `args[0]`, with that basis.
    pub explicit: Option<(String, &'static str)>,
    pub command: Option<String>,
    pub failure: Option<String>,
    /// Collectives named in the prose around the run.
    pub mentions: Vec<String>,
}

/// What was decided for one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decision {
    pub op: Option<String>,
    pub basis: Vec<String>,
    /// Every collective the table allows, when more than one.
    pub candidates: Vec<String>,
    /// The rank count the table implies for the decided collective, else the device list's
    /// or the command line's, and which of them it is.
    pub ranks: Option<u32>,
    pub ranks_basis: Option<&'static str>,
    pub warnings: Vec<String>,
}

/// Facts of the table that tell collectives apart.
#[derive(Debug, Default)]
struct Facts {
    layout: Layout,
    has_table: bool,
    /// A `redop` cell: `Some(Some(true))` an operator, `Some(Some(false))` `none`,
    /// `Some(None)` empty (hypercube).
    reduces: Option<Option<bool>>,
    root: Option<i64>,
    /// size / (count · type size) at the largest size with a count.
    count_ratio: Option<u64>,
    /// (algbw, busbw, algbw·time/size) at the fastest point.
    bandwidth: Option<(f64, f64, f64)>,
    /// `Some(true)`: in-place `#wrong` is `N/A` while out-of-place has numbers.
    in_place_unchecked: Option<bool>,
    /// At least this many ranks (highest listed rank + 1), when the list is one job's.
    min_ranks: Option<u32>,
    /// The device list repeats rank numbers: independent single-rank jobs.
    independent_jobs: bool,
    /// The ranks the command line started, when nothing better says.
    command_ranks: Option<u32>,
}

/// Decides the collective of one parsed run. `forced` is `--op`; `file_hint` the collective
/// the file name names.
pub fn decide(section: &Section, file_hint: Option<&str>, forced: Option<&str>) -> Decision {
    let facts = facts(section);
    let consistent: Vec<(&Signature, Ranks)> = SIGNATURES
        .iter()
        .filter_map(|s| check(s, &facts).ok().map(|n| (s, n)))
        .collect();
    let allowed = |op: &str| !facts.has_table || consistent.iter().any(|(s, _)| s.op == op);
    let ranks_for = |op: &str| {
        consistent
            .iter()
            .find(|(s, _)| s.op == op)
            .and_then(|(_, n)| *n)
    };
    let set_ranks = |d: &mut Decision, n: Ranks| {
        d.ranks = n.map(|(n, _)| n);
        d.ranks_basis = n.map(|(_, basis)| basis);
    };
    let mut d = Decision::default();
    if facts.independent_jobs {
        d.warnings.push(
            "the device list repeats rank numbers: several independent single-rank jobs \
             printed together (an nccl-tests build without MPI started by mpirun?)"
                .into(),
        );
    }
    if consistent.len() > 1 {
        d.candidates = consistent.iter().map(|(s, _)| s.op.to_string()).collect();
    }
    let hints = &section.hints;
    let named: Vec<(String, &'static str)> = [
        forced.map(|op| (op.to_string(), "--op")),
        hints.explicit.clone(),
        hints.command.clone().map(|op| (op, "command-line")),
        hints.failure.clone().map(|op| (op, "failure-location")),
        file_hint.map(|op| (op.to_string(), "file-name")),
    ]
    .into_iter()
    .flatten()
    .collect();
    for (op, basis) in &named {
        let trusted = matches!(*basis, "--op" | "collective-line" | "json-args");
        if allowed(op) || trusted {
            if !allowed(op) {
                d.warnings.push(format!(
                    "the table does not look like {op} ({}); kept {op} from the {basis}",
                    describe(&facts)
                ));
            }
            d.op = Some(op.clone());
            d.basis.push(basis.to_string());
            if facts.has_table && allowed(op) {
                d.basis.push("table".into());
            }
            set_ranks(&mut d, ranks_for(op));
            d.candidates.clear();
            return d;
        }
        d.warnings.push(format!(
            "the {basis} names {op}, but the table rules it out ({}); ignored it",
            describe(&facts)
        ));
    }
    match consistent.as_slice() {
        [] if !facts.has_table => {}
        [] => d.warnings.push(format!(
            "the table fits no nccl-tests collective ({}); pass --op",
            describe(&facts)
        )),
        [(s, n)] => {
            d.op = Some(s.op.to_string());
            d.basis.push("table".into());
            set_ranks(&mut d, *n);
        }
        several => {
            let mentioned: Vec<&(&Signature, Ranks)> = several
                .iter()
                .filter(|(s, _)| hints.mentions.iter().any(|m| m == s.op))
                .collect();
            let (chosen, basis) = match mentioned.as_slice() {
                [one] => (*one, "text-mention"),
                _ => (&several[0], "table-ambiguous"),
            };
            d.op = Some(chosen.0.op.to_string());
            d.basis.extend(["table".to_string(), basis.to_string()]);
            set_ranks(&mut d, chosen.1);
            if basis == "table-ambiguous" {
                d.warnings.push(format!(
                    "the output does not say which collective it measured and the table fits {} \
                     alike; ingested as {} (pass --op to choose)",
                    d.candidates.join(", "),
                    chosen.0.op
                ));
            }
        }
    }
    d
}

/// Whether a collective fits the facts; `Ok(ranks)` with the rank count it implies.
/// A rank count and what gave it (`table`, `device-list`, `command-line`).
type Ranks = Option<(u32, &'static str)>;

fn check(s: &Signature, f: &Facts) -> Result<Ranks, ()> {
    if !f.has_table {
        return Err(());
    }
    let l = f.layout;
    if !l.v1 {
        if l.has_redop && l.has_root {
            if let Some(reduces) = f.reduces
                && reduces != s.reduces
            {
                return Err(());
            }
            if let Some(root) = f.root
                && (root >= 0) != s.rooted
            {
                return Err(());
            }
        } else if (l.has_redop, l.has_root) != s.old_columns {
            return Err(());
        }
    } else if f.reduces == Some(Some(true)) && s.reduces != Some(true) {
        return Err(());
    }
    if let Some(unchecked) = f.in_place_unchecked
        && unchecked == s.checks_in_place
    {
        return Err(());
    }
    // Ranks from the count column: exact for per-rank counts, none for whole-buffer ones.
    let mut ranks: Option<u32> = None;
    if let Some(k) = f.count_ratio {
        if s.per_rank_count {
            ranks = u32::try_from(k).ok();
        } else if k != 1 {
            return Err(());
        }
    }
    if let Some((alg, bus, time_ratio)) = f.bandwidth {
        let close = |a: f64, b: f64| (a - b).abs() <= 0.015 + 0.006 * a.abs().max(b.abs());
        let ring = |n: f64| (n - 1.0) / n;
        match (s.bus, ranks) {
            (Bus::AllReduce, Some(n)) => {
                if !close(bus, alg * 2.0 * ring(n as f64)) {
                    return Err(());
                }
            }
            (Bus::AllReduce, None) => {
                let r = bus / alg;
                if !(-0.01..1.999).contains(&r) {
                    return Err(());
                }
                let n = 2.0 / (2.0 - r);
                let preferred = f
                    .min_ranks
                    .filter(|&m| close(bus, alg * 2.0 * ring(m as f64)));
                ranks = preferred.or(Some(n.round().max(1.0) as u32));
                if !close(bus, alg * 2.0 * ring(ranks.unwrap_or(1) as f64)) {
                    return Err(());
                }
            }
            (Bus::Ring, n) => {
                let fits = |n: f64| close(bus, alg * ring(n));
                // Before 2020 all_gather printed busbw = algbw with (n−1)/n folded into algbw.
                let old_style = |n: f64| close(bus, alg) && close(time_ratio, ring(n));
                match n {
                    Some(n) => {
                        if !(fits(n as f64) || is_old(l) && old_style(n as f64)) {
                            return Err(());
                        }
                    }
                    None if is_old(l) && close(bus, alg) && time_ratio < 0.999 => {
                        ranks = Some((1.0 / (1.0 - time_ratio)).round().max(1.0) as u32);
                    }
                    None => {
                        let r = bus / alg;
                        if !(-0.01..0.999).contains(&r) {
                            return Err(());
                        }
                        ranks = Some((1.0 / (1.0 - r)).round().max(1.0) as u32);
                    }
                }
            }
            (Bus::One, _) => {
                if !close(bus, alg) {
                    return Err(());
                }
            }
            (Bus::HyperCube, n) => {
                if !close(bus, alg) || n.is_some_and(|n| !close(time_ratio, ring(n as f64))) {
                    return Err(());
                }
            }
        }
    }
    if let (Some(n), Some(min)) = (ranks, f.min_ranks)
        && n < min
    {
        return Err(());
    }
    Ok(ranks
        .map(|n| (n, "table"))
        .or(f.min_ranks.map(|n| (n, "device-list")))
        .or(f.command_ranks.map(|n| (n, "command-line"))))
}

fn is_old(l: Layout) -> bool {
    l.v1 || !(l.has_redop && l.has_root)
}

fn facts(section: &Section) -> Facts {
    let points = &section.points;
    let mut f = Facts {
        layout: section.layout,
        has_table: !points.is_empty(),
        ..Default::default()
    };
    if let Some(p) = points.iter().find(|p| p.redop.is_some()) {
        let r = p.redop.as_deref().unwrap_or_default();
        f.reduces = Some(match r {
            "" => None,
            "none" => Some(false),
            _ => Some(true),
        });
    }
    f.root = points.iter().find_map(|p| p.root);
    f.count_ratio = points
        .iter()
        .filter(|p| p.count > 0 && p.bytes > 0)
        .max_by_key(|p| p.bytes)
        .and_then(|p| {
            let size = type_size(&p.dtype)?;
            let per = p.count * size;
            p.bytes.is_multiple_of(per).then(|| p.bytes / per)
        });
    f.bandwidth = points
        .iter()
        .filter_map(|p| {
            let m = p.out_of_place.as_ref().or(p.in_place.as_ref())?;
            let (alg, bus) = (m.algbw_gbs?, m.busbw_gbs?);
            (alg > 0.0 && m.time_us.mean > 0.0 && p.bytes > 0)
                .then(|| (alg, bus, alg * m.time_us.mean * 1e3 / p.bytes as f64))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let checked = |m: &Option<super::Measure>| m.as_ref().and_then(|m| m.checked);
    let oop_numbers = points
        .iter()
        .any(|p| checked(&p.out_of_place) == Some(true));
    let ip_numbers = points.iter().any(|p| checked(&p.in_place) == Some(true));
    let ip_na = points.iter().any(|p| checked(&p.in_place) == Some(false));
    if oop_numbers && (ip_numbers || ip_na) {
        f.in_place_unchecked = Some(ip_na && !ip_numbers);
    }
    let devices = &section.devices;
    let mut ranks: Vec<u32> = devices.iter().map(|d| d.rank).collect();
    ranks.sort_unstable();
    let before = ranks.len();
    ranks.dedup();
    f.independent_jobs = ranks.len() < before;
    f.min_ranks = if f.independent_jobs {
        Some(1)
    } else {
        let listed = ranks.last().map(|r| r + 1);
        // Every process drives nThread × nGpus ranks.
        listed.max(section.ranks_per_process.filter(|n| *n > 1))
    };
    f.command_ranks = section.command_ranks.filter(|_| !f.independent_jobs);
    f
}

/// Bytes per element of nccl-tests' type names (and netcheck's).
pub fn type_size(name: &str) -> Option<u64> {
    Some(match name {
        "int8" | "uint8" | "char" | "f8e4m3" | "f8e5m2" | "fp8_e4m3" | "fp8_e5m2" => 1,
        "half" | "float16" | "bfloat16" => 2,
        "float" | "float32" | "int32" | "uint32" | "int" => 4,
        "double" | "float64" | "int64" | "uint64" => 8,
        _ => return None,
    })
}

/// `redop sum, root -1, count per rank ×8, busbw/algbw 1.75` for messages.
fn describe(f: &Facts) -> String {
    let mut parts = Vec::new();
    match f.reduces {
        Some(Some(true)) => parts.push("a reduction operator".to_string()),
        Some(Some(false)) => parts.push("redop none".to_string()),
        Some(None) => parts.push("an empty redop".to_string()),
        None if !f.layout.has_redop => parts.push("no redop column".to_string()),
        None => {}
    }
    match f.root {
        Some(r) => parts.push(format!("root {r}")),
        None if !f.layout.has_root => parts.push("no root column".to_string()),
        None => {}
    }
    match f.count_ratio {
        Some(1) => parts.push("count = the whole buffer".into()),
        Some(k) => parts.push(format!("count = 1/{k} of the buffer")),
        None => {}
    }
    if let Some((alg, bus, _)) = f.bandwidth {
        parts.push(format!("busbw/algbw {:.3}", bus / alg));
    }
    if f.in_place_unchecked == Some(true) {
        parts.push("in-place unchecked".into());
    }
    parts.join(", ")
}

/// The collective a file name names, if exactly one.
pub fn from_file_name(origin: &str) -> Option<String> {
    let base = origin.rsplit(['/', '\\']).next().unwrap_or(origin);
    let mut found = lines::mentions(base);
    found.dedup();
    (found.len() == 1).then(|| found[0].to_string())
}

/// Test helper: a run with rows of one shape.
#[cfg(test)]
fn run(layout: Layout, rows: &[Point], ranks: u32) -> Section {
    Section {
        layout,
        points: rows.to_vec(),
        devices: (0..ranks)
            .map(|r| super::Device {
                rank: r,
                host: "h".into(),
                device: r,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::Measure;
    use crate::results::TimeStats;

    const MODERN: Layout = Layout {
        has_redop: true,
        has_root: true,
        v1: false,
    };

    /// A row at 1 GiB of float with the given redop, root, per-rank divisor and bandwidths.
    fn point(redop: &str, root: i64, per_rank: u64, alg: f64, bus: f64, ip: Option<u64>) -> Point {
        let bytes = 1u64 << 30;
        let m = |wrong: Option<u64>| Measure {
            time_us: TimeStats {
                mean: bytes as f64 / alg / 1e3,
                ..Default::default()
            },
            algbw_gbs: Some(alg),
            busbw_gbs: Some(bus),
            wrong,
            checked: Some(wrong.is_some()),
        };
        Point {
            bytes,
            count: bytes / 4 / per_rank,
            dtype: "float32".into(),
            redop: Some(redop.into()),
            root: Some(root),
            out_of_place: Some(m(Some(0))),
            in_place: Some(m(ip)),
        }
    }

    fn decided(section: &Section) -> (Option<String>, Vec<String>, Option<u32>) {
        let d = decide(section, None, None);
        (d.op, d.candidates, d.ranks)
    }

    #[test]
    fn all_reduce_and_reduce_scatter_by_count_and_ratio() {
        let ar = run(MODERN, &[point("sum", -1, 1, 100.0, 187.5, Some(0))], 0);
        assert_eq!(decided(&ar), (Some("all_reduce".into()), vec![], Some(16)));
        let rs = run(MODERN, &[point("sum", -1, 8, 100.0, 87.5, Some(0))], 8);
        assert_eq!(
            decided(&rs),
            (Some("reduce_scatter".into()), vec![], Some(8))
        );
    }

    #[test]
    fn unchecked_in_place_tells_alltoall_from_all_gather() {
        let a2a = run(MODERN, &[point("none", -1, 8, 100.0, 87.5, None)], 8);
        assert_eq!(decided(&a2a).0.as_deref(), Some("alltoall"));
        let ag = run(MODERN, &[point("none", -1, 8, 100.0, 87.5, Some(0))], 8);
        assert_eq!(decided(&ag).0.as_deref(), Some("all_gather"));
        let sendrecv = run(MODERN, &[point("sum", -1, 1, 100.0, 100.0, None)], 8);
        assert_eq!(decided(&sendrecv).0.as_deref(), Some("sendrecv"));
    }

    #[test]
    fn rooted_collectives() {
        let bcast = run(MODERN, &[point("none", 0, 1, 20.0, 20.0, Some(0))], 2);
        assert_eq!(decided(&bcast).0.as_deref(), Some("broadcast"));
        let reduce = run(MODERN, &[point("sum", 0, 1, 20.0, 20.0, Some(0))], 2);
        assert_eq!(decided(&reduce).0.as_deref(), Some("reduce"));
        // gather and scatter look the same; prose naming one decides.
        let mut gs = run(MODERN, &[point("none", 0, 16, 84.48, 79.2, Some(0))], 0);
        let (op, candidates, ranks) = decided(&gs);
        assert_eq!(op.as_deref(), Some("gather"));
        assert_eq!(candidates, vec!["gather", "scatter"]);
        assert_eq!(ranks, Some(16));
        gs.hints.mentions = vec!["scatter".into()];
        let d = decide(&gs, None, None);
        assert_eq!(d.op.as_deref(), Some("scatter"));
        assert_eq!(d.basis, vec!["table", "text-mention"]);
    }

    #[test]
    fn pre_2_13_columns() {
        let old = |has_redop, has_root| Layout {
            has_redop,
            has_root,
            v1: false,
        };
        let mut p = point("sum", 0, 1, 1.69, 2.53, Some(0));
        p.root = None;
        assert_eq!(
            decided(&run(old(true, false), &[p], 4)).0.as_deref(),
            Some("all_reduce")
        );
        // all_gather of 2020: busbw = algbw, (n-1)/n folded into algbw.
        let mut p = point("none", 0, 12, 73.75, 73.75, Some(0));
        (p.redop, p.root) = (None, None);
        (p.bytes, p.count) = (48 << 24, 1 << 24);
        if let Some(m) = p.out_of_place.as_mut() {
            m.time_us.mean = p.bytes as f64 / (73.75 * 12.0 / 11.0) / 1e3;
        }
        p.in_place = p.out_of_place.clone();
        // hypercube shows the same numbers; the more common collective is chosen, and both
        // are named.
        let (op, candidates, ranks) = decided(&run(old(false, false), &[p], 12));
        assert_eq!(op.as_deref(), Some("all_gather"));
        assert_eq!(candidates, vec!["all_gather", "hypercube"]);
        assert_eq!(ranks, Some(12));
    }

    #[test]
    fn names_that_the_table_rules_out_are_ignored() {
        let ar = run(MODERN, &[point("sum", -1, 1, 100.0, 187.5, Some(0))], 16);
        let d = decide(&ar, Some("all_gather"), None);
        assert_eq!(d.op.as_deref(), Some("all_reduce"));
        assert!(
            d.warnings[0].contains("file-name names all_gather"),
            "{:?}",
            d.warnings
        );
        // --op is obeyed, with a warning.
        let d = decide(&ar, None, Some("all_gather"));
        assert_eq!(d.op.as_deref(), Some("all_gather"));
        assert_eq!(d.warnings.len(), 1);
    }

    #[test]
    fn one_rank_jobs() {
        let mut s = run(MODERN, &[point("none", -1, 1, 170.0, 0.0, None)], 0);
        for pid in [1, 2] {
            s.devices.push(super::super::Device {
                rank: 0,
                pid: Some(pid),
                ..Default::default()
            });
        }
        let d = decide(&s, None, None);
        assert_eq!(d.op.as_deref(), Some("alltoall"));
        assert_eq!(d.ranks, Some(1));
        assert!(d.warnings.iter().any(|w| w.contains("independent")));
    }
}
