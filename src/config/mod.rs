//! Bench-config TOML (`bench-configs/*.toml`): the sweep, the expectations, the thresholds and
//! the hardware facts of a profile. Validation names the file and the field that is wrong.
//!
//! Sizes are written the way nccl-tests users write them (`1K`, `64M`, `1G`, binary units);
//! durations as `30s`, `10m`, `1h` or plain seconds.

pub mod profiles;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The profile used when `netcheck run` gets no `--config`: 1 KiB – 1 GiB, all-gather and
/// reduce-scatter, float32. Kept in the repository so `--config bench-configs/default.toml`
/// gives exactly the same sweep.
pub const DEFAULT_CONFIG: &str = include_str!("../../bench-configs/default.toml");

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BenchConfig {
    /// Free text shown in reports (e.g. "p5.48xlarge, 32 EFA").
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub sweep: Sweep,
    #[serde(default)]
    pub expect: Expectations,
    /// Per op and size range: minimum bus bandwidth, maximum latency.
    #[serde(default, rename = "threshold")]
    pub thresholds: Vec<Threshold>,
    #[serde(default)]
    pub hardware: Option<Hardware>,
    /// Published results for this hardware, drawn in reports for comparison (never gated on).
    #[serde(default, rename = "reference")]
    pub references: Vec<Reference>,
}

/// The sweep flags `netcheck run` takes, and `netcheck launch` passes on to its pods: both
/// apply them the same way, so `launch` rejects before creating anything what `run` in the
/// pods would reject after scheduling.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SweepFlags {
    pub ops: Option<Vec<String>>,
    pub min_bytes: Option<ByteSize>,
    pub max_bytes: Option<ByteSize>,
    pub step_factor: Option<u64>,
    pub iters: Option<u32>,
    pub warmup: Option<u32>,
    pub dtypes: Option<Vec<String>>,
    pub expect: Option<String>,
}

impl SweepFlags {
    /// Flags override the matching config fields; the result is validated like a config file.
    pub fn apply(&self, config: &mut BenchConfig, origin: &str) -> Result<()> {
        let s = &mut config.sweep;
        if let Some(ops) = &self.ops {
            s.ops = ops.clone();
        }
        if let Some(v) = self.min_bytes {
            s.min_bytes = v;
        }
        if let Some(v) = self.max_bytes {
            s.max_bytes = v;
        }
        if let Some(v) = self.step_factor {
            s.step_factor = v;
        }
        if let Some(v) = self.iters {
            s.iters = v;
        }
        if let Some(v) = self.warmup {
            s.warmup = v;
        }
        if let Some(d) = &self.dtypes {
            s.dtypes = d.clone();
        }
        if let Some(t) = &self.expect {
            config.expect.transport = Some(t.clone());
        }
        config.validate(origin)
    }
}

/// What to measure. Field names match the `netcheck run` flags.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Sweep {
    pub ops: Vec<String>,
    pub min_bytes: ByteSize,
    pub max_bytes: ByteSize,
    pub step_factor: u64,
    pub iters: u32,
    pub warmup: u32,
    pub dtypes: Vec<String>,
    /// Measure the out-of-place and the in-place variant (as nccl-tests does).
    pub in_place: bool,
    pub out_of_place: bool,
    /// Verify every point (in a pass after the timed sweep) and count wrong elements.
    pub check: bool,
}

impl Default for Sweep {
    fn default() -> Self {
        Sweep {
            ops: vec!["all_gather".into(), "reduce_scatter".into()],
            min_bytes: ByteSize(1 << 10),
            max_bytes: ByteSize(1 << 30),
            step_factor: 2,
            iters: 20,
            warmup: 5,
            dtypes: vec!["float32".into()],
            in_place: true,
            out_of_place: true,
            check: true,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Expectations {
    /// `efa`, `ib`, `roce`, `socket`, `tcpx`, `nvlink` or `any`.
    pub transport: Option<String>,
    /// Wrong elements allowed (default 0).
    pub max_wrong: Option<u64>,
    /// The oldest NCCL every host may have loaded, e.g. "2.27" (`gate --min-nccl`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_nccl: Option<String>,
    /// The oldest aws-ofi-nccl plugin every host may have loaded, e.g. "1.14"
    /// (`gate --min-ofi-plugin`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_ofi_plugin: Option<String>,
}

/// One threshold row: applies to `op` (or every op when absent) for sizes in
/// `[min_bytes, max_bytes]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Threshold {
    pub op: Option<String>,
    pub min_bytes: Option<ByteSize>,
    pub max_bytes: Option<ByteSize>,
    pub min_busbw_gbs: Option<f64>,
    pub max_latency_us: Option<f64>,
    /// Which time statistic `max_latency_us` applies to: `mean` (default; what nccl-tests
    /// prints), `p50`, `p99`, `min` or `max`.
    pub latency_stat: Option<String>,
}

/// A published measurement (`[[reference]]`), with where it comes from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    pub op: String,
    pub bytes: ByteSize,
    /// Number of nodes of the published run.
    #[serde(default)]
    pub nodes: Option<u32>,
    pub busbw_gbs: f64,
    /// Where the number was published (repository path, issue, ...).
    pub source: String,
}

/// Hardware facts of a profile, so reports can show % of line rate.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Hardware {
    pub instance_type: Option<String>,
    pub gpu: Option<String>,
    pub gpus_per_node: Option<u32>,
    /// e.g. "NVLink4 (NV18)".
    pub nvlink: Option<String>,
    /// Per-GPU unidirectional NVLink bandwidth, GB/s.
    pub nvlink_gbs: Option<f64>,
    pub efa_count: Option<u32>,
    /// Per-EFA-device line rate, Gbit/s.
    pub efa_gbps: Option<f64>,
    pub gpudirect_rdma: Option<bool>,
    /// Where these numbers come from.
    pub source: Option<String>,
}

impl BenchConfig {
    /// The embedded default profile.
    pub fn embedded_default() -> BenchConfig {
        Self::parse(DEFAULT_CONFIG, "bench-configs/default.toml")
            .expect("the embedded default config is valid (unit-tested)")
    }

    pub fn load(path: &Path) -> Result<BenchConfig> {
        let text = crate::input::read_to_string(path)?;
        Self::parse(&text, &crate::input::origin(path))
    }

    /// Parses and validates; errors name `origin` and the offending field.
    pub fn parse(text: &str, origin: &str) -> Result<BenchConfig> {
        let config: BenchConfig = toml::from_str(text).map_err(|e| Error::BadInput {
            what: origin.to_string(),
            message: e.message().to_string() + &toml_location(text, e.span()),
            hint: Some("see bench-configs/default.toml for every field with comments".into()),
        })?;
        config.validate(origin)?;
        Ok(config)
    }

    pub fn validate(&self, origin: &str) -> Result<()> {
        let bad =
            |field: &str, msg: String| Err(Error::bad_input(format!("{origin}: {field}"), msg));
        let s = &self.sweep;
        if s.ops.is_empty() {
            return bad("sweep.ops", "at least one collective is needed".into());
        }
        for op in &s.ops {
            if !KNOWN_OPS.contains(&op.as_str()) {
                return bad(
                    "sweep.ops",
                    format!(
                        "unknown collective `{op}` (known: {})",
                        KNOWN_OPS.join(", ")
                    ),
                );
            }
        }
        if s.min_bytes.0 == 0 {
            return bad("sweep.min_bytes", "must be at least 1 byte".into());
        }
        if s.min_bytes.0 > s.max_bytes.0 {
            return bad(
                "sweep.max_bytes",
                format!("{} is smaller than min_bytes {}", s.max_bytes, s.min_bytes),
            );
        }
        if s.step_factor < 2 {
            return bad("sweep.step_factor", "must be 2 or more".into());
        }
        if s.iters == 0 {
            return bad("sweep.iters", "must be at least 1".into());
        }
        if s.dtypes.is_empty() {
            return bad("sweep.dtypes", "at least one data type is needed".into());
        }
        for dtype in &s.dtypes {
            if !KNOWN_DTYPES.contains(&dtype.as_str()) {
                return bad(
                    "sweep.dtypes",
                    format!(
                        "unknown data type `{dtype}` (known: {})",
                        KNOWN_DTYPES.join(", ")
                    ),
                );
            }
        }
        if !s.in_place && !s.out_of_place {
            return bad(
                "sweep.in_place",
                "in_place and out_of_place are both false: nothing to measure".into(),
            );
        }
        if let Some(t) = &self.expect.transport
            && !KNOWN_TRANSPORTS.contains(&t.as_str())
        {
            return bad(
                "expect.transport",
                format!(
                    "unknown transport `{t}` (known: {})",
                    KNOWN_TRANSPORTS.join(", ")
                ),
            );
        }
        for (i, t) in self.thresholds.iter().enumerate() {
            if let Some(op) = &t.op
                && !KNOWN_OPS.contains(&op.as_str())
            {
                return bad(
                    &format!("threshold[{i}].op"),
                    format!("unknown collective `{op}`"),
                );
            }
            if let Some(stat) = &t.latency_stat
                && !LATENCY_STATS.contains(&stat.as_str())
            {
                return bad(
                    &format!("threshold[{i}].latency_stat"),
                    format!(
                        "unknown statistic `{stat}` (known: {})",
                        LATENCY_STATS.join(", ")
                    ),
                );
            }
            if let (Some(lo), Some(hi)) = (t.min_bytes, t.max_bytes)
                && lo > hi
            {
                return bad(
                    &format!("threshold[{i}].max_bytes"),
                    format!("{hi} is smaller than min_bytes {lo}"),
                );
            }
            // A threshold that can never fail (min 0 GB/s, max ∞ µs) or always fails (min ∞,
            // max ≤ 0), or that compares as false either way (NaN), is a mistake in the file.
            for (field, value) in [
                ("min_busbw_gbs", t.min_busbw_gbs),
                ("max_latency_us", t.max_latency_us),
            ] {
                if let Some(v) = value
                    && !(v.is_finite() && v > 0.0)
                {
                    return bad(
                        &format!("threshold[{i}].{field}"),
                        format!(
                            "{v} is not a positive, finite number: a threshold of {v} {}",
                            if v.is_nan() {
                                "compares as false against every measurement"
                            } else if (field == "min_busbw_gbs") == (v <= 0.0) {
                                "can never fail"
                            } else {
                                "always fails"
                            }
                        ),
                    );
                }
            }
            if t.min_busbw_gbs.is_none() && t.max_latency_us.is_none() {
                return bad(
                    &format!("threshold[{i}]"),
                    "needs min_busbw_gbs or max_latency_us".into(),
                );
            }
        }
        for (i, r) in self.references.iter().enumerate() {
            if !(r.busbw_gbs.is_finite() && r.busbw_gbs > 0.0) {
                return bad(
                    &format!("reference[{i}].busbw_gbs"),
                    "must be a positive number".into(),
                );
            }
            if r.source.trim().is_empty() {
                return bad(
                    &format!("reference[{i}].source"),
                    "say where the number was published".into(),
                );
            }
        }
        if let Some(hw) = &self.hardware {
            for (field, value) in [("nvlink_gbs", hw.nvlink_gbs), ("efa_gbps", hw.efa_gbps)] {
                if value.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
                    return bad(
                        &format!("hardware.{field}"),
                        "must be a positive number".into(),
                    );
                }
            }
        }
        Ok(())
    }
}

/// Time statistics a latency threshold can name (`TimeStats` fields).
pub const LATENCY_STATS: &[&str] = &["mean", "p50", "p99", "min", "max"];
pub const KNOWN_OPS: &[&str] = &["all_gather", "reduce_scatter", "all_reduce"];
pub const KNOWN_DTYPES: &[&str] = &[
    "float32", "float16", "bfloat16", "float64", "int8", "uint8", "int32", "uint32", "int64",
    "uint64",
];
/// Every `--expect` / `expect.transport` value (`nvlink`: multi-node NVLink, GB200/GB300
/// NVL72), one list for every command.
pub const KNOWN_TRANSPORTS: &[&str] = &["efa", "ib", "roce", "socket", "tcpx", "nvlink", "any"];

fn toml_location(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!(" (line {line})")
        }
        None => String::new(),
    }
}

/// A byte count written as `1K`, `64M`, `1G`, `512KiB` or a plain number. Units are binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl std::str::FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        parse_bytes(s).map(ByteSize)
    }
}

impl std::fmt::Display for ByteSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_bytes(self.0))
    }
}

impl Serialize for ByteSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&format_bytes(self.0))
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(ByteSize(n)),
            Raw::Text(s) => parse_bytes(&s)
                .map(ByteSize)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// Parses `1K`, `1KB`, `1KiB`, `64M`, `1G`, `1T` (all binary: `1K` = `1KB` = `1KiB` = 1024
/// bytes, as nccl-tests reads `-b 1K`), a decimal with a unit (`1.5M` = 1572864 bytes; it must
/// come to whole bytes) or a plain number of bytes. The one size parser of every flag and
/// config field. A lower-case `b` after a unit (`1Kb`, `8Mb`) means bits in network speak, so
/// it is refused rather than read as bytes.
pub fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let not_a_size = || format!("`{s}` is not a size (examples: 1024, 1K, 1.5M, 64M, 1G)");
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    if whole.is_empty() && frac.is_empty() || frac.contains('.') {
        return Err(not_a_size());
    }
    let n: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| not_a_size())?
    };
    let unit = unit.trim();
    if unit.ends_with('b') {
        return Err(format!(
            "`{s}` reads as bits (lower-case b); sizes are bytes: write {num}{} (K, KB and KiB all mean 1024 bytes)",
            unit.trim_end_matches('b')
                .trim_end_matches('i')
                .to_ascii_uppercase()
        ));
    }
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(format!("`{s}` has an unknown unit (use K, M, G or T)")),
    };
    let too_large = || format!("`{s}` is too large");
    let mut bytes = n.checked_mul(1u64 << shift).ok_or_else(too_large)?;
    if !frac.is_empty() {
        // The fraction in exact integers: digits × unit / 10^len must be whole.
        let digits: u128 = frac.parse().map_err(|_| not_a_size())?;
        let scale = 10u128
            .checked_pow(u32::try_from(frac.len()).map_err(|_| not_a_size())?)
            .ok_or_else(not_a_size)?;
        let part = digits * (1u128 << shift);
        if !part.is_multiple_of(scale) {
            return Err(format!("`{s}` is not a whole number of bytes"));
        }
        let part = u64::try_from(part / scale).map_err(|_| too_large())?;
        bytes = bytes.checked_add(part).ok_or_else(too_large)?;
    }
    Ok(bytes)
}

/// Formats bytes the way nccl-tests users read them: `1K`, `64M`, `1G`, or plain bytes.
pub fn format_bytes(n: u64) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{}{unit}", n >> shift);
        }
    }
    n.to_string()
}

/// Parses `90`, `90s`, `10m`, `1h`, `500ms`, `1.5h` and sums of them (`1m30s`, `1h 30m`)
/// into a duration: the one duration parser of every flag. A plain number is seconds.
pub fn parse_duration(s: &str) -> std::result::Result<std::time::Duration, String> {
    let not_one = || format!("`{s}` is not a duration (examples: 90s, 1m30s, 10m, 1h)");
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err(not_one());
    }
    let mut secs = 0.0;
    let mut parts = 0;
    while !rest.is_empty() {
        let split = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let (num, tail) = rest.split_at(split);
        let n: f64 = num.parse().map_err(|_| not_one())?;
        let unit_len = tail
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        secs += match unit {
            "" if parts == 0 && tail.trim().is_empty() => n,
            "s" => n,
            "ms" => n / 1000.0,
            "m" | "min" => n * 60.0,
            "h" => n * 3600.0,
            "" => {
                return Err(format!(
                    "`{s}`: every part of a sum needs a unit (e.g. 1m30s)"
                ));
            }
            _ => {
                return Err(format!(
                    "`{s}` has an unknown unit `{unit}` (use ms, s, m or h)"
                ));
            }
        };
        parts += 1;
        rest = tail.trim_start();
    }
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("`{s}` must be a positive duration"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// The bench config from `--config FILE` or `--profile NAME` (at most one of them).
pub fn load_config(file: Option<&Path>, profile: Option<&str>) -> Result<Option<BenchConfig>> {
    match (file, profile) {
        (Some(path), None) => BenchConfig::load(path).map(Some),
        (None, Some(name)) => profiles::by_name(name).map(Some),
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err(Error::usage("give --config or --profile, not both")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_binary_units() {
        assert_eq!(parse_bytes("1K").unwrap(), 1024);
        assert_eq!(parse_bytes("64M").unwrap(), 64 << 20);
        assert_eq!(parse_bytes("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert!(parse_bytes("12X").is_err());
        assert!(parse_bytes("K").is_err());
        assert!(parse_bytes("99999999999T").is_err());
        // Bits are not bytes: `1Kb` is refused with the byte spelling, not read as 1K.
        for bits in ["1Kb", "8Mb", "1kb", "1Gib", "10b"] {
            let e = parse_bytes(bits).unwrap_err();
            assert!(e.contains("bits"), "{bits}: {e}");
        }
        assert!(parse_bytes("1Kb").unwrap_err().contains("write 1K"));
        assert_eq!(parse_bytes("1KB").unwrap(), 1024);
        assert_eq!(parse_bytes("1k").unwrap(), 1024);
        assert_eq!(parse_bytes("8B").unwrap(), 8);
        // Decimals with a unit, when they come to whole bytes.
        assert_eq!(parse_bytes("1.5M").unwrap(), 3 << 19);
        assert_eq!(parse_bytes("0.5K").unwrap(), 512);
        assert_eq!(parse_bytes(".25G").unwrap(), 1 << 28);
        assert!(
            parse_bytes("0.3K")
                .unwrap_err()
                .contains("whole number of bytes")
        );
        assert!(
            parse_bytes("1.5")
                .unwrap_err()
                .contains("whole number of bytes")
        );
        assert!(parse_bytes("1..5M").is_err());
        assert!(parse_bytes(".").is_err());
        assert_eq!(format_bytes(1 << 30), "1G");
        assert_eq!(format_bytes(3 << 20), "3M");
        assert_eq!(format_bytes(1000), "1000");
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("90").unwrap().as_secs(), 90);
        assert_eq!(parse_duration("10m").unwrap().as_secs(), 600);
        assert_eq!(parse_duration("500ms").unwrap().as_millis(), 500);
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("1y").is_err());
        assert_eq!(parse_duration("1m30s").unwrap().as_secs(), 90);
        assert_eq!(parse_duration("1h 30m").unwrap().as_secs(), 5400);
        assert_eq!(parse_duration("2m500ms").unwrap().as_millis(), 120_500);
        assert_eq!(parse_duration("1.5h").unwrap().as_secs(), 5400);
        assert!(
            parse_duration("1m30").is_err(),
            "a sum's parts all need units"
        );
        assert!(parse_duration("").is_err());
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("1m-30s").is_err());
    }

    #[test]
    fn embedded_default_is_the_documented_sweep() {
        let c = BenchConfig::embedded_default();
        // `netcheck run --help` states these defaults.
        assert_eq!(
            (c.sweep.step_factor, c.sweep.iters, c.sweep.warmup),
            (2, 20, 5)
        );
        assert_eq!(c.sweep.dtypes, ["float32"]);
        assert_eq!(c.sweep.ops, ["all_gather", "reduce_scatter"]);
        assert_eq!(c.sweep.min_bytes.0, 1 << 10);
        assert_eq!(c.sweep.max_bytes.0, 1 << 30);
    }

    #[test]
    fn errors_name_the_field() {
        let e = BenchConfig::parse("[sweep]\nstep_factor = 1\n", "x.toml").unwrap_err();
        assert!(e.to_string().contains("sweep.step_factor"), "{e}");
        let e = BenchConfig::parse("[sweep]\nops = [\"broadcast\"]\n", "x.toml").unwrap_err();
        assert!(e.to_string().contains("sweep.ops"), "{e}");
        let e = BenchConfig::parse("[sweep]\nmin_bytes = \"1Q\"\n", "x.toml").unwrap_err();
        assert!(
            e.to_string().contains("x.toml") && e.to_string().contains("unknown unit"),
            "{e}"
        );
        for (line, field, why) in [
            ("min_busbw_gbs = -5", "min_busbw_gbs", "can never fail"),
            ("min_busbw_gbs = 0", "min_busbw_gbs", "can never fail"),
            ("min_busbw_gbs = nan", "min_busbw_gbs", "compares as false"),
            ("min_busbw_gbs = inf", "min_busbw_gbs", "always fails"),
            ("max_latency_us = 0", "max_latency_us", "always fails"),
            ("max_latency_us = -1.5", "max_latency_us", "always fails"),
            ("max_latency_us = inf", "max_latency_us", "can never fail"),
            (
                "max_latency_us = nan",
                "max_latency_us",
                "compares as false",
            ),
        ] {
            let text = format!("[[threshold]]\nmin_busbw_gbs = 1\n[[threshold]]\n{line}\n");
            let e = BenchConfig::parse(&text, "x.toml").unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.contains(&format!("x.toml: threshold[1].{field}")),
                "{line}: {msg}"
            );
            assert!(msg.contains(why), "{line}: {msg}");
        }
        let ok = BenchConfig::parse(
            "[[threshold]]\nmin_busbw_gbs = 0.5\nmax_latency_us = 10\n",
            "x.toml",
        );
        assert!(ok.is_ok(), "{ok:?}");
        let e = BenchConfig::parse("[sweep]\nbogus = 1\n", "x.toml").unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
    }
}
