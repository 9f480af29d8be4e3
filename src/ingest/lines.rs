//! Lines as users paste them: what launchers, log collectors and docs put in front of
//! nccl-tests' own text, and the collectives a line of prose or a file name mentions.

use std::sync::LazyLock;

use regex::Regex;

/// Prefixes that wrap every line, removed repeatedly from the start:
/// Open MPI `--tag-output` (`[1,0]<stdout>:`), `kubectl logs --prefix` (`[pod/x/c] `),
/// `kubectl logs --timestamps` (RFC 3339), Slurm `srun -l` (`0: `, ` 12: `), Intel MPI and
/// MPICH `-l`/`-prepend-rank` (`[0] `), torch's `[rank0]: `, markdown quotes (`> `), and a
/// fork's source locations (`run(), common.cu:967, `).
static WRAPPERS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\[pod/[^\]]+\] ?|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)? |\s*\d{1,6}: ?|\[\d{1,6}\] |\[rank\d+\]:? ?|>(?: |$)|\s*\w+\(\), [\w.]+:\d+, ?)",
    )
    .expect("valid regex")
});

/// pdsh/clush `host: ` — removed only when nccl-tests text follows (a `#` line or a row), so
/// `Warning: ...` and `NOTE: ...` prose stays as it is.
static HOST_TAG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z][\w.-]*: +").expect("valid regex"));

static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:\S+ )?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)) ")
        .expect("valid regex")
});

/// The time a log collector stamped on the line (`kubectl logs --timestamps`), if any.
pub fn collector_timestamp(raw: &str) -> Option<&str> {
    TIMESTAMP
        .captures(raw)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str())
}

static ANSI: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]").expect("valid regex"));

/// The text without terminal colour codes (kubectl, Ray and CI logs keep them).
pub fn without_ansi(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\x1b') {
        ANSI.replace_all(text, "")
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// The line without launcher prefixes and surrounding blanks (markdown indentation).
pub fn strip_prefixes(raw: &str) -> &str {
    let mut line = raw.trim_end_matches(['\r', '\n']);
    loop {
        let before = line.len();
        if let Some(m) = WRAPPERS.find(line) {
            line = &line[m.end()..];
        }
        if let Some(m) = HOST_TAG.find(line) {
            let rest = &line[m.end()..];
            if rest.starts_with('#') || rest.starts_with(|c: char| c.is_ascii_digit()) {
                line = rest;
            }
        }
        if line.len() == before {
            break;
        }
    }
    line.trim()
}

/// Word sequences naming each collective, longest first so `all reduce` is not `reduce`.
const NAMES: &[(&[&str], &str)] = &[
    (&["reduce", "scatter"], "reduce_scatter"),
    (&["reducescatter"], "reduce_scatter"),
    (&["all", "to", "all", "v"], "alltoallv"),
    (&["all", "to", "all"], "alltoall"),
    (&["alltoallv"], "alltoallv"),
    (&["alltoall"], "alltoall"),
    (&["all", "reduce"], "all_reduce"),
    (&["allreduce"], "all_reduce"),
    (&["all", "gather"], "all_gather"),
    (&["allgather"], "all_gather"),
    (&["send", "recv"], "sendrecv"),
    (&["sendrecv"], "sendrecv"),
    (&["broadcast"], "broadcast"),
    (&["hypercube"], "hypercube"),
    (&["reduce"], "reduce"),
    (&["gather"], "gather"),
    (&["scatter"], "scatter"),
];

/// The collectives a text names as whole words, in order: `all_gather_perf`, `AllGather`,
/// `all-reduce`, `allgather.sh`, `A Scatter test`. `gathered` or `reduced` are not names.
pub fn mentions(text: &str) -> Vec<&'static str> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < words.len() {
        match NAMES.iter().find(|(seq, _)| words[i..].starts_with(seq)) {
            Some((seq, op)) => {
                found.push(*op);
                i += seq.len();
            }
            None => i += 1,
        }
    }
    found
}

/// The nccl-tests binary a command line runs (`./build/all_gather_perf -b 8`,
/// `mpirun ... alltoall_perf_mpi`), when it names exactly one.
pub fn binary_in_command(line: &str) -> Option<&'static str> {
    let mut ops: Vec<&'static str> = line
        .split(|c: char| c.is_whitespace() || "`'\"();|&,".contains(c))
        .filter_map(|token| {
            let base = token.rsplit('/').next()?;
            let stem = base
                .strip_suffix("_perf_mpi")
                .or_else(|| base.strip_suffix("_perf"))?;
            super::KNOWN_NCCL_TESTS_OPS
                .iter()
                .find(|op| **op == stem)
                .copied()
        })
        .collect();
    ops.dedup();
    (ops.len() == 1).then(|| ops[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_are_removed() {
        for line in [
            "[1,0]<stdout>:#  Rank  0 Group  0 Pid 1 on a device  0 [0000:00:06] GPU",
            "2026-11-30T02:26:05.123456789Z #  Rank  0 Group  0 Pid 1 on a device  0 [x] GPU",
            "[pod/nccl-0/worker] #  Rank  0 Group  0 Pid 1 on a device  0 [x] GPU",
            " 0: #  Rank  0 Group  0 Pid 1 on a device  0 [x] GPU",
            "12: #  Rank  0 Group  0 Pid 1 on a device  0 [x] GPU",
            "run(), common.cu:998, #  Rank  0 Group  0 Pid 1 on a device  0 [x] GPU",
            "gpu-node-3: #  Rank  0 Group  0 Pid 1 on a device  0 [x] GPU",
            "[3] #  Rank  0 Group  0 Pid 1 on a device  0 [x] GPU",
            "[rank0]: #  Rank  0 Group  0 Pid 1 on a device  0 [x] GPU",
            "> > #  Rank  0 Group  0 Pid 1 on a device  0 [x] GPU",
            "    #  Rank  0 Group  0 Pid 1 on a device  0 [x] GPU",
        ] {
            assert!(strip_prefixes(line).starts_with("#  Rank"), "{line}");
        }
        assert_eq!(
            strip_prefixes("node-1:      1024   256  float"),
            "1024   256  float"
        );
        assert_eq!(
            strip_prefixes("Warning: Permanently added 'x'"),
            "Warning: Permanently added 'x'"
        );
        // A data row is never taken for a prefix.
        assert!(strip_prefixes("     1048576  262144  float").starts_with("1048576"));
    }

    #[test]
    fn timestamps_and_colours() {
        assert_eq!(
            collector_timestamp("2026-11-30T02:26:05.5Z #  Rank  0 ..."),
            Some("2026-11-30T02:26:05.5Z")
        );
        assert_eq!(
            collector_timestamp("[pod/a/b] 2026-11-30T02:26:05Z   1024 ..."),
            Some("2026-11-30T02:26:05Z")
        );
        assert_eq!(collector_timestamp("   1024  256  float"), None);
        assert_eq!(without_ansi("\x1b[32m# nThread\x1b[0m 1"), "# nThread 1");
    }

    #[test]
    fn mentions_are_whole_words() {
        assert_eq!(mentions("./build/all_gather_perf -b 8"), vec!["all_gather"]);
        assert_eq!(mentions("/scripts/allgather.sh host-1"), vec!["all_gather"]);
        assert_eq!(mentions("A Scatter performance test"), vec!["scatter"]);
        assert_eq!(mentions("nccl_reducescatter.log"), vec!["reduce_scatter"]);
        assert_eq!(mentions("the all-reduce latency"), vec!["all_reduce"]);
        assert!(mentions("we gathered and reduced the scattered data").is_empty());
    }

    #[test]
    fn commands_name_one_binary() {
        assert_eq!(
            binary_in_command("mpirun -np 2 ./build/alltoall_perf -b 8 -e 1G"),
            Some("alltoall")
        );
        assert_eq!(
            binary_in_command("$ srun -N2 all_reduce_perf -b 1M"),
            Some("all_reduce")
        );
        assert_eq!(
            binary_in_command("`all_gather_perf` benchmark"),
            Some("all_gather")
        );
        assert_eq!(
            binary_in_command("### nccl-tests: all_reduce_perf, all_gather_perf"),
            None
        );
        assert_eq!(binary_in_command("perf stat ./a.out"), None);
    }
}
