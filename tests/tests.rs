//! Integration tests: one binary, one module per area (ripgrep's layout).

mod util;

mod cli;
mod doctor;
mod fabric;
mod rendezvous;
