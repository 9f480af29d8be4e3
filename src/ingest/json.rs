//! nccl-tests' `-J` JSON (format version 3 as of nccl-tests 2.19):
//!
//! ```text
//! { "version": 3, "start_time": "...", "args": ["./build/all_gather_perf", ...],
//!   "env": ["NCCL_DEBUG=INFO", ...], "nccl_version": 22809,
//!   "config": { "iterations": 20, "devices": [{"rank", "pid", "hostname", "device",
//!               "device_hex", "device_info"}], ... },
//!   "results": [ { "size", "count", "type", "redop", "root",
//!                  "out_of_place": {"time", "alg_bw", "bus_bw", "nwrong"},
//!                  "in_place": {...}, "actual_iterations" } ],
//!   "out_of_bounds": {...}, "average_bus_bandwidth": {...}, "errors": [...], "end_time": "..." }
//! ```
//!
//! The file is written while the test runs, so a killed test leaves it cut off. Such a file is
//! repaired by closing it after its last complete value; the results it holds are kept and the
//! record says it was truncated.

use serde_json::Value;

use super::{Device, Measure, Point, Section, dtype_name, nccl_version_from_code, op_from_binary};
use crate::error::{Error, Result};
use crate::results::TimeStats;

pub fn parse(text: &str, origin: &str) -> Result<Section> {
    let (value, repaired) = match serde_json::from_str::<Value>(text) {
        Ok(v) => (v, false),
        Err(e) if e.is_eof() => match close_truncated(text) {
            Some(v) => (v, true),
            None => return Err(not_json(origin, &e)),
        },
        Err(e) => return Err(not_json(origin, &e)),
    };
    let obj = value.as_object().ok_or_else(|| {
        Error::bad_input(
            origin,
            "not an nccl-tests -J file (the top level is not an object)",
        )
    })?;
    if let Some(schema) = obj
        .get("schema")
        .and_then(Value::as_str)
        .filter(|s| s.starts_with("netcheck."))
    {
        let what = if schema.starts_with("netcheck.results.") {
            "a netcheck results file already (written by `run`, `launch` or `ingest`)"
        } else {
            "a netcheck file, not nccl-tests output"
        };
        return Err(Error::BadInput {
            what: origin.into(),
            message: format!("is {what}: schema `{schema}`"),
            hint: Some(
                "pass results files to `netcheck gate` or `netcheck report` as they are; ingest reads nccl-tests -J JSON or its text output".into(),
            ),
        });
    }
    let field = |name: &str| format!("{origin}: {name}");
    let results = match obj.get("results") {
        Some(Value::Array(a)) => a,
        Some(_) => return Err(Error::bad_input(field("results"), "is not a list")),
        None if repaired => &Vec::new(),
        None => {
            return Err(Error::BadInput {
                what: field("results"),
                message: "missing; this is not an nccl-tests -J file".into(),
                hint: Some("ingest reads nccl-tests -J JSON or the text output".into()),
            });
        }
    };
    let config = obj.get("config");
    let mut section = Section {
        hints: super::collective::Hints {
            explicit: obj
                .get("args")
                .and_then(|a| a.get(0))
                .and_then(Value::as_str)
                .and_then(op_from_binary)
                .map(|op| (op, "json-args")),
            ..Default::default()
        },
        layout: super::Layout {
            has_redop: true,
            has_root: true,
            v1: false,
        },
        avg_busbw: obj
            .get("average_bus_bandwidth")
            .and_then(|a| a.get("bandwidth"))
            .and_then(Value::as_f64),
        out_of_bounds: obj
            .get("out_of_bounds")
            .and_then(|o| o.get("count"))
            .and_then(Value::as_u64),
        tests_version: None,
        nccl_version: obj
            .get("nccl_version")
            .and_then(Value::as_u64)
            .map(nccl_version_from_code),
        args: strings(obj.get("args")),
        env: strings(obj.get("env"))
            .into_iter()
            .filter_map(|kv| {
                kv.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect(),
        started_at: obj.get("start_time").and_then(Value::as_str).map(timestamp),
        finished_at: obj.get("end_time").and_then(Value::as_str).map(timestamp),
        iters: config
            .and_then(|c| c.get("iterations"))
            .and_then(Value::as_u64)
            .map(|n| n as u32),
        devices: devices(config.and_then(|c| c.get("devices"))),
        complete: !repaired && obj.contains_key("end_time"),
        json: true,
        ..Default::default()
    };
    for (i, result) in results.iter().enumerate() {
        match point(result) {
            Ok(p) => section.points.push(p),
            // The entry being written when the file was cut off.
            Err(_) if repaired && i + 1 == results.len() => {}
            Err(f) => {
                let what = field(&format!("results[{i}].{f}"));
                return Err(Error::bad_input(what, "missing or of the wrong type"));
            }
        }
    }
    section.failures = strings(obj.get("errors"))
        .into_iter()
        .filter(|e| !e.trim().is_empty())
        .collect();
    if repaired {
        // Rows, as the results file counts them: one per placement measured.
        let rows: usize = section
            .points
            .iter()
            .map(|p| usize::from(p.out_of_place.is_some()) + usize::from(p.in_place.is_some()))
            .sum();
        section.notes.push(format!(
            "{origin}: the JSON ends early (truncated?); kept {rows} rows from the {} results it holds",
            section.points.len()
        ));
    }
    Ok(section)
}

fn not_json(origin: &str, e: &serde_json::Error) -> Error {
    Error::BadInput {
        what: origin.to_string(),
        message: format!("not valid JSON ({e})"),
        hint: Some("pass the file written by nccl-tests -J, or the text output".into()),
    }
}

/// One `results[i]` entry; the error names the missing field.
fn point(result: &Value) -> std::result::Result<Point, &'static str> {
    let num = |name: &'static str| result.get(name).and_then(Value::as_u64).ok_or(name);
    Ok(Point {
        bytes: num("size")?,
        count: num("count")?,
        dtype: result
            .get("type")
            .and_then(Value::as_str)
            .map(dtype_name)
            .ok_or("type")?,
        redop: result
            .get("redop")
            .and_then(Value::as_str)
            .map(|r| r.trim().to_string()),
        root: match result.get("root") {
            Some(Value::String(r)) => r.trim().parse().ok(),
            Some(v) => v.as_i64(),
            None => None,
        },
        out_of_place: match result.get("out_of_place") {
            Some(Value::Null) | None => None,
            Some(m) => {
                Some(measure(m, result.get("out_of_place_per_iter")).ok_or("out_of_place.time")?)
            }
        },
        in_place: match result.get("in_place") {
            Some(Value::Null) | None => None,
            Some(m) => Some(measure(m, result.get("in_place_per_iter")).ok_or("in_place.time")?),
        },
    })
}

/// `None` when the mean time is missing. `per_iter` is `-I`'s `*_per_iter` object (2.19:
/// `min_us`, `p50_us`, `p99_us`, `max_us`).
fn measure(m: &Value, per_iter: Option<&Value>) -> Option<Measure> {
    let f = |name: &str| {
        m.get(name)
            .and_then(Value::as_f64)
            .filter(|v| v.is_finite())
    };
    let (min, p50, p99, max) = match per_iter {
        Some(p) if p.get("p50_us").is_some() => {
            let g = |n: &str| p.get(n).and_then(Value::as_f64).filter(|v| v.is_finite());
            (g("min_us"), g("p50_us"), g("p99_us"), g("max_us"))
        }
        _ => percentiles(m),
    };
    Some(Measure {
        checked: Some(m.get("nwrong").is_some_and(Value::is_number)),
        time_us: TimeStats {
            mean: f("time").or_else(|| f("cpu_time"))?,
            min,
            p50,
            p99,
            max,
        },
        algbw_gbs: f("alg_bw"),
        busbw_gbs: f("bus_bw"),
        // `nwrong` is written as a float (0.0); a negative or missing value means unchecked.
        wrong: f("nwrong").filter(|w| *w >= 0.0).map(|w| w as u64),
    })
}

/// Per-iteration statistics (`-I`): looked for on the measurement itself and on the objects
/// directly inside it, by the names nccl-tests uses (`min`, `p50`, `p99`, `max`).
fn percentiles(m: &Value) -> (Option<f64>, Option<f64>, Option<f64>, Option<f64>) {
    let read = |o: &Value| {
        let f = |n: &str| o.get(n).and_then(Value::as_f64).filter(|v| v.is_finite());
        (f("min"), f("p50"), f("p99"), f("max"))
    };
    let own = read(m);
    if own.1.is_some() {
        return own;
    }
    m.as_object()
        .into_iter()
        .flat_map(|o| o.values())
        .filter(|v| v.is_object())
        .map(read)
        .find(|stats| stats.1.is_some())
        .unwrap_or(own)
}

fn devices(value: Option<&Value>) -> Vec<Device> {
    let Some(Value::Array(list)) = value else {
        return vec![];
    };
    list.iter()
        .map(|d| {
            let u = |n: &str| d.get(n).and_then(Value::as_u64).map(|v| v as u32);
            let s = |n: &str| {
                d.get(n)
                    .and_then(Value::as_str)
                    .map(|v| v.trim().to_string())
            };
            Device {
                rank: u("rank").unwrap_or_default(),
                pid: u("pid"),
                host: s("hostname").unwrap_or_default(),
                device: u("device").unwrap_or_default(),
                bus_id: s("device_hex"),
                name: s("device_info").unwrap_or_default(),
            }
        })
        .collect()
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `2026-11-30 02:26:05` (local time of the test host, no zone) → `2026-11-30T02:26:05`.
fn timestamp(s: &str) -> String {
    s.trim().replacen(' ', "T", 1)
}

/// Closes a JSON text that was cut off: keeps everything up to the last complete value inside
/// an object or array and appends the brackets still open. `None` when nothing complete is left.
fn close_truncated(text: &str) -> Option<Value> {
    let mut stack: Vec<u8> = Vec::new();
    // (byte offset just after a complete value, the brackets open at that point)
    let mut last_cut: Option<(usize, Vec<u8>)> = None;
    let (mut in_string, mut escaped) = (false, false);
    for (i, b) in text.bytes().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => stack.push(b),
            b'}' | b']' => {
                stack.pop();
                if !stack.is_empty() {
                    last_cut = Some((i + 1, stack.clone()));
                }
            }
            _ => {}
        }
    }
    let (cut, open) = last_cut?;
    let mut repaired = text[..cut].to_string();
    for b in open.iter().rev() {
        repaired.push(if *b == b'{' { '}' } else { ']' });
    }
    serde_json::from_str(&repaired).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_json_keeps_complete_values() {
        let text = r#"{"version": 3, "results": [{"size": 1, "x": {"a": 1}}, {"size": 2, "x": {"a"#;
        let v = close_truncated(text).unwrap();
        let results = v["results"].as_array().unwrap();
        assert_eq!(results[0]["size"], 1);
        // The second entry was cut inside `x`, before anything of it closed.
        assert_eq!(results.len(), 1);
        assert!(close_truncated("{\"version\": 3, \"res").is_none());
    }

    #[test]
    fn percentiles_are_found_nested_or_flat() {
        let flat = serde_json::json!({"time": 10.0, "p50": 9.0, "p99": 12.0});
        assert_eq!(percentiles(&flat).1, Some(9.0));
        let nested = serde_json::json!({"time": 10.0, "stats": {"min": 8.0, "p50": 9.5, "p99": 13.0, "max": 20.0}});
        assert_eq!(
            percentiles(&nested),
            (Some(8.0), Some(9.5), Some(13.0), Some(20.0))
        );
        assert_eq!(percentiles(&serde_json::json!({"time": 1.0})).1, None);
    }
}
