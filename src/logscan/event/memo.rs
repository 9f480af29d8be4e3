//! `classify` remembered per distinct message. NCCL prints the same messages again for every
//! rank and every communicator (`Channel 00/0 : 0[0] -> 1[1] via P2P/IPC`, the ring
//! listings, `NET/IB : No device found.`, `Connected all rings`), and `classify` is a pure
//! function of the level and the message, so a message seen before takes a hash and one
//! comparison instead of being parsed again. The memo is keyed by the message's bytes, so a
//! message seen before is not even decoded; the answer is kept as positions in the message,
//! so it applies to the same text wherever it stands.

use std::borrow::Cow;

use super::{Event, EventOf, classify};
use crate::logscan::prefix::{Level, same_bytes};

/// Distinct messages remembered, far more than one job's kinds of lines: sets of `WAYS`
/// slots chosen by hash, so two messages that share a set (a few dozen pairs among a log's
/// few hundred messages) do not push each other out once per rank, as they did when each
/// had one slot.
const SLOTS: usize = 4096;
const WAYS: usize = 4;

/// The first slot of the set `hash` picks.
fn set_of(hash: u64) -> usize {
    (hash as usize % (SLOTS / WAYS)) * WAYS
}

/// Longer messages are classified each time. `Trees` lines of 32 channels, ring listings of
/// 64 ranks and the IB device lists of big hosts fit (a `Trees` line costs 6 000 instructions
/// to classify).
const MAX_TEXT: usize = 1024;
/// Bytes of remembered texts before the memo starts over (a message pushed out of its set
/// leaves its entry and text unused until then).
const MAX_TEXTS: usize = 1 << 20;
/// Entries before it starts over, for the same reason.
const MAX_ENTRIES: usize = 4 * SLOTS;

/// Bits of a slot that hold an entry number + 1 (at most `MAX_ENTRIES`); the bits above
/// hold the top of the message's hash.
const INDEX_BITS: u32 = 15;
const INDEX: u32 = (1 << INDEX_BITS) - 1;
const _: () = assert!(MAX_ENTRIES < 1 << INDEX_BITS);

/// The top bits of `hash`, in a slot's place for them.
fn tag_of(hash: u64) -> u32 {
    (hash >> 32) as u32 & !INDEX
}

/// Where an event's text lies in its message: `msg[start..start + len]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offset {
    pub start: u32,
    pub len: u32,
}

/// A remembered message: its text is `texts[start..start + len]`.
struct Entry {
    level: Level,
    start: u32,
    len: u32,
    event: Option<EventOf<Offset>>,
}

/// One thread's memo of `classify`. The slots hold entry numbers and the texts lie in one
/// buffer, so the few hundred messages a log repeats sit in a few dozen KiB, close together
/// in cache, whatever their slots. Each slot also holds the top bits of its message's hash
/// (`TAG`), so a lookup reads the entry and the text of the one message that can match, not
/// those of every message in the set (with the chunk streaming through the cache, each such
/// read was a likely miss).
pub struct Memo {
    /// Per slot: the top `32 - INDEX_BITS` bits of the message's hash above `entries` index
    /// + 1; 0 while empty.
    slots: Box<[u32]>,
    entries: Vec<Entry>,
    texts: Vec<u8>,
}

impl Default for Memo {
    fn default() -> Self {
        Memo {
            slots: vec![0; SLOTS].into_boxed_slice(),
            entries: Vec::new(),
            texts: Vec::new(),
        }
    }
}

impl Memo {
    /// `classify`'s answer for the message whose bytes are `raw`: from the memo, or else
    /// classified and remembered. A new message is decoded into `text`, which the event may
    /// borrow.
    pub fn answer<'m>(
        &mut self,
        level: Level,
        raw: &'m [u8],
        text: &'m mut Option<Cow<'m, str>>,
    ) -> Option<Event<'m>> {
        if let Some(event) = self.lookup(level, raw) {
            return event;
        }
        let msg: &'m str = text.insert(crate::logscan::prefix::decode_message(raw));
        self.learn(level, raw, msg)
    }

    /// Classifies `msg`, the decoding of `raw`, and remembers the answer when its texts are
    /// places in `raw` (`offsets_in`).
    fn learn<'m>(&mut self, level: Level, raw: &[u8], msg: &'m str) -> Option<Event<'m>> {
        let event = classify(level, msg);
        if let Some(offsets) = offsets_in(raw, msg, event) {
            self.remember(level, raw, offsets);
        }
        event
    }

    /// `classify`'s answer for the message whose bytes are `raw`, each text of the event as
    /// its place in `raw`: from the memo, or else classified and remembered. `None` when a
    /// text does not lie in `raw` as it stands (a constant name, a message that is not valid
    /// UTF-8): the caller classifies that record itself. The reading thread keeps these
    /// places, which hold for the same bytes wherever they stand (`frame::batch`).
    pub fn offsets(&mut self, level: Level, raw: &[u8]) -> Option<Option<EventOf<Offset>>> {
        if let Some(entry) = self.find(level, raw) {
            return Some(entry.event);
        }
        let text = crate::logscan::prefix::decode_message(raw);
        let offsets = offsets_in(raw, &text, classify(level, &text))?;
        self.remember(level, raw, offsets);
        Some(offsets)
    }

    /// `classify`'s answer for the message whose bytes are `raw`, if the memo has it.
    fn lookup<'m>(&self, level: Level, raw: &'m [u8]) -> Option<Option<Event<'m>>> {
        let entry = self.find(level, raw)?;
        Some(entry.event.map(|event| {
            // SAFETY: `raw` equals the entry's text, which was remembered only when it was
            // valid UTF-8 as it stood (decoded without a copy: `offsets_in`), and each offset
            // is where an event's `&str` lay in it: at char boundaries of the same bytes.
            event.map(&mut |at| unsafe { text_at(raw, at) })
        }))
    }

    /// The entry of the message whose bytes are `raw`, if the memo has it.
    fn find(&self, level: Level, raw: &[u8]) -> Option<&Entry> {
        if raw.len() > MAX_TEXT {
            return None;
        }
        let hash = text_hash(raw);
        let set = set_of(hash);
        let tag = tag_of(hash);
        self.slots[set..set + WAYS].iter().find_map(|&slot| {
            if slot & !INDEX != tag {
                return None;
            }
            let entry = &self.entries[(slot & INDEX).checked_sub(1)? as usize];
            let known = &self.texts[entry.start as usize..(entry.start + entry.len) as usize];
            (entry.level == level && same_bytes(known, raw)).then_some(entry)
        })
    }

    /// Remembers the answer for `raw` (unless it is too long to be kept).
    fn remember(&mut self, level: Level, raw: &[u8], event: Option<EventOf<Offset>>) {
        if raw.len() > MAX_TEXT {
            return;
        }
        if self.texts.len() + raw.len() > MAX_TEXTS || self.entries.len() >= MAX_ENTRIES {
            self.slots.fill(0);
            self.entries.clear();
            self.texts.clear();
        }
        let hash = text_hash(raw);
        self.entries.push(Entry {
            level,
            start: self.texts.len() as u32,
            len: raw.len() as u32,
            event,
        });
        self.texts.extend_from_slice(raw);
        // The newest in front; the oldest of a full set is forgotten.
        let set = set_of(hash);
        self.slots[set..set + WAYS].rotate_right(1);
        self.slots[set] = tag_of(hash) | self.entries.len() as u32;
    }
}

/// `event` (classified from `msg`, the decoding of `raw`) with each text as its place in
/// `raw`; `None` unless `msg` is `raw` itself (valid UTF-8, decoded without a copy) and
/// every text of the event lies in it (a plugin's name can be a constant).
fn offsets_in(raw: &[u8], msg: &str, event: Option<Event>) -> Option<Option<EventOf<Offset>>> {
    if msg.as_ptr() != raw.as_ptr() || msg.len() != raw.len() {
        return None;
    }
    let base = msg.as_ptr() as usize;
    let mut inside = true;
    let offsets = event.map(|event| {
        event.map(&mut |text: &str| {
            let start = (text.as_ptr() as usize).wrapping_sub(base);
            inside &= start <= msg.len() && start + text.len() <= msg.len();
            Offset {
                start: start as u32,
                len: text.len() as u32,
            }
        })
    });
    inside.then_some(offsets)
}

/// The text at `at` in `bytes`.
///
/// # Safety
///
/// `bytes[at.start..at.start + at.len]` must be valid UTF-8: the same bytes, at the same
/// places, as a message `offsets_in` took its offsets from.
pub unsafe fn text_at(bytes: &[u8], at: Offset) -> &str {
    let text = &bytes[at.start as usize..(at.start + at.len) as usize];
    debug_assert!(std::str::from_utf8(text).is_ok());
    // SAFETY: as the caller promises.
    unsafe { std::str::from_utf8_unchecked(text) }
}

/// The memo's hash of a message's bytes.
fn text_hash(raw: &[u8]) -> u64 {
    crate::logscan::prefix::hash_bytes(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Memo::answer` for a message given as text (nothing to decode).
    fn answer<'m>(memo: &mut Memo, level: Level, msg: &'m str) -> Option<Event<'m>> {
        match memo.lookup(level, msg.as_bytes()) {
            Some(event) => event,
            None => memo.learn(level, msg.as_bytes(), msg),
        }
    }

    #[test]
    fn answers_as_classify_does_for_every_fixture_record() {
        let logs = crate::logscan::fixture_logs();
        let text = String::from_utf8_lossy(&logs);
        let mut memo = Memo::default();
        let mut records = 0;
        // Twice: the second pass answers from the memo.
        for _ in 0..2 {
            for line in text.lines() {
                for (marker, level) in [(" NCCL INFO ", Level::Info), (" NCCL WARN ", Level::Warn)]
                {
                    if let Some(at) = line.find(marker) {
                        let msg = line[at + marker.len()..].trim();
                        assert_eq!(answer(&mut memo, level, msg), classify(level, msg), "{msg}");
                        records += 1;
                    }
                }
            }
        }
        assert!(records > 2000, "{records}");
    }

    #[test]
    fn the_same_text_at_another_place_gets_its_own_slices() {
        let mut memo = Memo::default();
        let a = String::from("Using network AWS Libfabric");
        let b = a.clone();
        let first = answer(&mut memo, Level::Info, &a);
        assert!(memo.lookup(Level::Info, b.as_bytes()).is_some());
        let again = answer(&mut memo, Level::Info, &b);
        assert_eq!(first, again);
        let Some(Event::UsingNetwork(name)) = again else {
            panic!("{again:?}")
        };
        assert_eq!(name.as_ptr(), b[14..].as_ptr());
        // The level is part of the key.
        assert_eq!(
            answer(&mut memo, Level::Warn, &a),
            classify(Level::Warn, &a),
            "WARN"
        );
    }

    #[test]
    fn a_message_decoded_with_replacements_is_not_remembered() {
        let mut memo = Memo::default();
        let raw = b"Using network So\xffcket";
        let text = String::from_utf8_lossy(raw);
        assert_eq!(
            memo.learn(Level::Info, raw, &text),
            classify(Level::Info, &text)
        );
        assert!(memo.lookup(Level::Info, raw).is_none());
        // Through `answer`, which decodes it itself.
        let mut decoded = None;
        assert_eq!(
            memo.answer(Level::Info, raw, &mut decoded),
            classify(Level::Info, &text)
        );
        assert!(memo.lookup(Level::Info, raw).is_none());
    }

    #[test]
    fn messages_that_share_a_set_stay_remembered() {
        let msg = |i: usize| {
            format!(
                "Channel {:02}/0 : {i}[0] -> {}[1] via P2P/IPC",
                i % 32,
                i + 1
            )
        };
        let set = set_of(text_hash(msg(0).as_bytes()));
        let same: Vec<String> = (1..100_000)
            .map(msg)
            .filter(|m| set_of(text_hash(m.as_bytes())) == set)
            .take(WAYS - 1)
            .chain([msg(0)])
            .collect();
        assert_eq!(same.len(), WAYS);
        let mut memo = Memo::default();
        for m in &same {
            answer(&mut memo, Level::Info, m);
        }
        // Taking turns, as the ranks of a job print them: all still known.
        for _ in 0..3 {
            for m in &same {
                assert!(memo.lookup(Level::Info, m.as_bytes()).is_some(), "{m}");
            }
        }
    }

    #[test]
    fn colliding_and_long_messages_are_classified_each_time() {
        let mut memo = Memo::default();
        let long = format!("NET/IB : Using {}", "[0]mlx5_0:1/IB ".repeat(40));
        for _ in 0..2 {
            assert_eq!(
                answer(&mut memo, Level::Info, &long),
                classify(Level::Info, &long)
            );
        }
        // More distinct messages than slots and entries: every answer is still classify's,
        // and the memo stays bounded.
        for i in 0..5 * SLOTS {
            let msg = format!(
                "Channel {:02}/0 : {i}[0] -> {}[1] via P2P/IPC",
                i % 32,
                i + 1
            );
            assert_eq!(
                answer(&mut memo, Level::Info, &msg),
                classify(Level::Info, &msg)
            );
            assert!(memo.entries.len() <= MAX_ENTRIES && memo.texts.len() <= MAX_TEXTS);
        }
    }
}
