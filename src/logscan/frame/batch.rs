//! A chunk and what the reading thread found in it, so that reading, framing and
//! classifying run on one thread and folding the events into facts on another
//! (`Analyzer::feed_path`). Classification is a pure function of the message, so doing it
//! early changes nothing: replaying a batch hands the analysis the same lines and events, in
//! the same order, as framing and classifying the chunk on the analysis thread would.

use std::io::{self, Read};

use super::{Framer, RareNeedles, Sink, scan_gap};
use crate::logscan::event::{Event, EventOf, Memo, Offset, plugin_in_location, text_at};
use crate::logscan::input::{Chunks, json_log_text};
use crate::logscan::prefix::{
    Level, MARKER_LEN, Place, Record, SeenPrefixes, find_marker, for_each_record_at,
    for_each_record_in, none_known, strip_ansi,
};

/// Where a replayed batch goes.
pub trait Replay: Sink {
    /// A line whose records were classified already: `events` are those that carry an
    /// event, in order (the others say nothing).
    fn events<'a>(
        &mut self,
        line: &'a [u8],
        number: u64,
        events: impl Iterator<Item = (Place<'a>, Event<'a>)>,
    );
}

/// Most lines, events or markers one batch holds: a chunk of tiny lines that all matter
/// (`#` over and over) is split into several batches, so memory stays near the chunk size.
const MAX_ITEMS: usize = 16 * 1024;

/// One chunk (`buf[..len]`) and its lines that matter.
#[derive(Default)]
pub struct Batch {
    /// The chunk buffer; `input::Chunks` fills it and keeps its size.
    buf: Vec<u8>,
    len: usize,
    lines: Vec<Line>,
    /// The markers of `Records` lines, each line's in one run.
    markers: Vec<(usize, Level)>,
    /// The events of `Events` lines, each line's in one run.
    events: Vec<Located>,
    /// Wrapped lines classified here, as the analysis reads them: colour codes taken off, a
    /// JSON record's log text taken out (`Line::unwrapped`).
    unwrapped: Vec<u8>,
    /// Room to take a wrapped line's colour codes off in.
    scratch: Vec<u8>,
    seen: SeenPrefixes,
}

struct Line {
    kind: Kind,
    /// `start..end` lies in `Batch::unwrapped`, not in the chunk.
    unwrapped: bool,
    start: usize,
    end: usize,
    number: u64,
}

enum Kind {
    /// Classified: `events[from..to]`.
    Events {
        from: usize,
        to: usize,
    },
    /// Left to the analysis thread (busy reading, or a message that is not valid UTF-8):
    /// `markers[from..to]`.
    Records {
        from: usize,
        to: usize,
    },
    /// A wrapped line left to the analysis thread (as `Records`, or records glued onto one
    /// line, which are split knowing the processes seen so far).
    Wrapped,
    Other,
    /// Whole lines without `NCCL`, scanned for lines worth a look when replayed; `number`
    /// counts the lines before them.
    Gap,
}

/// A classified record: where it sits in its line and its event, the event's texts held as
/// places in its message, which starts at `msg` in the chunk or, for a wrapped line, in
/// `Batch::unwrapped` (as the memo keeps them).
struct Located {
    region: (u32, u32),
    first: bool,
    msg: u32,
    event: EventOf<Offset>,
}

impl Batch {
    /// Reads the next chunk of `chunks` and frames it, classifying its records too (through
    /// the reading thread's `memo`) if `classify()` says so once the chunk is read (else the
    /// analysis thread does, as for `feed`). A batch holds at most `MAX_ITEMS` lines or
    /// events: what did not fit goes back to `chunks` for the next one. `false` at the end of
    /// the input.
    pub fn fill<R: Read>(
        &mut self,
        chunks: &mut Chunks<R>,
        framer: &mut Framer,
        memo: &mut Memo,
        classify: impl FnOnce() -> bool,
    ) -> io::Result<bool> {
        // Nothing of the last chunk survives a refill, so spans never outlive their text.
        self.len = 0;
        self.lines.clear();
        self.markers.clear();
        self.events.clear();
        self.unwrapped.clear();
        let Some(len) = chunks.next_into(&mut self.buf)? else {
            return Ok(false);
        };
        let chunk = &self.buf[..len];
        let mut recorder = Recorder {
            chunk,
            classify: classify(),
            lines: &mut self.lines,
            markers: &mut self.markers,
            events: &mut self.events,
            unwrapped: &mut self.unwrapped,
            scratch: &mut self.scratch,
            seen: &mut self.seen,
            memo,
        };
        self.len = framer.chunk(chunk, &mut recorder);
        chunks.unread(&chunk[self.len..]);
        Ok(true)
    }

    /// Passes the lines and events to `sink`, in order.
    pub fn replay(&self, sink: &mut impl Replay) {
        let chunk = &self.buf[..self.len];
        let mut rare = RareNeedles::default();
        for line in &self.lines {
            let buf = if line.unwrapped {
                &self.unwrapped[..]
            } else {
                chunk
            };
            let text = &buf[line.start..line.end];
            match line.kind {
                Kind::Events { from, to } => {
                    let events = self.events[from..to].iter().map(|located| {
                        let place = Place {
                            line: text,
                            region: (located.region.0 as usize, located.region.1 as usize),
                            first: located.first,
                        };
                        let msg = &buf[located.msg as usize..];
                        // SAFETY: the offsets are the memo's for the message at `msg`, taken
                        // in `fill` from the chunk just read (or the unwrapped text made from
                        // it): they lie at char boundaries of bytes that were valid UTF-8 in
                        // place (`Memo::offsets`). The buffers are private and written only by
                        // the next `fill`, which first drops every event. So the bytes are
                        // the same valid UTF-8 they were.
                        let event = located.event.map(&mut |at| unsafe { text_at(msg, at) });
                        (place, event)
                    });
                    sink.events(text, line.number, events);
                }
                Kind::Records { from, to } => {
                    sink.records(text, &self.markers[from..to], line.number)
                }
                Kind::Wrapped => sink.wrapped_records(text, line.number),
                Kind::Other => sink.other(text, line.number),
                Kind::Gap => {
                    let mut lines = line.number;
                    scan_gap(chunk, line.start, line.end, &mut lines, &mut rare, sink);
                }
            }
        }
    }
}

/// Records what the framer passes on as positions in the chunk, classifying the records.
struct Recorder<'a> {
    chunk: &'a [u8],
    /// Whether to classify records here.
    classify: bool,
    lines: &'a mut Vec<Line>,
    markers: &'a mut Vec<(usize, Level)>,
    events: &'a mut Vec<Located>,
    unwrapped: &'a mut Vec<u8>,
    scratch: &'a mut Vec<u8>,
    /// Prefixes whose process has shown itself: their records without evidence are noise.
    seen: &'a mut SeenPrefixes,
    memo: &'a mut Memo,
}

impl Recorder<'_> {
    fn push(&mut self, text: &[u8], kind: Kind, number: u64) {
        // Lines are sub-slices of the chunk.
        let start = text.as_ptr() as usize - self.chunk.as_ptr() as usize;
        self.lines.push(Line {
            kind,
            unwrapped: false,
            start,
            end: start + text.len(),
            number,
        });
    }

    /// Classifies the records of `line` (a chunk line with `markers`) into `events`; `false`
    /// (and nothing kept) if an event's text does not lie in the chunk (a message decoded
    /// with replacements).
    fn classify(&mut self, line: &[u8], markers: &[(usize, Level)]) -> bool {
        let chunk = self.chunk;
        self.classify_records(chunk, |f| for_each_record_in(line, markers, none_known, f))
    }

    /// Classifies the records `for_each` gives (of a line in `buf`) into `events`, each
    /// message's place counted from the start of `buf`; `false` (and nothing kept) as for
    /// `classify`.
    fn classify_records<'l>(
        &mut self,
        buf: &[u8],
        for_each: impl FnOnce(&mut dyn FnMut(Record<'l>)),
    ) -> bool {
        let from = self.events.len();
        let mut in_chunk = true;
        for_each(&mut |record| {
            if !in_chunk {
                return;
            }
            // A plugin named by the WARN's source location: an event whose name is not in
            // the line. Rare; the analysis thread takes the line (`Analyzer::record`).
            if record.level == Level::Warn
                && plugin_in_location(record.place.before_marker()).is_some()
            {
                in_chunk = false;
                return;
            }
            // The event's texts as places in the message, which lies in `buf`.
            let msg = (record.msg.as_ptr() as usize)
                .checked_sub(buf.as_ptr() as usize)
                .filter(|&at| at + record.msg.len() <= buf.len());
            let (Some(msg), Some(event)) = (msg, self.memo.offsets(record.level, record.msg))
            else {
                in_chunk = false;
                return;
            };
            let Some(event) = event else {
                return;
            };
            if let EventOf::Presence = event
                && !self.seen.first_time(record.place.before_marker())
            {
                return;
            }
            self.events.push(Located {
                region: (record.place.region.0 as u32, record.place.region.1 as u32),
                first: record.place.first,
                msg: msg as u32,
                event,
            });
        });
        if !in_chunk {
            self.events.truncate(from);
        }
        in_chunk
    }

    /// Classifies a wrapped line's records as the analysis would read them
    /// (`Sink::wrapped_records` of `scan::Reading`): its JSON record's log text, colour codes
    /// off, kept in `unwrapped`. `false` when the analysis has to: records glued onto one line
    /// (split knowing the processes seen so far), or as for `classify`.
    fn classify_wrapped(&mut self, line: &[u8], number: u64) -> bool {
        let json = json_log_text(line);
        strip_ansi(json.as_deref().map_or(line, str::as_bytes), self.scratch);
        let Some(marker) = find_marker(self.scratch, 0) else {
            // No record once unwrapped: nothing for the analysis to do.
            return true;
        };
        if find_marker(self.scratch, marker.0 + MARKER_LEN).is_some() {
            return false;
        }
        let start = self.unwrapped.len();
        self.unwrapped.extend_from_slice(self.scratch);
        // Taken out while its records borrow it; `classify_records` does not touch it.
        let unwrapped = std::mem::take(self.unwrapped);
        let text = &unwrapped[start..];
        let from = self.events.len();
        let classified = self.classify_records(&unwrapped, |f| {
            for_each_record_at(text, marker, none_known, f)
        });
        *self.unwrapped = unwrapped;
        if !classified {
            self.unwrapped.truncate(start);
        } else if self.events.len() > from {
            let to = self.events.len();
            self.lines.push(Line {
                kind: Kind::Events { from, to },
                unwrapped: true,
                start,
                end: self.unwrapped.len(),
                number,
            });
        } else {
            // Only noise.
            self.unwrapped.truncate(start);
        }
        classified
    }
}

impl Sink for Recorder<'_> {
    fn is_full(&self) -> bool {
        self.lines.len() >= MAX_ITEMS
            || self.events.len() >= MAX_ITEMS
            || self.markers.len() >= MAX_ITEMS
    }

    fn records(&mut self, line: &[u8], markers: &[(usize, Level)], number: u64) {
        let from = self.events.len();
        // Records glued onto one line are split on the analysis thread, which knows the
        // processes seen so far (`prefix::for_each_record`).
        if !(self.classify && markers.len() == 1 && self.classify(line, markers)) {
            let from = self.markers.len();
            // Nearly every line has one record: a push, not a copy call.
            match markers {
                [one] => self.markers.push(*one),
                _ => self.markers.extend_from_slice(markers),
            }
            let to = self.markers.len();
            self.push(line, Kind::Records { from, to }, number);
        } else if self.events.len() > from {
            let to = self.events.len();
            self.push(line, Kind::Events { from, to }, number);
        }
        // Else only noise: nothing for the analysis to do.
    }

    fn wrapped_records(&mut self, line: &[u8], number: u64) {
        if !(self.classify && self.classify_wrapped(line, number)) {
            self.push(line, Kind::Wrapped, number);
        }
    }

    fn other(&mut self, line: &[u8], number: u64) {
        self.push(line, Kind::Other, number);
    }

    /// Gaps are scanned on the analysis thread: when the log is mostly other output, the
    /// reading thread would otherwise do nearly all the work.
    fn take_gap(&mut self, gap: &[u8], lines_before: u64) -> bool {
        if !gap.is_empty() {
            self.push(gap, Kind::Gap, lines_before);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logscan::event::classify;

    /// Every event a replay delivers, classified on either thread, as text. Records without
    /// evidence count once per prefix, as the analyzer counts them (`scan::presence`).
    #[derive(Default)]
    struct Log(Vec<String>, SeenPrefixes);

    impl Log {
        fn event(&mut self, place: Place, event: Event, number: u64) {
            if let Event::Presence = event
                && !self.1.first_time(place.before_marker())
            {
                return;
            }
            let before = String::from_utf8_lossy(place.before_marker()).into_owned();
            self.0
                .push(format!("{number} {before:?} {} {event:?}", place.first));
        }
    }

    impl Sink for Log {
        fn records(&mut self, line: &[u8], markers: &[(usize, Level)], number: u64) {
            for_each_record_in(line, markers, none_known, |record| {
                if let Some(event) = classify(record.level, &record.text()) {
                    self.event(record.place, event, number);
                }
            });
        }
        /// As `scan::Reading` reads them: the JSON record's log text, colour codes off.
        fn wrapped_records(&mut self, line: &[u8], number: u64) {
            let json = json_log_text(line);
            let mut clean = Vec::new();
            strip_ansi(json.as_deref().map_or(line, str::as_bytes), &mut clean);
            if let Some(marker) = find_marker(&clean, 0) {
                for_each_record_at(&clean, marker, none_known, |record| {
                    if let Some(event) = classify(record.level, &record.text()) {
                        self.event(record.place, event, number);
                    }
                });
            }
        }
        fn other(&mut self, line: &[u8], number: u64) {
            self.0.push(format!("{number} other {}", line.len()));
        }
    }

    impl Replay for Log {
        fn events<'a>(
            &mut self,
            _: &'a [u8],
            number: u64,
            events: impl Iterator<Item = (Place<'a>, Event<'a>)>,
        ) {
            for (place, event) in events {
                self.event(place, event, number);
            }
        }
    }

    fn replayed(chunk: &[u8], classify: bool) -> Vec<String> {
        let mut chunks = Chunks::new(chunk);
        let mut framer = Framer::default();
        let mut batch = Batch::default();
        let mut log = Log::default();
        let mut memo = Memo::default();
        while batch
            .fill(&mut chunks, &mut framer, &mut memo, || classify)
            .unwrap()
        {
            batch.replay(&mut log);
        }
        log.0
    }

    /// Wrapped lines of every kind: coloured (Ray), a JSON record, coloured records glued
    /// onto one line, a coloured message that is not valid UTF-8, a coloured WARN naming
    /// its plugin by its source location, colour codes inside the marker, noise.
    const WRAPPED: &[u8] = b"\x1b[36m(RayTrainWorker pid=7, ip=10.0.0.2)\x1b[0m w1:7:9 [0] NCCL INFO Using network Socket\n\
        {\"log\":\"w1:7:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\\n\",\"stream\":\"stderr\"}\n\
        \x1b[36m(w pid=7)\x1b[0m w1:7:9 [0] NCCL INFO Init COMPLETEw2:8:9 [1] NCCL INFO Using network IB\n\
        \x1b[36m(w pid=7)\x1b[0m w1:7:9 [0] NCCL INFO Using network So\xffcket\n\
        \x1b[36m(w pid=7)\x1b[0m w1:7:9 [0] net_fastsocket.cc:321 NCCL WARN Call to connect returned Connection refused\n\
        \x1b[36m(w pid=7)\x1b[0m w1:7:9 [0] NC\x1b[1mCL INFO NET/IB : No device found.\n\
        \x1b[36m(w pid=7)\x1b[0m w1:7:9 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n\
        \x1b[36m(w pid=7)\x1b[0m w1:7:9 [0] NCCL INFO threadThresholds 8/8/64 | 16/8/64 | 512 | 512\n";

    #[test]
    fn a_wrapped_line_is_classified_on_the_reading_thread_unwrapped() {
        let mut chunks = Chunks::new(WRAPPED);
        let mut batch = Batch::default();
        let (mut memo, mut framer) = (Memo::default(), Framer::default());
        assert!(
            batch
                .fill(&mut chunks, &mut framer, &mut memo, || true)
                .unwrap()
        );
        let kinds: Vec<String> = (batch.lines.iter())
            .map(|line| match line.kind {
                Kind::Events { .. } if line.unwrapped => "unwrapped events".to_string(),
                Kind::Wrapped => "wrapped".to_string(),
                _ => "other".to_string(),
            })
            .collect();
        // The glued records, the message that is not UTF-8 and the WARN naming its plugin
        // by location are the analysis thread's; a marker with colour codes inside is no
        // record to the framer; threadThresholds shows its prefix for the first time.
        let expected = [
            "unwrapped events",
            "unwrapped events",
            "wrapped",
            "wrapped",
            "wrapped",
            "other",
            "unwrapped events",
            "unwrapped events",
        ];
        assert_eq!(kinds, expected);
        let first = &batch.lines[0];
        assert_eq!(
            &batch.unwrapped[first.start..first.end],
            b"(RayTrainWorker pid=7, ip=10.0.0.2) w1:7:9 [0] NCCL INFO Using network Socket"
        );
    }

    #[test]
    fn classifying_on_the_reading_thread_changes_nothing() {
        let mut chunk = crate::logscan::fixture_logs();
        chunk.extend_from_slice(b"h:1:1 [0] NCCL INFO Using network So\xffcket\n");
        chunk.extend_from_slice(WRAPPED);
        let early = replayed(&chunk, true);
        assert!(early.len() > 500, "{}", early.len());
        assert_eq!(early, replayed(&chunk, false));
        // And as framing the chunk directly, gaps scanned in place.
        let mut direct = Log::default();
        Framer::default().chunk(&chunk, &mut direct);
        assert_eq!(early, direct.0);
    }
}
