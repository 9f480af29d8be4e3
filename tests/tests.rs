//! Integration tests: one binary, one module per area (ripgrep's layout).

mod excerpt;
mod util;

mod analyze;
mod analyze_debug;
mod analyze_evidence;
mod analyze_kube;
mod analyze_props;
mod analyze_rules;
mod architecture;
mod cli;
mod doctor;
mod fabric;
mod fabric_check;
mod gate;
mod glibc_floor;
mod guards;
mod ingest;
mod inputs;
mod kube_env;
mod launch_cli;
mod launch_fake;
mod launch_flow;
mod launch_kube;
mod launch_manifest;
mod launch_plan;
mod ofi_matrix;
mod outputs;
mod rendezvous;
mod report;
mod streams;
