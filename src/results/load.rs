//! Reading results files for `report` and `gate`: a file holds one RunRecord, or a list of
//! them when `ingest` found several runs (several nccl-tests runs in one log, or unrelated
//! files ingested together). Each record becomes a [`Run`] with the name it goes by.

use std::path::Path;

use super::RunRecord;
use super::rows::all_rows;
use crate::error::{Error, Result};

/// A results record and the name it goes by in reports and gate messages.
#[derive(Debug, Clone)]
pub struct Run {
    pub label: String,
    pub origin: String,
    pub record: RunRecord,
}

impl Run {
    /// Labels a run by its record's label, else the file name without `.json`.
    pub fn new(record: RunRecord, origin: &str) -> Run {
        let stem = Path::new(origin)
            .file_name()
            .map(|f| f.to_string_lossy().trim_end_matches(".json").to_string())
            .unwrap_or_else(|| origin.to_string());
        Run {
            label: record.label.clone().unwrap_or(stem),
            origin: origin.to_string(),
            record,
        }
    }
}

/// Makes run labels unique (`label (2)`), so reports and gate cases tell runs apart.
pub fn distinct_labels(runs: &mut [Run]) {
    for i in 0..runs.len() {
        let taken = runs[..i].iter().any(|r| r.label == runs[i].label);
        if taken {
            runs[i].label = format!("{} ({})", runs[i].label, i + 1);
        }
    }
}

/// Every run in a results file, each checked to have at least one result row (its own or a
/// pair's) unless it failed with an error before measuring (then it is kept: the gate fails
/// it, the report shows why). Runs of a multi-run file are named `FILE#N` in messages.
/// Errors name the file and the field.
pub fn load_runs(path: &Path) -> Result<Vec<Run>> {
    let text = crate::input::read_to_string(path)?;
    let origin = crate::input::origin(path);
    let records = RunRecord::parse_all(&text, &origin)?;
    let several = records.len() > 1;
    let mut runs = Vec::new();
    let mut empty = Vec::new();
    for (i, record) in records.into_iter().enumerate() {
        let name = if several {
            format!("{origin}#{}", i + 1)
        } else {
            origin.clone()
        };
        // A run that failed before measuring is an outcome to report and gate, not bad input.
        let failed = record.status != super::RunStatus::Complete && !record.errors.is_empty();
        if all_rows(&record).next().is_none() && !failed {
            empty.push((name, record));
        } else {
            runs.push(Run::new(record, &name));
        }
    }
    match (runs.is_empty(), empty.first()) {
        (true, Some((name, record))) => Err(no_rows(name, record)),
        (true, None) => Err(Error::bad_input(origin, "holds no runs")),
        (false, _) => {
            for (name, record) in &empty {
                crate::say!("warning: {}", no_rows(name, record));
            }
            Ok(runs)
        }
    }
}

/// The one run of a results file; a file with several runs is refused with their names, so a
/// baseline is never picked at random.
pub fn load_run(path: &Path) -> Result<Run> {
    let mut runs = load_runs(path)?;
    if runs.len() > 1 {
        let names: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
        return Err(Error::BadInput {
            what: path.display().to_string(),
            message: format!(
                "holds {} runs ({}); one is needed here",
                runs.len(),
                names.join(", ")
            ),
            hint: Some(
                "ingest the run you mean on its own: `netcheck ingest FILE --out one.json`".into(),
            ),
        });
    }
    Ok(runs.remove(0))
}

/// A baseline: the one run of a file, or its runs taken together when they measured
/// different points (the all_gather and the reduce_scatter run of one sweep, ingested
/// together). Runs that measured the same op, type, size and placement are refused: which one
/// is the baseline would be a guess.
pub fn load_baseline(path: &Path) -> Result<Run> {
    let runs = load_runs(path)?;
    if runs.len() == 1 {
        return Ok(runs.into_iter().next().expect("one run"));
    }
    let mut seen = std::collections::BTreeMap::new();
    for (i, run) in runs.iter().enumerate() {
        for (group, row) in super::rows::grouped_rows(&run.record) {
            let key = (
                group.map(str::to_string),
                row.op.clone(),
                row.dtype.clone(),
                row.bytes,
                row.in_place,
            );
            if let Some((j, other)) = seen.insert(key, (i, run.label.clone()))
                && j != i
            {
                return Err(Error::BadInput {
                    what: path.display().to_string(),
                    message: format!(
                        "holds {} runs, and {other} and {} both measured {} {} at {} bytes; \
                         which one is the baseline?",
                        runs.len(),
                        run.label,
                        row.op,
                        row.dtype,
                        row.bytes
                    ),
                    hint: Some(
                        "ingest the baseline run on its own: `netcheck ingest FILE --out baseline.json`"
                            .into(),
                    ),
                });
            }
        }
    }
    let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    let mut runs = runs.into_iter();
    let mut merged = runs.next().expect("several runs");
    for run in runs {
        let rows = super::rows::grouped_rows(&run.record)
            .into_iter()
            .map(|(group, row)| super::ResultRow {
                group: group.map(str::to_string),
                ..row.clone()
            })
            .collect::<Vec<_>>();
        merged.record.rows.extend(rows);
    }
    merged.label = labels.join(" + ");
    Ok(merged)
}

fn no_rows(name: &str, record: &RunRecord) -> Error {
    let failed_pairs = record.pairs.iter().filter(|p| p.status != "pass").count();
    let message = if failed_pairs > 0 {
        format!("no result rows ({failed_pairs} pairs failed before measuring anything)")
    } else if let Some(e) = record.errors.first() {
        format!(
            "no result rows: nothing was measured (status {:?}: {e})",
            record.status
        )
        .to_lowercase()
    } else {
        "no result rows: nothing was measured".into()
    };
    Error::BadInput {
        what: format!("{name}: rows"),
        message,
        hint: Some("check the run's `errors` and `status` fields, then run it again".into()),
    }
}
