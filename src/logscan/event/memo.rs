//! `classify` remembered per distinct message. NCCL prints the same messages again for every
//! rank and every communicator (`Channel 00/0 : 0[0] -> 1[1] via P2P/IPC`, the ring
//! listings, `NET/IB : No device found.`, `Connected all rings`), and `classify` is a pure
//! function of the level and the message, so a message seen before takes a hash and one
//! comparison instead of being parsed again. The answer is kept as positions in the message,
//! so it applies to the same text wherever it stands.

use super::{Event, EventOf, classify};
use crate::logscan::prefix::Level;

/// Distinct messages remembered (direct-mapped by hash: a new message takes its slot from
/// the one before). Far more than one job's kinds of lines; 1 MiB of texts at most.
const SLOTS: usize = 4096;
/// Longer messages (device and interface lists of big hosts) are classified each time.
const MAX_TEXT: usize = 256;

/// Where an event's text lies in its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Offset {
    start: u32,
    len: u32,
}

#[derive(Default)]
struct Slot {
    /// `None` while empty.
    level: Option<Level>,
    hash: u64,
    text: Vec<u8>,
    event: Option<EventOf<Offset>>,
}

/// One thread's memo of `classify`.
pub struct Memo {
    slots: Vec<Slot>,
}

impl Default for Memo {
    fn default() -> Self {
        Memo {
            slots: std::iter::repeat_with(Slot::default).take(SLOTS).collect(),
        }
    }
}

impl Memo {
    /// `classify(level, msg)`, the same answer, from the memo when `msg` was seen before.
    pub fn classify<'m>(&mut self, level: Level, msg: &'m str) -> Option<Event<'m>> {
        if msg.len() > MAX_TEXT {
            return classify(level, msg);
        }
        let hash = std::hash::BuildHasher::hash_one(
            &foldhash::fast::FixedState::with_seed(0),
            msg.as_bytes(),
        );
        let slot = &mut self.slots[hash as usize % SLOTS];
        if slot.level == Some(level) && slot.hash == hash && slot.text == msg.as_bytes() {
            return slot.event.clone().map(|event| {
                event.map(&mut |at| &msg[at.start as usize..(at.start + at.len) as usize])
            });
        }
        let event = classify(level, msg);
        // Remembered only when every text of the event lies in the message (a plugin's
        // name can be a constant).
        let base = msg.as_ptr() as usize;
        let mut inside = true;
        let offsets = event.clone().map(|event| {
            event.map(&mut |text: &str| {
                let start = (text.as_ptr() as usize).wrapping_sub(base);
                inside &= start <= msg.len() && start + text.len() <= msg.len();
                Offset {
                    start: start as u32,
                    len: text.len() as u32,
                }
            })
        });
        if inside {
            slot.level = Some(level);
            slot.hash = hash;
            slot.text.clear();
            slot.text.extend_from_slice(msg.as_bytes());
            slot.event = offsets;
        }
        event
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                        assert_eq!(memo.classify(level, msg), classify(level, msg), "{msg}");
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
        let first = memo.classify(Level::Info, &a);
        let again = memo.classify(Level::Info, &b);
        assert_eq!(first, again);
        let Some(Event::UsingNetwork(name)) = again else {
            panic!("{again:?}")
        };
        assert_eq!(name.as_ptr(), b[14..].as_ptr());
        // The level is part of the key.
        assert_eq!(
            memo.classify(Level::Warn, &a),
            classify(Level::Warn, &a),
            "WARN"
        );
    }

    #[test]
    fn colliding_and_long_messages_are_classified_each_time() {
        let mut memo = Memo::default();
        let long = format!("NET/IB : Using {}", "[0]mlx5_0:1/IB ".repeat(40));
        for _ in 0..2 {
            assert_eq!(
                memo.classify(Level::Info, &long),
                classify(Level::Info, &long)
            );
        }
        // More distinct messages than slots: every answer is still classify's.
        for i in 0..3 * SLOTS {
            let msg = format!(
                "Channel {:02}/0 : {i}[0] -> {}[1] via P2P/IPC",
                i % 32,
                i + 1
            );
            assert_eq!(
                memo.classify(Level::Info, &msg),
                classify(Level::Info, &msg)
            );
        }
    }
}
