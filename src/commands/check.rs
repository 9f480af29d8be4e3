//! `netcheck check`: the one-off verdict on a suspect machine or cluster. Doctor, then the
//! benchmark (local GPUs through `run`, or pods through `launch` with `--kube`), the log
//! analysis that comes with it, a report, and one verdict line with the exit code.

use std::path::{Path, PathBuf};

use clap::Parser;

use crate::commands::{launch, run};
use crate::error::{Error, Outcome, Result};
use crate::probe::HostPaths;
use crate::probe::check::Status;
use crate::probe::doctor::{self, Inputs, Requirements};
use crate::results::RunRecord;

#[derive(Debug, clap::Args)]
#[group(skip)]
pub struct Args {
    /// The benchmark flags of `netcheck run` (`--out` is the folder for everything).
    #[command(flatten)]
    pub run: run::Args,
    /// Measure on a Kubernetes cluster: every argument after --kube goes to `netcheck launch`
    /// (e.g. `--kube --selector node.kubernetes.io/instance-type=p5.48xlarge --image IMG`).
    #[arg(long, num_args = 0.., allow_hyphen_values = true, value_name = "LAUNCH FLAGS")]
    pub kube: Option<Vec<String>>,
}

/// Parses the arguments after `--kube` as `netcheck launch` would.
#[derive(Debug, Parser)]
#[command(name = "netcheck check --kube", no_binary_name = true)]
struct LaunchFlags {
    #[command(flatten)]
    launch: launch::Args,
}

pub fn run(mut args: Args) -> Result<Outcome> {
    crate::output::folder_not_stdout("--out", args.run.out.as_deref())?;
    let out = args.run.out.clone().unwrap_or_else(|| {
        PathBuf::from("reports").join(format!(
            "check-{}",
            chrono::Utc::now().format("%Y-%m-%dT%H-%M-%SZ")
        ))
    });
    let on_kube = args.kube.is_some();
    // The flags after --kube are parsed before anything runs: a typo is a usage error alone.
    let launch_flags = match args.kube.take() {
        Some(flags) => Some(
            LaunchFlags::try_parse_from(flags)
                .map_err(|e| {
                    Error::usage(format!("after --kube: {}", e.render().to_string().trim()))
                })?
                .launch,
        ),
        None => None,
    };
    // Every flag is checked before anything runs or is written (docs/check.md).
    match &launch_flags {
        Some(launch) => launch::check_flags(launch)?,
        None => run::check_flags(&args.run)?,
    }
    let dry_run = launch_flags.as_ref().is_some_and(|l| l.dry_run);
    // A dry run prints the manifests and writes nothing: no folder either.
    if !dry_run {
        std::fs::create_dir_all(&out).map_err(|e| Error::write(&out, e))?;
    }

    // 1. Doctor: on this host (for --kube, the pods' nodes are checked by launch's preflight;
    //    a dry run creates nothing and measures nothing, so it checks nothing here either).
    let doctor_report = (!dry_run).then(|| {
        let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
        doctor::run(&Inputs {
            paths: HostPaths::from_env("/", &env),
            env,
            require: Requirements {
                gpu: !on_kube,
                nccl: !on_kube,
                ..Default::default()
            },
        })
    });
    let doctor_path = out.join("doctor.json");
    if let Some(report) = &doctor_report {
        let text = serde_json::to_string_pretty(report).expect("doctor reports serialize");
        crate::output::write_file(&doctor_path, (text + "\n").as_bytes())?;
        for c in report.checks.iter().filter(|c| c.status != Status::Ok) {
            crate::say!(
                "netcheck: doctor: {} {}: {}",
                c.status.label(),
                c.id,
                c.summary
            );
        }
        crate::say!("netcheck: doctor: wrote {}", doctor_path.display());
    }

    // 2. Measure. Errors are kept: a failed run still leaves rows and logs to report on.
    let (measured, results) = match launch_flags {
        Some(mut launch) => {
            let dir = launch.out.get_or_insert_with(|| out.join("launch")).clone();
            (launch::run(launch), dir.join("results.json"))
        }
        None => {
            let dir = out.join("run");
            args.run.out = Some(dir.clone());
            (run::run(args.run), dir.join("results.json"))
        }
    };

    // A usage error or bad input is not a verdict on the machine: say it as an error only.
    if let Err(e) = &measured
        && e.exit_code() == crate::exit::BAD_INPUT
    {
        return measured;
    }

    // 3. Report on whatever was measured.
    let record = RunRecord::load(&results).ok();
    let report_dir = out.join("report");
    let reported = record.is_some() && write_report(&results, &report_dir).is_ok();

    // 4. One verdict line.
    let failed_doctor = doctor_report.as_ref().is_some_and(|r| r.failed());
    let verdict = match (&measured, failed_doctor) {
        (Ok(Outcome::Pass), false) => "PASS",
        _ => "FAIL",
    };
    let mut line = format!("netcheck check: {verdict}");
    if let Some(r) = &record {
        line.push_str(&format!(" — {}", describe(r)));
    }
    if let Err(e) = &measured {
        line.push_str(&format!(" — {e}"));
    } else if failed_doctor {
        line.push_str(&format!(
            " — doctor found a failing check (see {})",
            doctor_path.display()
        ));
    }
    if reported {
        line.push_str(&format!(
            " — report: {}",
            report_dir.join("report.html").display()
        ));
    }
    crate::output::stdout(&(line + "\n"))
        .map_err(|e| Error::infra(format!("writing to stdout: {e}")))?;
    // The doctor's outcome is decided where `netcheck doctor`'s is (DoctorReport::outcome).
    match (measured, doctor_report.as_ref().map(|r| r.outcome())) {
        (Err(e), _) => Err(e),
        (Ok(_), Some(Err(missing))) => Err(missing),
        (Ok(_), Some(Ok(Outcome::Fail))) => Ok(Outcome::Fail),
        (Ok(o), _) => Ok(o),
    }
}

fn write_report(results: &Path, dir: &Path) -> Result<()> {
    let run = crate::results::load_run(results)?;
    let mut doc = crate::report::Document::new(vec![run]);
    doc.config = crate::config::load_config(None, None)?;
    let exporters = crate::report::report_exporters(&doc);
    crate::report::write_all(&doc, &exporters, dir)?;
    Ok(())
}

/// `2 ranks on 1 host, inter-node transport none, peak busbw 290.2 GB/s (all_gather 1G), 0 wrong`.
fn describe(r: &RunRecord) -> String {
    let mut parts = vec![];
    match r.world_size {
        Some(1) => {
            parts.push("1 rank on 1 GPU: nothing measured between GPUs".to_string());
            if let Some(times) = crate::launch::local::one_gpu_times(&r.rows) {
                parts.push(format!("time per call {times}"));
            }
        }
        Some(n) => parts.push(format!("{n} ranks on {} host(s)", r.hosts.len().max(1))),
        None => {}
    }
    if let Some(a) = &r.analysis {
        let fallback = if a.socket_fallback == Some(true) {
            ", TCP socket fallback"
        } else {
            ""
        };
        parts.push(format!(
            "inter-node transport {}{fallback}",
            a.inter_node_transport.as_str()
        ));
    }
    let all_rows = r.rows.iter().chain(r.pairs.iter().flat_map(|p| &p.rows));
    if let Some(best) = all_rows
        .clone()
        .filter(|x| x.busbw_gbs.is_some_and(|b| b > 0.0))
        .max_by(|a, b| {
            a.busbw_gbs
                .unwrap_or(0.0)
                .total_cmp(&b.busbw_gbs.unwrap_or(0.0))
        })
    {
        parts.push(format!(
            "peak busbw {:.1} GB/s ({} {})",
            best.busbw_gbs.unwrap_or(0.0),
            best.op,
            crate::config::format_bytes(best.bytes)
        ));
    }
    let wrong: u64 = all_rows.filter_map(|x| x.wrong).sum();
    parts.push(format!("{wrong} wrong"));
    parts.join(", ")
}
