//! `netcheck doctor`: GPUs, NCCL, OFI plugin, libfabric, EFA devices and counters, host limits,
//! environment lint.

use std::path::PathBuf;

use crate::error::{Error, Outcome, Result};
use crate::output;
use crate::probe::HostPaths;
use crate::probe::doctor::{self, Inputs, Requirements};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// What must be present; missing ones fail instead of warn (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "WHAT",
          value_parser = ["gpu", "nccl", "libfabric", "efa", "ofi-plugin"])]
    pub require: Vec<String>,
    /// The number of GPUs this node must have.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::flags::int::<u32>(0, None))]
    pub expect_gpus: Option<u32>,
    /// The number of EFA devices this node must have (e.g. 32 on p5.48xlarge).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::flags::int::<u32>(0, None))]
    pub expect_efa: Option<u32>,
    /// Read /sys, /dev and /proc under this directory (a fake host tree, or the host's root
    /// mounted into a container). NETCHECK_SYSFS_ROOT and NETCHECK_PROCFS_ROOT put /sys and
    /// /proc elsewhere on their own.
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
}

pub fn run(args: Args) -> Result<Outcome> {
    if !args.root.is_dir() {
        return Err(Error::usage(format!(
            "--root {} is not a directory",
            args.root.display()
        )));
    }
    let has = |w: &str| args.require.iter().any(|r| r == w);
    let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    let paths = HostPaths::from_env(&args.root, &env);
    for (name, dir) in [
        ("NETCHECK_SYSFS_ROOT", &paths.sys),
        ("NETCHECK_PROCFS_ROOT", &paths.proc),
    ] {
        if let Some(dir) = dir
            && !dir.is_dir()
        {
            return Err(Error::usage(format!(
                "{name}={} is not a directory",
                dir.display()
            )));
        }
    }
    let inputs = Inputs {
        paths,
        env,
        require: Requirements {
            gpu: has("gpu"),
            nccl: has("nccl"),
            libfabric: has("libfabric"),
            efa: has("efa"),
            ofi_plugin: has("ofi-plugin"),
            gpus: args.expect_gpus,
            efa_devices: args.expect_efa,
        },
    };
    let report = doctor::run(&inputs);
    let text = match args.format.as_str() {
        "json" => {
            let mut s = serde_json::to_string_pretty(&report)
                .map_err(|e| Error::infra(format!("encoding JSON: {e}")))?;
            s.push('\n');
            s
        }
        _ => report.to_text(),
    };
    output::stdout(&text).map_err(|e| Error::infra(format!("writing to stdout: {e}")))?;
    report.outcome()
}
