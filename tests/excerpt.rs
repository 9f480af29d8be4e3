//! Shared helpers for the tests that run `analyze` on hand-written log excerpts
//! (tests/analyze_evidence.rs, tests/analyze_rules.rs, tests/analyze.rs).

use std::io::Cursor;

use netcheck::logscan::{Analysis, Finding, Options, Transport, analyze_reader};

/// (what it shows, log, inter_node_transport, socket_fallback, a basis it must list)
pub type Row = (
    &'static str,
    &'static str,
    Transport,
    Option<bool>,
    Option<&'static str>,
);

/// The analysis of an in-memory log, with the default options.
pub fn run(log: &str) -> Analysis {
    analyze_reader(Cursor::new(log.as_bytes()), "t.log", &Options::default()).expect("in memory")
}

/// Whether the analysis has a finding with this id.
#[allow(dead_code)]
pub fn has(a: &Analysis, id: &str) -> bool {
    a.findings.iter().any(|f| f.id == id)
}

/// The finding with this id, if any.
#[allow(dead_code)]
pub fn finding<'a>(a: &'a Analysis, id: &str) -> Option<&'a Finding> {
    a.findings.iter().find(|f| f.id == id)
}

/// Runs a row's log and asserts its transport, its socket fallback and the basis it must list;
/// returns the analysis for the caller's further checks.
pub fn decides(row: &Row) -> Analysis {
    let (what, log, transport, fallback, basis) = row;
    let a = run(log);
    assert_eq!(
        (a.inter_node_transport, a.socket_fallback),
        (*transport, *fallback),
        "{what}: basis {:?}, why {:?}",
        a.basis,
        a.why
    );
    if let Some(basis) = basis {
        assert!(
            a.basis.iter().any(|b| b == basis),
            "{what}: basis {:?} lacks {basis}",
            a.basis
        );
    }
    a
}
