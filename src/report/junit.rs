//! `--junit FILE`: the gate's cases as JUnit XML, one `<testsuite>` per class
//! (`netcheck.curve.<op>`, `netcheck.expect`), one `<testcase>` per op×size or expectation.
//! Failures carry a message saying what missed and by how much; skipped cases say why.

use super::{Document, Exporter};
use crate::error::{Error, Result};
use crate::gate::{Case, Outcome};

pub struct Junit;

impl Exporter for Junit {
    fn file_name(&self) -> String {
        "junit.xml".into()
    }

    fn render(&self, doc: &Document) -> Result<Vec<u8>> {
        let gate = doc.gate.as_ref().ok_or_else(|| {
            Error::usage("JUnit output needs a gate verdict (netcheck gate --junit)")
        })?;
        let mut classes: Vec<&str> = Vec::new();
        for c in &gate.cases {
            if !classes.contains(&c.class.as_str()) {
                classes.push(&c.class);
            }
        }
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        xml += &format!(
            "<testsuites name=\"netcheck gate\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" errors=\"0\" time=\"0\">\n",
            gate.cases.len(),
            gate.failed,
            gate.skipped
        );
        for class in classes {
            let cases: Vec<&Case> = gate.cases.iter().filter(|c| c.class == class).collect();
            let count = |o: Outcome| cases.iter().filter(|c| c.outcome == o).count();
            xml += &format!(
                "  <testsuite name=\"netcheck.{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" errors=\"0\" time=\"0\">\n",
                esc(class),
                cases.len(),
                count(Outcome::Fail),
                count(Outcome::Skip)
            );
            for case in cases {
                xml += &testcase(case);
            }
            xml += "  </testsuite>\n";
        }
        xml += "</testsuites>\n";
        Ok(xml.into_bytes())
    }
}

fn testcase(case: &Case) -> String {
    let mut s = format!(
        "    <testcase classname=\"netcheck.{}\" name=\"{}\" time=\"0\">\n",
        esc(&case.class),
        esc(&case.name)
    );
    match case.outcome {
        Outcome::Fail => {
            let failures: Vec<_> = case.failures().collect();
            s += &format!(
                "      <failure message=\"{}\" type=\"{}\">{}</failure>\n",
                esc(&failures[0].message),
                failures[0].kind.as_str(),
                esc(&failures
                    .iter()
                    .map(|f| format!("{}: {}", f.kind.as_str(), f.message))
                    .collect::<Vec<_>>()
                    .join("\n"))
            );
        }
        Outcome::Skip => {
            let why = case.checks.first().map_or("", |c| c.message.as_str());
            s += &format!("      <skipped message=\"{}\"/>\n", esc(why));
        }
        Outcome::Pass => {}
    }
    let log: Vec<String> = case
        .checks
        .iter()
        .map(|c| {
            let outcome = format!("{:?}", c.outcome).to_lowercase();
            format!("{outcome} {}: {}", c.kind.as_str(), c.message)
        })
        .collect();
    s += &format!("      <system-out>{}</system-out>\n", esc(&log.join("\n")));
    s + "    </testcase>\n"
}

/// XML text and attribute escaping; characters XML 1.0 cannot carry are dropped.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out += "&amp;",
            '<' => out += "&lt;",
            '>' => out += "&gt;",
            '"' => out += "&quot;",
            '\'' => out += "&apos;",
            '\n' => out += "&#10;",
            '\t' | '\r' => out.push(' '),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}
