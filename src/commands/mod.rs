//! One file per command: its flags (clap) and the glue from flags to the modules that do the
//! work. Keep logic out of here; it belongs to the modules in `lib.rs`.

pub mod analyze;
pub mod check;
pub mod doctor;
pub mod fabric;
pub mod gate;
pub mod ingest;
pub mod launch;
pub mod report;
pub mod run;
pub mod worker;
