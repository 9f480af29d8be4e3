//! The bench-config profiles shipped in `bench-configs/`, embedded so that `--profile NAME`
//! and reports on results from a known instance type work without the repository.

use crate::config::BenchConfig;
use crate::error::{Error, Result};

/// (name, TOML) of every bundled profile; the name is the file name without `.toml`.
pub const PROFILES: &[(&str, &str)] = &[
    ("default", crate::config::DEFAULT_CONFIG),
    (
        "p5.48xlarge",
        include_str!("../../bench-configs/p5.48xlarge.toml"),
    ),
    (
        "p5en.48xlarge",
        include_str!("../../bench-configs/p5en.48xlarge.toml"),
    ),
    (
        "p4d.24xlarge",
        include_str!("../../bench-configs/p4d.24xlarge.toml"),
    ),
    (
        "g6.12xlarge",
        include_str!("../../bench-configs/g6.12xlarge.toml"),
    ),
    ("h200x2", include_str!("../../bench-configs/h200x2.toml")),
];

pub fn names() -> Vec<&'static str> {
    PROFILES.iter().map(|(n, _)| *n).collect()
}

/// A bundled profile by name; the error lists the names.
pub fn by_name(name: &str) -> Result<BenchConfig> {
    let Some((_, text)) = PROFILES.iter().find(|(n, _)| *n == name) else {
        return Err(Error::Usage {
            message: format!("no bundled profile `{name}`"),
            hint: Some(format!("bundled profiles: {}", names().join(", "))),
        });
    };
    BenchConfig::parse(text, &format!("bench-configs/{name}.toml"))
}

/// The bundled profile whose hardware is this EC2 instance type.
pub fn for_instance_type(instance_type: &str) -> Option<BenchConfig> {
    PROFILES
        .iter()
        .filter_map(|(name, _)| by_name(name).ok())
        .find(|c| {
            c.hardware.as_ref().and_then(|h| h.instance_type.as_deref()) == Some(instance_type)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_profile_is_valid_and_says_where_its_numbers_come_from() {
        for (name, _) in PROFILES {
            let config = by_name(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            if *name == "default" {
                continue;
            }
            let hw = config.hardware.as_ref().expect("hardware facts");
            assert!(hw.source.is_some(), "{name}: hardware.source");
            assert!(hw.gpus_per_node.is_some(), "{name}: gpus_per_node");
            for r in &config.references {
                assert!(!r.source.is_empty(), "{name}: reference source");
            }
        }
    }

    #[test]
    fn instance_types_find_their_profile() {
        let c = for_instance_type("p5.48xlarge").unwrap();
        assert_eq!(c.hardware.unwrap().efa_count, Some(32));
        assert!(
            for_instance_type("g6.12xlarge")
                .unwrap()
                .hardware
                .unwrap()
                .gpudirect_rdma
                == Some(false)
        );
        assert!(for_instance_type("m5.large").is_none());
        assert!(
            by_name("nope")
                .unwrap_err()
                .hint()
                .unwrap()
                .contains("p5en.48xlarge")
        );
    }

    /// The floor the profiles give all_gather and reduce_scatter, a fraction of the line rate
    /// (bench-configs/README.md).
    const FLOOR_OF_LINE_RATE: f64 = 0.25;

    #[test]
    fn every_profile_with_a_line_rate_floors_the_default_collectives_by_the_formula() {
        for (name, _) in PROFILES {
            let config = by_name(name).unwrap();
            let Some(hw) = config.hardware.as_ref() else {
                continue;
            };
            let efa = hw
                .efa_count
                .zip(hw.efa_gbps)
                .map(|(n, g)| n as f64 * g / 8.0);
            let rate = match (hw.nvlink_gbs, efa) {
                (Some(nv), Some(efa)) => nv.min(efa),
                (nv, efa) => nv.or(efa).unwrap_or_else(|| panic!("{name}: no line rate")),
            };
            for op in ["all_gather", "reduce_scatter"] {
                let floors: Vec<f64> = config
                    .thresholds
                    .iter()
                    .filter(|t| {
                        t.op.as_deref() == Some(op) && t.min_bytes.map(|b| b.0) == Some(1 << 30)
                    })
                    .filter_map(|t| t.min_busbw_gbs)
                    .collect();
                // h200x2 gates every op on measured numbers (op-less thresholds) instead.
                let measured = config
                    .thresholds
                    .iter()
                    .any(|t| t.op.is_none() && t.min_busbw_gbs.is_some());
                if measured {
                    continue;
                }
                assert_eq!(
                    floors,
                    [FLOOR_OF_LINE_RATE * rate],
                    "{name} {op}: ¼ × line rate {rate} GB/s"
                );
            }
        }
    }
}
