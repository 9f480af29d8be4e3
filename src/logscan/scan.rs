//! The streaming driver: reads sources chunk by chunk, runs the lines that matter through
//! prefix → event → facts, and at the end hands the facts to `summary` for the `Analysis`.
//! Files are read, framed and (while the analysis has work waiting) classified on a second
//! thread, one chunk ahead: see `feed_path`.

use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, mpsc};

use super::analysis::{Analysis, Transport};
use super::event::{Event, Memo, plugin_in_location, version_number};
use super::facts::{self, Facts, Seen, decode};
use super::frame::{Batch, Framer, Replay, Sink};
use super::input;
use super::other_lines::{OtherWords, rank_row};
use super::prefix::{self, Level, Place, Record, strip_ansi, wrapper_tag};
use super::rank_cache::{Found, RankCache};
use super::summary;
use crate::error::Result;

/// What the caller expects; everything else is read from the logs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--expect`: the inter-node transport that must have been used; `None` for `any`.
    pub expect: Option<Transport>,
    /// The environment the ranks ran in, where the caller knows it (`run`, `check`, a pod's
    /// own `netcheck run`): `FI_PROVIDER`, `NCCL_NET`, `NCCL_NET_PLUGIN` say which path was
    /// asked for. A bare log does not show them (NCCL prints only some), so `analyze` leaves
    /// this empty.
    pub environment: Vec<(String, String)>,
    /// The launcher made the nodes on one machine on purpose (`run --simulate-nodes`, a
    /// different NCCL_HOSTID per node): judge the nodes NCCL counted as nodes, though every
    /// rank shows the same host name.
    pub simulated_nodes: bool,
}

/// Analyzes one stream (a file, stdin, a pod's log). `source_name` labels its evidence.
pub fn analyze_reader<R: Read>(
    reader: R,
    source_name: &str,
    options: &Options,
) -> io::Result<Analysis> {
    let mut analyzer = Analyzer::new(options.clone());
    let reader = input::maybe_gzip(io::BufReader::with_capacity(256 * 1024, reader))?;
    analyzer.feed(reader, source_name)?;
    Ok(analyzer.finish())
}

/// Analyzes files (`.gz` too; `-` is stdin) as one job. A missing or unreadable file is an
/// error naming it (exit 2).
pub fn analyze_paths(paths: &[PathBuf], options: &Options) -> Result<Analysis> {
    let mut analyzer = Analyzer::new(options.clone());
    for path in paths {
        analyzer.feed_path(path)?;
    }
    Ok(analyzer.finish())
}

/// Accumulates several sources (one per rank, one per pod) into one analysis.
pub struct Analyzer {
    options: Options,
    facts: Facts,
    buf: Vec<u8>,
    ansi_buf: Vec<u8>,
    ranks: RankCache,
    seen_prefixes: prefix::SeenPrefixes,
    memo: Memo,
}

impl Analyzer {
    pub fn new(options: Options) -> Self {
        let mut facts = Facts::default();
        facts.note_environment(&options.environment);
        facts.simulated_nodes = options.simulated_nodes;
        Analyzer {
            options,
            facts,
            buf: Vec::new(),
            ansi_buf: Vec::new(),
            ranks: RankCache::default(),
            seen_prefixes: prefix::SeenPrefixes::default(),
            memo: Memo::default(),
        }
    }

    /// Reads one source to its end.
    pub fn feed<R: Read>(&mut self, mut reader: R, source_name: &str) -> io::Result<()> {
        let source_index = self.add_source(source_name);
        let mut buf = std::mem::take(&mut self.buf);
        let mut framer = Framer::default();
        let source = self.facts.sources[source_index].clone();
        let mut reading = Reading {
            source: &source,
            analyzer: self,
            source_index,
        };
        let result = input::for_each_chunk(&mut reader, &mut buf, |chunk| {
            framer.chunk(chunk, &mut reading);
        });
        self.buf = buf;
        result
    }

    /// Opens and reads a path (`-` is stdin, gzip detected by content). With more than one
    /// CPU available, reading, decompressing and framing run on a second thread, one chunk
    /// ahead of the analysis; the result is the same as `feed`'s.
    pub fn feed_path(&mut self, path: &std::path::Path) -> Result<()> {
        if let Some(archive) = input::zip_archive(path)? {
            return self.feed_zip(path, archive);
        }
        let reader = match input::tar_or_log(input::open(path)?) {
            Ok(input::Unpacked::Log(reader)) => reader,
            Ok(input::Unpacked::Tar(archive)) => return self.feed_tar(path, archive),
            Err(e) => return Err(crate::error::Error::read(path, e)),
        };
        let name = input::source_name(path);
        // On one CPU (taskset, a cgroup quota of one) the threads would only take turns.
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let result = if cpus > 1 {
            self.feed_pipelined(reader, &name)
        } else {
            self.feed(reader, &name)
        };
        result.map_err(|e| crate::error::Error::read(path, e))
    }

    /// Reads each log in a zip archive as a source of its own, named `archive.zip:entry`
    /// (entries may be gzip files too). An entry that cannot be read is an error naming the
    /// archive and the entry.
    fn feed_zip(
        &mut self,
        path: &std::path::Path,
        mut archive: zip::ZipArchive<std::fs::File>,
    ) -> Result<()> {
        let archive_name = input::source_name(path);
        for index in 0..archive.len() {
            let failed = |e: io::Error, entry: &str| {
                crate::error::Error::read(format!("{archive_name}:{entry}"), e)
            };
            let entry = archive
                .by_index(index)
                .map_err(|e| failed(io::Error::other(e), &format!("entry {index}")))?;
            let name = entry.name().to_string();
            if !input::is_log_entry(&name, entry.is_dir()) {
                continue;
            }
            let reader = input::maybe_gzip(io::BufReader::with_capacity(256 * 1024, entry))
                .map_err(|e| failed(e, &name))?;
            self.feed(reader, &format!("{archive_name}:{name}"))
                .map_err(|e| failed(e, &name))?;
        }
        Ok(())
    }

    /// Reads each log in a tar archive (`.tar`, `.tar.gz`, `.tgz`: support bundles, `kubectl
    /// cp`, `tar czf - logs | netcheck analyze`) as a source of its own, named
    /// `archive.tar.gz:entry`, in the archive's order (entries may be gzip files too). A
    /// damaged or cut archive is an error naming it and the last entry read whole.
    fn feed_tar<R: Read>(
        &mut self,
        path: &std::path::Path,
        mut archive: tar::Archive<R>,
    ) -> Result<()> {
        let archive_name = input::source_name(path);
        let failed = |e: io::Error, at: &str| {
            let e = io::Error::new(e.kind(), format!("{e} (tar archive, at {at})"));
            crate::error::Error::read(&archive_name, e)
        };
        // The last entry read whole, for errors.
        let mut last: Option<String> = None;
        let next = |last: &Option<String>| match last {
            Some(name) => format!("the entry after {name}"),
            None => "its first entry".to_string(),
        };
        let entries = archive.entries().map_err(|e| failed(e, &next(&last)))?;
        for entry in entries {
            let entry = entry.map_err(|e| failed(e, &next(&last)))?;
            let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            let is_file = entry.header().entry_type().is_file();
            if input::is_log_entry(&name, !is_file) {
                let source = format!("{archive_name}:{name}");
                input::maybe_gzip(io::BufReader::with_capacity(256 * 1024, entry))
                    .and_then(|reader| self.feed(reader, &source))
                    .map_err(|e| failed(e, &name))?;
            }
            last = Some(name);
        }
        Ok(())
    }

    fn feed_pipelined<R: Read + Send>(&mut self, reader: R, source_name: &str) -> io::Result<()> {
        let source_index = self.add_source(source_name);
        let source = self.facts.sources[source_index].clone();
        let mut reading = Reading {
            source: &source,
            analyzer: self,
            source_index,
        };
        // Batches sent and not yet taken: the reader classifies records only while the
        // analysis has some waiting, so neither side idles whatever the log looks like.
        let waiting = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(1);
            let (spare_tx, spare_rx) = mpsc::channel::<Batch>();
            let waiting = &waiting;
            let reader = scope.spawn(move || read_batches(reader, &full_tx, &spare_rx, waiting));
            for batch in full_rx {
                waiting.fetch_sub(1, Ordering::Relaxed);
                batch.replay(&mut reading);
                // The reader may have stopped on an error; then the batch is not needed.
                let _ = spare_tx.send(batch);
            }
            reader
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    fn add_source(&mut self, name: &str) -> usize {
        self.facts.sources.push(name.into());
        self.facts.sources.len() - 1
    }

    fn record(&mut self, record: Record, seen: &Seen) {
        if record.level == Level::Warn
            && let Some(name) = plugin_in_location(record.place.before_marker())
        {
            let event = Event::PluginSelfNamed {
                name,
                connected: false,
            };
            self.event(&record.place, event, seen);
        }
        let mut text = None;
        if let Some(event) = self.memo.answer(record.level, record.msg, &mut text) {
            self.event(&record.place, event, seen);
        }
    }

    /// Records found on one line of `source`: where two processes' are glued together, the
    /// source's lines are torn between processes (`Facts::torn`).
    fn glued(&mut self, records: &[Record], source: usize) {
        let mut pids = records.iter().filter_map(|r| r.place.origin().pid);
        if let Some(first) = pids.next()
            && pids.any(|pid| pid != first)
        {
            self.facts.note_glued(source);
        }
    }

    /// Folds `event`, from the record at `place`.
    fn event(&mut self, place: &Place, event: Event, seen: &Seen) {
        if let Event::Presence = event {
            return self.presence(place, seen);
        }
        if let Some(rank) = self.rank_of(place, seen.source_index) {
            self.facts.apply(rank, event, seen);
        }
    }

    /// The rank a record belongs to: by NCCL's `host:pid` and device, else by the wrapper's
    /// tag within the source.
    /// A record without evidence still shows that its process exists (a rank whose only
    /// lines are `threadThresholds ...`); it adds no rank to a process already seen, whose
    /// helper threads print other devices.
    fn presence(&mut self, place: &Place, seen: &Seen) {
        if !self.seen_prefixes.first_time(place.before_marker())
            || self.ranks.find(place.before_marker()).is_some()
        {
            return;
        }
        let origin = place.origin();
        if let Some(process) = origin.process
            && !self.facts.knows(process)
            && let Some(rank) =
                self.facts
                    .rank_for(process, None, origin.host, origin.pid, origin.dev)
        {
            self.facts.apply(rank, Event::Presence, seen);
            self.ranks
                .remember(place.before_marker(), origin.prefix, rank);
        }
    }

    fn rank_of(&mut self, place: &Place, source_index: usize) -> Option<usize> {
        let before_marker = place.before_marker();
        match self.ranks.find(before_marker) {
            Some(Found {
                rank,
                other_thread: None,
                new_wrapper,
            }) => {
                // Only a rank holding a tag pays for a look at a new wrapper.
                if let Some(len) = new_wrapper
                    && place.first
                    && self.facts.ranks[rank].launcher_rank.is_some()
                {
                    self.check_launcher_rank(rank, &before_marker[..len], source_index);
                }
                return Some(rank);
            }
            // Another thread of a known process: as if parsed.
            Some(Found {
                rank,
                other_thread: Some(len),
                ..
            }) => {
                let (wrapper, prefix) = before_marker.split_at(before_marker.len() - len);
                self.ranks.remember(before_marker, prefix, rank);
                let wrapper = if place.first { wrapper } else { b"" };
                self.check_launcher_rank(rank, wrapper, source_index);
                return Some(rank);
            }
            None => {}
        }
        let origin = place.origin();
        let Some(process) = origin.process else {
            let tag = wrapper_tag(origin.wrapper);
            let key = format!("{source_index}\u{0}{}", tag.as_deref().unwrap_or(""));
            return self
                .facts
                .rank_for(&key, tag.as_deref(), None, None, origin.dev);
        };
        let rank = self
            .facts
            .rank_for(process, None, origin.host, origin.pid, origin.dev)?;
        self.ranks
            .remember(place.before_marker(), origin.prefix, rank);
        self.check_launcher_rank(rank, origin.wrapper, source_index);
        Some(rank)
    }

    /// The launcher's rank number in the tag of a prefix seen for the first time
    /// (`[1,12]<stdout>:`, `[rank12]:`, `12: `), `wrapper` being the text left of NCCL's prefix.
    /// A launcher's tag names one rank on all its lines, so a number that changes between a
    /// rank's wrappers (`cat -n`, `grep -n`: line numbers) is no rank: then no tag of that
    /// source is taken, those taken already included (`Facts::tags_vary`).
    fn check_launcher_rank(&mut self, rank: usize, wrapper: &[u8], source_index: usize) {
        if wrapper.is_empty() || self.facts.tags_vary_in.contains(&source_index) {
            return;
        }
        let r = &mut self.facts.ranks[rank];
        let hash = facts::text_hash_bytes(wrapper) | 1;
        if hash == r.wrapper_checked {
            return;
        }
        r.wrapper_checked = hash;
        let number = wrapper_tag(wrapper)
            .as_deref()
            .and_then(prefix::launcher_rank);
        match (r.launcher_rank, number) {
            (None, Some(number)) => {
                r.launcher_rank = Some(number);
                // The launcher tags a process: its other ranks (GPUs) carry the same number.
                let process = &self.facts.processes[r.process];
                let ranks = &self.facts.ranks;
                if process
                    .ranks
                    .iter()
                    .any(|&other| ranks[other].launcher_rank.is_some_and(|tag| tag != number))
                {
                    self.facts.tags_vary(source_index);
                }
            }
            (Some(tag), Some(number)) if number != tag => self.facts.tags_vary(source_index),
            _ => {}
        }
    }

    /// Lines without an NCCL record: the bare version line (≤ 2.21), PyTorch's NCCL errors and
    /// watchdog timeouts, libfabric warnings, nccl-tests' rank table.
    fn other_line(&mut self, seen: &Seen, text: &str) {
        if self.legacy_record(seen) {
            return;
        }
        let found = OtherWords::find(text);
        let facts = &mut self.facts;
        if let Some(at) = found.nccl_version
            && let Some(version) = version_number(&text[at + 13..])
        {
            facts.add_job_version(version, seen);
        }
        if found.has(OtherWords::TIMEOUT) {
            facts.timeouts.push(seen);
        } else if found.has(OtherWords::ERRORS) {
            facts.errors.push(seen);
        }
        if found.has(OtherWords::LIBFABRIC) && found.has(OtherWords::LIBFABRIC_TROUBLE) {
            facts.libfabric_warnings.push(seen);
        }
        if found.has(OtherWords::HASH)
            && let Some(row) = rank_row(text)
        {
            facts.header_rank(row.rank, row.host, row.pid, row.dev, seen);
        }
    }

    /// Decides the transport, runs the rules and returns the analysis.
    /// NCCL 2.2's `host:pid:tid [dev] INFO msg`, without the word `NCCL`: a record when
    /// NCCL's prefix is complete right before `INFO`.
    fn legacy_record(&mut self, seen: &Seen) -> bool {
        static LEGACY: LazyLock<memchr::memmem::Finder<'static>> =
            LazyLock::new(|| memchr::memmem::Finder::new(b"] INFO "));
        let raw = seen.raw;
        let Some(at) = LEGACY.find(raw) else {
            return false;
        };
        // Colour codes around the prefix (a viewer that colours every line): read without.
        if raw.contains(&0x1b) {
            let mut clean = std::mem::take(&mut self.ansi_buf);
            strip_ansi(raw, &mut clean);
            let clean_seen = Seen {
                raw: &clean,
                ..*seen
            };
            let found = !clean.contains(&0x1b) && self.legacy_record(&clean_seen);
            self.ansi_buf = clean;
            return found;
        }
        let marker = at + 2;
        let place = Place {
            line: raw,
            region: (0, marker),
            first: true,
        };
        let origin = place.origin();
        if origin.process.is_none() || origin.dev.is_none() || origin.prefix.is_empty() {
            return false;
        }
        let record = Record {
            level: Level::Info,
            msg: raw[marker + 5..].trim_ascii(),
            place,
        };
        self.record(record, seen);
        true
    }

    pub fn finish(self) -> Analysis {
        self.analysis()
    }

    /// The analysis of everything fed so far; more sources may still be fed afterwards.
    pub fn analysis(&self) -> Analysis {
        summary::analysis(&self.facts, self.options.expect)
    }
}

/// The reading side of `feed_pipelined`: reads and frames chunks into batches (reusing the
/// ones the analysis hands back) until the input ends or the analysis stops listening.
fn read_batches<R: Read>(
    reader: R,
    full: &mpsc::SyncSender<Batch>,
    spare: &mpsc::Receiver<Batch>,
    waiting: &AtomicUsize,
) -> io::Result<()> {
    let mut chunks = input::Chunks::new(reader);
    let mut framer = Framer::default();
    let mut memo = Memo::default();
    // One batch is read while one waits and one is analysed: three in all, so the chunk
    // buffers are allocated (and their pages touched) once, not once per chunk.
    let mut made = 0;
    loop {
        let mut batch = match spare.try_recv() {
            Ok(batch) => batch,
            Err(_) if made < 3 => {
                made += 1;
                Batch::default()
            }
            Err(_) => match spare.recv() {
                Ok(batch) => batch,
                // The analysis stopped.
                Err(_) => return Ok(()),
            },
        };
        let analysis_busy = || waiting.load(Ordering::Relaxed) > 0;
        if !batch.fill(&mut chunks, &mut framer, &mut memo, analysis_busy)? {
            return Ok(());
        }
        waiting.fetch_add(1, Ordering::Relaxed);
        if full.send(batch).is_err() {
            return Ok(());
        }
    }
}

/// One source being read: where the framer's lines go.
struct Reading<'a> {
    analyzer: &'a mut Analyzer,
    /// `Facts::sources[source_index]`, which its evidence shares.
    source: &'a std::sync::Arc<str>,
    source_index: usize,
}

impl Reading<'_> {
    fn seen<'l>(&self, raw: &'l [u8], line: u64) -> Seen<'l>
    where
        Self: 'l,
    {
        Seen {
            source: self.source,
            source_index: self.source_index,
            line,
            raw,
        }
    }
}

impl Replay for Reading<'_> {
    fn events<'a>(
        &mut self,
        raw: &'a [u8],
        line: u64,
        events: impl Iterator<Item = (Place<'a>, Event<'a>)>,
    ) {
        let seen = self.seen(raw, line);
        for (place, event) in events {
            self.analyzer.event(&place, event, &seen);
        }
    }
}

impl Sink for Reading<'_> {
    fn records(&mut self, raw: &[u8], markers: &[(usize, Level)], line: u64) {
        let seen = self.seen(raw, line);
        let analyzer = &mut *self.analyzer;
        if let [_] = markers {
            let none = prefix::none_known;
            prefix::for_each_record_in(raw, markers, none, |record| analyzer.record(record, &seen));
            return;
        }
        // Glued records: split knowing the processes seen so far, then folded.
        let mut records = Vec::with_capacity(markers.len());
        let known = |host: &str| analyzer.facts.knows_host(host);
        prefix::for_each_record_in(raw, markers, known, |record| records.push(record));
        analyzer.glued(&records, self.source_index);
        for record in records {
            analyzer.record(record, &seen);
        }
    }

    fn wrapped_records(&mut self, raw: &[u8], line: u64) {
        // A JSON record: its log text. Then colour codes around the wrapper: dropped so
        // evidence reads cleanly.
        let json = input::json_log_text(raw);
        let raw = json.as_deref().map_or(raw, str::as_bytes);
        let mut clean = std::mem::take(&mut self.analyzer.ansi_buf);
        strip_ansi(raw, &mut clean);
        if let Some(marker) = prefix::find_marker(&clean, 0) {
            let seen = self.seen(&clean, line);
            let analyzer = &mut *self.analyzer;
            if prefix::find_marker(&clean, marker.0 + prefix::MARKER_LEN).is_none() {
                let none = prefix::none_known;
                prefix::for_each_record_at(&clean, marker, none, |r| analyzer.record(r, &seen));
            } else {
                // Glued records, as in `records`.
                let mut records = Vec::new();
                let known = |host: &str| analyzer.facts.knows_host(host);
                prefix::for_each_record_at(&clean, marker, known, |r| records.push(r));
                analyzer.glued(&records, self.source_index);
                for record in records {
                    analyzer.record(record, &seen);
                }
            }
        }
        self.analyzer.ansi_buf = clean;
    }

    fn other(&mut self, raw: &[u8], line: u64) {
        let json = input::json_log_text(raw);
        let raw = json.as_deref().map_or(raw, str::as_bytes);
        let seen = self.seen(raw, line);
        self.analyzer.other_line(&seen, &decode(raw));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logscan::analysis::Evidence;

    /// The analysis of `log` read through batches, classified on the reading side or not.
    fn analysis_via_batches(log: &[u8], classify_early: bool) -> Analysis {
        let mut analyzer = Analyzer::new(Options::default());
        let source_index = analyzer.add_source("t");
        let source = analyzer.facts.sources[source_index].clone();
        let mut reading = Reading {
            source: &source,
            analyzer: &mut analyzer,
            source_index,
        };
        let mut chunks = input::Chunks::new(log);
        let mut framer = Framer::default();
        let mut batch = Batch::default();
        let mut memo = Memo::default();
        while batch
            .fill(&mut chunks, &mut framer, &mut memo, || classify_early)
            .unwrap()
        {
            batch.replay(&mut reading);
        }
        analyzer.finish()
    }

    #[test]
    fn classifying_on_the_reading_thread_gives_the_same_analysis() {
        let mut log = crate::logscan::fixture_logs();
        // A plugin named by its WARN's source location, plain and coloured.
        log.extend_from_slice(
            b"g:1:5 [0] net_fastsocket.cc:321 NCCL WARN Call to connect returned Connection refused\n\
              \x1b[36m(w pid=1)\x1b[0m g:2:5 [1] tcpxCommProgress:456 NCCL WARN NET/GPUDirectTCPX : oops\n",
        );
        // Wrapped lines, which the reading thread classifies unwrapped: Ray's colours, a
        // JSON record, and coloured records glued onto one line (left to the analysis).
        log.extend_from_slice(
            b"\x1b[36m(RayTrainWorker pid=7, ip=10.0.0.2)\x1b[0m w1:7:9 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n\
              \x1b[36m(RayTrainWorker pid=7, ip=10.0.0.2)\x1b[0m w1:7:9 [0] NCCL INFO Using network Socket\n\
              {\"log\":\"w2:8:9 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [send] via NET/Socket/0\\n\"}\n\
              \x1b[36m(w pid=7)\x1b[0m w1:7:9 [0] NCCL INFO Init COMPLETEw2:8:9 [1] NCCL INFO Using network IB\n",
        );
        let early = analysis_via_batches(&log, true);
        assert!(early.per_rank.len() > 20, "{}", early.per_rank.len());
        let late = analysis_via_batches(&log, false);
        assert_eq!(early, late);
    }

    #[test]
    fn repeated_ib_device_lists_merge_as_they_did_when_each_was_parsed() {
        let line = |ports: &str| {
            format!("h:1:1 [0] NCCL INFO NET/IB : Using {ports}; OOB ib0:10.0.0.1<0>\n")
        };
        let mut log = String::new();
        for _ in 0..3 {
            log += &line("[0]mlx5_0:1/IB ");
        }
        // 2.2/2.3 print one port per line: more distinct lists than are remembered.
        for port in 1..12 {
            log += &line(&format!("[{port}]mlx5_{port}:1/RoCE "));
            log += &line("[0]mlx5_0:1/IB ");
        }
        let a = analyze_reader(log.as_bytes(), "t", &Options::default()).unwrap();
        let devices = &a.per_rank[0].net_devices;
        assert_eq!(devices.len(), 12, "{devices:?}");
        assert_eq!(devices[0], "mlx5_0/IB");
        assert_eq!(devices[11], "mlx5_11/RoCE");
    }

    #[test]
    fn evidence_of_one_source_shares_its_name() {
        let log = crate::logscan::fixture_logs();
        let a = analyze_reader(&log[..], "job.log", &Options::default()).unwrap();
        let evidence: Vec<&Evidence> = a.findings.iter().flat_map(|f| &f.evidence).collect();
        assert!(evidence.len() > 10, "{}", evidence.len());
        for e in &evidence {
            assert_eq!(&*e.source, "job.log");
            assert!(
                std::sync::Arc::ptr_eq(&e.source, &evidence[0].source),
                "{e:?}"
            );
        }
    }
}
