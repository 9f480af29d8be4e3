//! A chunk and the lines of it that matter, as the framer found them, so that reading and
//! framing can run on one thread and the analysis of the lines on another
//! (`Analyzer::feed_path`). Replaying a batch calls the sink exactly as framing the chunk
//! directly would have.

use super::{Framer, Sink};
use crate::logscan::prefix::Level;

/// One chunk: its bytes (`buf[..len]`) and its lines that matter.
#[derive(Default)]
pub struct Batch {
    /// The chunk buffer; `input::Chunks` fills it and keeps its size.
    pub buf: Vec<u8>,
    len: usize,
    lines: Vec<Line>,
    /// The markers of all `Records` lines, each line's in one run.
    markers: Vec<(usize, Level)>,
}

struct Line {
    kind: Kind,
    start: usize,
    end: usize,
    number: u64,
}

enum Kind {
    /// `markers[from..to]` are this line's markers.
    Records {
        from: usize,
        to: usize,
    },
    Coloured,
    Other,
}

impl Batch {
    /// Frames the chunk `buf[..len]` (just read).
    pub fn frame(&mut self, framer: &mut Framer, len: usize) {
        self.len = len;
        self.lines.clear();
        self.markers.clear();
        let buf = std::mem::take(&mut self.buf);
        let mut recorder = Recorder {
            base: buf.as_ptr() as usize,
            lines: &mut self.lines,
            markers: &mut self.markers,
        };
        framer.chunk(&buf[..len], &mut recorder);
        self.buf = buf;
    }

    /// Passes the recorded lines to `sink`, in order.
    pub fn replay(&self, sink: &mut impl Sink) {
        let chunk = &self.buf[..self.len];
        for line in &self.lines {
            let text = &chunk[line.start..line.end];
            match line.kind {
                Kind::Records { from, to } => {
                    sink.records(text, &self.markers[from..to], line.number)
                }
                Kind::Coloured => sink.coloured_records(text, line.number),
                Kind::Other => sink.other(text, line.number),
            }
        }
    }
}

/// Records what the framer passes on, as offsets into the chunk.
struct Recorder<'a> {
    /// Address of the chunk's first byte: lines are sub-slices of it.
    base: usize,
    lines: &'a mut Vec<Line>,
    markers: &'a mut Vec<(usize, Level)>,
}

impl Recorder<'_> {
    fn push(&mut self, text: &[u8], kind: Kind, number: u64) {
        let start = text.as_ptr() as usize - self.base;
        self.lines.push(Line {
            kind,
            start,
            end: start + text.len(),
            number,
        });
    }
}

impl Sink for Recorder<'_> {
    fn records(&mut self, line: &[u8], markers: &[(usize, Level)], number: u64) {
        let from = self.markers.len();
        self.markers.extend_from_slice(markers);
        let to = self.markers.len();
        self.push(line, Kind::Records { from, to }, number);
    }

    fn coloured_records(&mut self, line: &[u8], number: u64) {
        self.push(line, Kind::Coloured, number);
    }

    fn other(&mut self, line: &[u8], number: u64) {
        self.push(line, Kind::Other, number);
    }
}
