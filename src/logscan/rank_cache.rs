//! Which rank a record belongs to, from the text left of its marker, without parsing NCCL's
//! `host:pid:tid [dev] ` prefix again: the analysis asks this for nearly every record, and a
//! parse and a process lookup cost ten times a cache hit. Three caches, tried in order:
//!
//! - `LastTexts`: the last two texts before a marker that were found, compared byte for
//!   byte without hashing: runs of lines from one thread, or two threads taking turns, are
//!   most of a log (four records in five of the benchmark's mix).
//! - `ExactPrefixes`: the whole text before the marker, when it is NCCL's prefix alone (a
//!   plain log, one file per rank), in sets of four slots chosen by hash: one hash and one
//!   comparison.
//! - `RecentPrefixes`: the last few prefixes, matched at the end of the text before the
//!   marker, for wrapped lines (`[1,3]<stdout>:`, timestamps) whose wrapper changes, and for
//!   the other threads of a process (`host:pid:tid [dev] ` with another `tid`).
//!
//! All three map bytes to the rank `Facts::rank_for` gave for them, which never changes once
//! given.

/// The three caches.
#[derive(Default)]
pub struct RankCache {
    last: LastTexts,
    exact: ExactPrefixes,
    recent: RecentPrefixes,
}

/// A rank found in the cache.
#[derive(Debug, PartialEq, Eq)]
pub struct Found {
    pub rank: usize,
    /// Found as another thread of a cached prefix: the length of that thread's prefix at the
    /// end of the text before the marker. The caller treats the record as a first sight of
    /// its prefix, without parsing it (`remember` it, read its wrapper).
    pub other_thread: Option<usize>,
    /// Found as a cached prefix under a wrapper that this text was not cached with: the
    /// wrapper's length (its launcher tag may say something new).
    pub new_wrapper: Option<usize>,
}

impl RankCache {
    /// The rank cached for a record whose text before the marker is `before_marker`.
    pub fn find(&mut self, before_marker: &[u8]) -> Option<Found> {
        let found = |rank| {
            Some(Found {
                rank,
                other_thread: None,
                new_wrapper: None,
            })
        };
        if let Some(rank) = self.last.get(before_marker) {
            return found(rank);
        }
        if let Some(rank) = self.exact.get(before_marker) {
            self.last.put(before_marker, rank);
            return found(rank);
        }
        let (rank, prefix_len, other_thread) = self.recent.find(before_marker)?;
        if other_thread {
            return Some(Found {
                rank,
                other_thread: Some(prefix_len),
                new_wrapper: None,
            });
        }
        if prefix_len == before_marker.len() {
            self.exact.put(before_marker, rank);
        }
        // A wrapped record too: the same wrapper, prefix and all, is the same rank.
        self.last.put(before_marker, rank);
        Some(Found {
            rank,
            other_thread: None,
            new_wrapper: (prefix_len < before_marker.len())
                .then(|| before_marker.len() - prefix_len),
        })
    }

    /// Remembers that `prefix` (NCCL's, at the end of `before_marker`) is `rank`'s.
    pub fn remember(&mut self, before_marker: &[u8], prefix: &[u8], rank: usize) {
        self.recent.remember(prefix, rank);
        if prefix.len() == before_marker.len() {
            self.exact.put(before_marker, rank);
        }
        self.last.put(before_marker, rank);
    }
}

/// The last two texts before a marker (at most `KEY` bytes) that were found, and their
/// ranks. `newest` says which is the latest, so that two threads taking turns (a hit on the
/// older one every record) cost no copying.
#[derive(Default)]
struct LastTexts {
    texts: [LastText; 2],
    newest: usize,
}

#[derive(Clone, Copy)]
struct LastText {
    /// 0 while empty (a text before a marker is never empty: it ends with NCCL's prefix).
    len: u8,
    rank: u32,
    bytes: [u8; KEY],
}

impl Default for LastText {
    fn default() -> Self {
        LastText {
            len: 0,
            rank: 0,
            bytes: [0; KEY],
        }
    }
}

impl LastText {
    #[inline]
    fn is(&self, key: &[u8]) -> bool {
        usize::from(self.len) == key.len()
            && super::prefix::same_bytes(&self.bytes[..key.len()], key)
    }
}

impl LastTexts {
    #[inline]
    fn get(&mut self, key: &[u8]) -> Option<usize> {
        if key.is_empty() || key.len() > KEY {
            return None;
        }
        let newest = self.newest;
        if self.texts[newest].is(key) {
            return Some(self.texts[newest].rank as usize);
        }
        let older = 1 - newest;
        if self.texts[older].is(key) {
            self.newest = older;
            return Some(self.texts[older].rank as usize);
        }
        None
    }

    /// Makes `key` the latest, in place of the older text.
    fn put(&mut self, key: &[u8], rank: usize) {
        let Ok(rank) = u32::try_from(rank) else {
            return;
        };
        if key.is_empty() || key.len() > KEY {
            return;
        }
        self.newest = 1 - self.newest;
        let text = &mut self.texts[self.newest];
        text.len = key.len() as u8;
        text.rank = rank;
        text.bytes[..key.len()].copy_from_slice(key);
    }
}

/// Texts before a marker (at most `KEY` bytes) and their ranks, in sets of `WAYS` slots
/// chosen by hash. Far more slots than a job has threads printing at once; 64 KiB.
struct ExactPrefixes {
    slots: Box<[ExactSlot]>,
}

/// Longest text kept: NCCL's prefix with a long host name (`ip-10-0-12-34.ec2.internal`).
const KEY: usize = 48;
const SLOTS: usize = 1024;
const WAYS: usize = 4;

#[derive(Clone, Copy)]
struct ExactSlot {
    /// 0 while empty (a hash is never 0).
    hash: u64,
    rank: u32,
    len: u8,
    bytes: [u8; KEY],
}

impl Default for ExactPrefixes {
    fn default() -> Self {
        let empty = ExactSlot {
            hash: 0,
            rank: 0,
            len: 0,
            bytes: [0; KEY],
        };
        ExactPrefixes {
            slots: vec![empty; SLOTS].into_boxed_slice(),
        }
    }
}

impl ExactPrefixes {
    fn hash(key: &[u8]) -> u64 {
        super::prefix::hash_bytes(key) | 1
    }

    /// The first slot of the set `hash` picks.
    fn set_of(hash: u64) -> usize {
        (hash as usize % (SLOTS / WAYS)) * WAYS
    }

    /// The rank of `key`.
    fn get(&self, key: &[u8]) -> Option<usize> {
        if key.len() > KEY {
            return None;
        }
        let hash = Self::hash(key);
        let set = Self::set_of(hash);
        self.slots[set..set + WAYS]
            .iter()
            .find(|slot| {
                slot.hash == hash
                    && usize::from(slot.len) == key.len()
                    && super::prefix::same_bytes(&slot.bytes[..key.len()], key)
            })
            .map(|slot| slot.rank as usize)
    }

    fn put(&mut self, key: &[u8], rank: usize) {
        let Ok(rank) = u32::try_from(rank) else {
            return;
        };
        if key.len() > KEY {
            return;
        }
        let hash = Self::hash(key);
        // The newest in front; the oldest of a full set is forgotten.
        let set = Self::set_of(hash);
        self.slots[set..set + WAYS].rotate_right(1);
        let slot = &mut self.slots[set];
        slot.hash = hash;
        slot.rank = rank;
        slot.len = key.len() as u8;
        slot.bytes[..key.len()].copy_from_slice(key);
    }
}

/// The last few `host:pid:tid [dev] ` prefixes and their ranks, most recent first: NCCL logs
/// come in runs of lines from the same threads, so most records skip prefix parsing and the
/// hash lookup. (At most one entry can match a record: a match must start at a host boundary.)
/// A record of another thread of a cached process on the same device is that process's rank
/// too: NCCL's helper threads print their own ids (`node-1:5:77 [0] `), hundreds of them in a
/// long job, and each would otherwise be parsed once.
#[derive(Default)]
pub struct RecentPrefixes {
    entries: Vec<Recent>,
}

struct Recent {
    prefix: Vec<u8>,
    rank: usize,
    /// The prefix's last eight bytes: most misses differ there (thread id, device), so one
    /// comparison rejects them.
    tail: Option<u64>,
    /// Where the thread id lies in `prefix`, when it is NCCL's `host:pid:tid [dev] `.
    tid: Option<(usize, usize)>,
}

impl Recent {
    /// The length of the end of `before_marker` that is this prefix, if it is.
    fn same(&self, before_marker: &[u8], tail: Option<u64>) -> Option<usize> {
        let matches = (self.tail.is_none() || self.tail == tail)
            && ends_with(before_marker, &self.prefix)
            && at_host_boundary(before_marker, self.prefix.len());
        matches.then_some(self.prefix.len())
    }

    /// The same, for this prefix with another thread id: the same `host:pid:` and ` [dev] `
    /// around 1 to 10 digits, as `prefix::parse_prefix` reads them.
    fn other_thread(&self, before_marker: &[u8]) -> Option<usize> {
        let (tid_start, tid_end) = self.tid?;
        let (head, tail) = (&self.prefix[..tid_start], &self.prefix[tid_end..]);
        let rest = before_marker.strip_suffix(tail)?;
        let digits = rest.iter().rev().take_while(|b| b.is_ascii_digit()).count();
        if !(1..=10).contains(&digits) {
            return None;
        }
        let len = head.len() + digits + tail.len();
        let matches =
            rest[..rest.len() - digits].ends_with(head) && at_host_boundary(before_marker, len);
        matches.then_some(len)
    }
}

/// Whether the last `len` bytes of `before_marker` start where a host name can: at its start
/// or after a byte no host name has (`xnode-1:5:5 [0] ` is not `node-1:5:5 [0] `).
fn at_host_boundary(before_marker: &[u8], len: usize) -> bool {
    before_marker[..before_marker.len() - len]
        .last()
        .is_none_or(|b| !super::prefix::is_host_byte(*b))
}

/// Where the thread id lies in NCCL's INFO prefix `host:pid:tid [dev] `: between the `:`
/// after the pid and ` [dev] ` at the end. `None` for any other shape (a WARN's location
/// after the device, a pasted `[dev] ` alone, no host).
fn thread_id_at(prefix: &[u8]) -> Option<(usize, usize)> {
    let tail_start = prefix.windows(2).rposition(|w| w == b" [")?;
    let dev = prefix[tail_start + 2..].strip_suffix(b"] ")?;
    if dev.is_empty() || !dev.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // `digits:` ending at `end`, 1 to 10 digits: where they start.
    let field = |end: usize| {
        let digits = (prefix[..end].iter().rev())
            .take_while(|b| b.is_ascii_digit())
            .count();
        let start = end - digits;
        ((1..=10).contains(&digits) && start > 0 && prefix[start - 1] == b':').then_some(start)
    };
    let tid_start = field(tail_start)?;
    let pid_start = field(tid_start - 1)?;
    let host = pid_start > 1 && super::prefix::is_host_byte(prefix[pid_start - 2]);
    host.then_some((tid_start, tail_start))
}

/// The last eight bytes of `bytes`, if it has that many.
fn tail_word(bytes: &[u8]) -> Option<u64> {
    let start = bytes.len().checked_sub(8)?;
    Some(u64::from_ne_bytes(
        bytes[start..].try_into().expect("8 bytes"),
    ))
}

impl RecentPrefixes {
    const SIZE: usize = 8;

    /// The rank of the cached prefix that `before_marker` ends with, and the length of that
    /// end; or, failing that, of one that it ends with but for another thread id (`true`),
    /// which is left where it is: the caller remembers this thread's prefix.
    fn find(&mut self, before_marker: &[u8]) -> Option<(usize, usize, bool)> {
        let tail = tail_word(before_marker);
        let entries = &self.entries;
        let Some((at, len)) = (entries.iter().enumerate())
            .find_map(|(at, e)| Some((at, e.same(before_marker, tail)?)))
        else {
            return entries
                .iter()
                .find_map(|e| Some((e.rank, e.other_thread(before_marker)?, true)));
        };
        if at > 0 {
            self.entries[..=at].rotate_right(1);
        }
        Some((self.entries[0].rank, len, false))
    }

    fn remember(&mut self, prefix: &[u8], rank: usize) {
        let mut entry = if self.entries.len() < Self::SIZE {
            Recent {
                prefix: Vec::new(),
                rank,
                tail: None,
                tid: None,
            }
        } else {
            self.entries.pop().expect("full")
        };
        entry.prefix.clear();
        entry.prefix.extend_from_slice(prefix);
        entry.rank = rank;
        entry.tail = tail_word(prefix);
        entry.tid = thread_id_at(prefix);
        self.entries.insert(0, entry);
    }
}

/// `haystack.ends_with(suffix)`, eight bytes at a time from the end: prefixes of the same
/// process differ in their last bytes (device, thread id), and a library call per cached
/// prefix would cost more than the comparison.
fn ends_with(haystack: &[u8], suffix: &[u8]) -> bool {
    let Some(start) = haystack.len().checked_sub(suffix.len()) else {
        return false;
    };
    let tail = &haystack[start..];
    let word = |bytes: &[u8], end: usize| {
        u64::from_ne_bytes(bytes[end - 8..end].try_into().expect("8 bytes"))
    };
    let mut end = suffix.len();
    while end >= 8 {
        if word(tail, end) != word(suffix, end) {
            return false;
        }
        end -= 8;
    }
    tail[..end].iter().zip(&suffix[..end]).all(|(a, b)| a == b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_with_matches_the_slice_method() {
        let cases: [(&[u8], &[u8]); 8] = [
            (b"node-1:5:5 [0] ", b"node-1:5:5 [0] "),
            (b"[w] node-1:5:5 [0] ", b"node-1:5:5 [0] "),
            (b"node-1:5:5 [0] ", b"node-1:5:6 [0] "),
            (b"node-1:5:5 [0] ", b"xnode-1:5:5 [0] "),
            (b"node-2:5:5 [0] ", b"node-1:5:5 [0] "),
            (b"a:1:1 [0] ", b""),
            (b"", b"a"),
            (b"ab", b"b"),
        ];
        for (haystack, suffix) in cases {
            assert_eq!(
                ends_with(haystack, suffix),
                haystack.ends_with(suffix),
                "{haystack:?} {suffix:?}"
            );
        }
    }

    #[test]
    fn recent_prefixes_match_at_a_host_boundary_only() {
        let mut recent = RecentPrefixes::default();
        for rank in 0..10 {
            recent.remember(format!("node-1:5:5 [{rank}] ").as_bytes(), rank);
        }
        assert_eq!(recent.find(b"node-1:5:5 [9] "), Some((9, 15, false)));
        assert_eq!(
            recent.find(b"[1,3]<stdout>:node-1:5:5 [4] "),
            Some((4, 15, false))
        );
        assert_eq!(recent.find(b"xnode-1:5:5 [4] "), None);
        // Only the last eight are kept.
        assert_eq!(recent.find(b"node-1:5:5 [1] "), None);
        assert_eq!(recent.entries.len(), RecentPrefixes::SIZE);
    }

    #[test]
    fn another_thread_of_a_recent_prefix_is_its_rank_on_the_same_device() {
        let mut recent = RecentPrefixes::default();
        recent.remember(b"node-1:5:5 [0] ", 7);
        recent.remember(b"node-1:5:5 [0] init.cc:10 ", 8);
        recent.remember(b"node-2:6:1234567890 [3] ", 9);
        for (before_marker, found) in [
            (&b"node-1:5:77 [0] "[..], Some((7, 16, true))),
            (
                b"[1,3]<stdout>: node-1:5:1234567890 [0] ",
                Some((7, 24, true)),
            ),
            (b"node-2:6:1 [3] ", Some((9, 15, true))),
            // Not the same process, device or shape.
            (b"node-1:6:77 [0] ", None),
            (b"xnode-1:5:77 [0] ", None),
            (b"node-1:5:77 [1] ", None),
            (b"node-1:5:12345678901 [0] ", None),
            (b"node-1:5: [0] ", None),
            (b"node-1:5:7a [0] ", None),
            // A WARN's location after the device: only the exact bytes.
            (b"node-1:5:77 [0] init.cc:10 ", None),
            (b"node-1:5:5 [0] init.cc:10 ", Some((8, 26, false))),
        ] {
            assert_eq!(
                recent.find(before_marker),
                found,
                "{:?}",
                String::from_utf8_lossy(before_marker)
            );
        }
        // As parsing finds them.
        for prefix in [
            &b"node-1:5:5 [0] "[..],
            b"h:1:2 [10] ",
            b":1:2 [0] ",
            b"h:1: [0] ",
            b"h:1:2 [] ",
            b"h:1:2 [0] x",
            b"h:1:2 [0]",
        ] {
            let place = crate::logscan::prefix::Place {
                line: prefix,
                region: (0, prefix.len()),
                first: true,
            };
            let origin = place.origin();
            let expected =
                origin.process.is_some() && origin.dev.is_some() && prefix.ends_with(b"] ");
            assert_eq!(
                thread_id_at(prefix).is_some(),
                expected,
                "{:?}",
                String::from_utf8_lossy(prefix)
            );
        }
    }

    fn find(cache: &mut RankCache, before_marker: &[u8]) -> Option<usize> {
        cache.find(before_marker).map(|found| found.rank)
    }

    #[test]
    fn the_last_two_texts_answer_without_the_table() {
        let mut last = LastTexts::default();
        assert_eq!(last.get(b"node-1:5:5 [0] "), None);
        last.put(b"node-1:5:5 [0] ", 1);
        last.put(b"node-1:5:6 [0] ", 2);
        // Two threads taking turns both hit.
        for _ in 0..3 {
            assert_eq!(last.get(b"node-1:5:5 [0] "), Some(1));
            assert_eq!(last.get(b"node-1:5:6 [0] "), Some(2));
        }
        // Only the same bytes: not a longer or shorter text that ends or starts alike.
        assert_eq!(last.get(b"xnode-1:5:5 [0] "), None);
        assert_eq!(last.get(b"node-1:5:5 [0]"), None);
        // A third pushes out the one used least lately.
        last.put(b"node-1:5:7 [0] ", 3);
        assert_eq!(last.get(b"node-1:5:5 [0] "), None);
        assert_eq!(last.get(b"node-1:5:6 [0] "), Some(2));
        assert_eq!(last.get(b"node-1:5:7 [0] "), Some(3));
        // Empty and over-long texts are never kept.
        last.put(b"", 4);
        let long = format!("{}:5:7 [0] ", "h".repeat(60));
        last.put(long.as_bytes(), 5);
        assert_eq!(last.get(b""), None);
        assert_eq!(last.get(long.as_bytes()), None);
        assert_eq!(last.get(b"node-1:5:7 [0] "), Some(3));
    }

    #[test]
    fn a_wrapped_record_is_answered_by_the_last_texts_as_by_its_prefix() {
        let mut cache = RankCache::default();
        cache.remember(b"[1,3]<stdout>:node-1:5:6 [0] ", b"node-1:5:6 [0] ", 4);
        // The same wrapper again: from the last texts; the exact table never holds it.
        assert_eq!(find(&mut cache, b"[1,3]<stdout>:node-1:5:6 [0] "), Some(4));
        assert_eq!(cache.exact.get(b"[1,3]<stdout>:node-1:5:6 [0] "), None);
        // Another wrapper of the same prefix: from the recent prefixes, then remembered.
        assert_eq!(find(&mut cache, b"[1,4]<stdout>:node-1:5:6 [0] "), Some(4));
        assert_eq!(cache.last.get(b"[1,4]<stdout>:node-1:5:6 [0] "), Some(4));
        // Another thread is not an exact answer: the caller remembers it first.
        assert_eq!(
            cache.find(b"[1,4]<stdout>:node-1:5:7 [0] "),
            Some(Found {
                rank: 4,
                other_thread: Some(15),
                new_wrapper: None,
            })
        );
        assert_eq!(cache.last.get(b"[1,4]<stdout>:node-1:5:7 [0] "), None);
    }

    #[test]
    fn exact_prefixes_answer_only_for_the_same_bytes() {
        let mut cache = RankCache::default();
        cache.remember(b"node-1:5:5 [0] ", b"node-1:5:5 [0] ", 3);
        assert_eq!(cache.exact.get(b"node-1:5:5 [0] "), Some(3));
        assert_eq!(cache.exact.get(b"node-1:5:5 [1] "), None);
        assert_eq!(cache.exact.get(b"xnode-1:5:5 [0] "), None);
        // A wrapped line is cached by its prefix only: the wrapper changes line by line.
        cache.remember(b"[1,3]<stdout>:node-1:5:6 [0] ", b"node-1:5:6 [0] ", 4);
        assert_eq!(cache.exact.get(b"[1,3]<stdout>:node-1:5:6 [0] "), None);
        assert_eq!(find(&mut cache, b"[1,3]<stdout>:node-1:5:6 [0] "), Some(4));
        // Found through the recent prefixes, a bare prefix goes into the exact table.
        assert_eq!(find(&mut cache, b"node-1:5:6 [0] "), Some(4));
        assert_eq!(cache.exact.get(b"node-1:5:6 [0] "), Some(4));
        // Longer than a key: never cached exactly, still found.
        let long = format!("{}:5:7 [0] ", "h".repeat(60));
        cache.remember(long.as_bytes(), long.as_bytes(), 5);
        assert_eq!(cache.exact.get(long.as_bytes()), None);
        assert_eq!(find(&mut cache, long.as_bytes()), Some(5));
    }
}
