//! Logs that went through a web page:
//!
//! - saved from its HTML source (a CI console's page, a forum thread fetched with `curl`),
//!   where `<`, `>` and `&` stand as entities: `0[0] -&gt; 8[0] [send] via NET/IB/0`,
//!   `eth0:10.0.0.1&lt;0&gt;`. Read as they stand, the connection lines name no ranks and
//!   interface lists no addresses.
//! - copied from a rendered page or a chat (Confluence, Slack, Outlook), where blanks come
//!   as no-break spaces (U+00A0), every one or those of a run: `NCCL INFO` with one is no
//!   record at all.
//!
//! NCCL prints neither an entity nor a no-break space, so a source whose NCCL lines hold
//! `&gt;`, `&lt;`, `&amp;` or `&quot;`, or a no-break space, has that form, and its text is
//! turned back into what NCCL printed.

use memchr::memmem;

/// The entities a page escapes text with, and what they stand for.
const ENTITIES: [(&[u8], u8); 8] = [
    (b"&gt;", b'>'),
    (b"&lt;", b'<'),
    (b"&amp;", b'&'),
    (b"&quot;", b'"'),
    (b"&#39;", b'\''),
    (b"&#x27;", b'\''),
    (b"&apos;", b'\''),
    (b"&nbsp;", b' '),
];
/// Entities looked at when deciding: those an NCCL line needs.
const TELLING: usize = 4;
/// Lines with `NCCL` the decision looks at.
const NCCL_LINES: usize = 256;

/// U+00A0 in UTF-8.
const NBSP: &[u8] = b"\xc2\xa0";

/// What a source's text went through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Form {
    /// `<`, `>`, `&` ... as HTML entities.
    pub entities: bool,
    /// Blanks as no-break spaces.
    pub nbsp: bool,
}

impl Form {
    /// As NCCL printed it: nothing to undo.
    pub fn plain(self) -> bool {
        self == Form::default()
    }
}

/// The form of `head`, lines from the start of a source: escaped when a line with `NCCL`
/// holds one of the entities an escaped NCCL line shows, with no-break spaces when one
/// holds such a space.
pub fn form(head: &[u8]) -> Form {
    let mut form = Form::default();
    let mut pos = 0;
    for _ in 0..NCCL_LINES {
        let Some(at) = memmem::find(&head[pos..], b"NCCL").map(|i| pos + i) else {
            break;
        };
        let start = memchr::memrchr(b'\n', &head[..at]).map_or(0, |i| i + 1);
        let end = memchr::memchr(b'\n', &head[at..]).map_or(head.len(), |i| at + i);
        let line = &head[start..end];
        form.entities |= memchr::memchr_iter(b'&', line).any(|i| {
            ENTITIES[..TELLING]
                .iter()
                .any(|(e, _)| line[i..].starts_with(e))
        });
        form.nbsp |= memmem::find(line, NBSP).is_some();
        pos = end;
    }
    form
}

/// Turns `bytes` back into what NCCL printed, in place: entities into their characters,
/// no-break spaces into blanks, as `form` says. Returns the new length (the text only
/// shrinks).
pub fn unescape(bytes: &mut [u8], form: Form) -> usize {
    let first = match (form.entities, form.nbsp) {
        (true, true) => memchr::memchr2(b'&', NBSP[0], bytes),
        (true, false) => memchr::memchr(b'&', bytes),
        (false, true) => memchr::memchr(NBSP[0], bytes),
        (false, false) => None,
    };
    let Some(first) = first else {
        return bytes.len();
    };
    let mut read = first;
    let mut write = first;
    while read < bytes.len() {
        let rest = &bytes[read..];
        let found = match rest[0] {
            b'&' if form.entities => ENTITIES
                .iter()
                .find(|(e, _)| rest.starts_with(e))
                .map(|&(e, char)| (e.len(), char)),
            0xc2 if form.nbsp && rest.starts_with(NBSP) => Some((NBSP.len(), b' ')),
            _ => None,
        };
        let (taken, char) = found.unwrap_or((1, rest[0]));
        bytes[write] = char;
        write += 1;
        read += taken;
    }
    write
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unescaped(text: &str) -> String {
        let mut bytes = text.as_bytes().to_vec();
        let all = Form {
            entities: true,
            nbsp: true,
        };
        let len = unescape(&mut bytes, all);
        String::from_utf8(bytes[..len].to_vec()).unwrap()
    }

    fn escaped(text: &[u8]) -> bool {
        form(text).entities
    }

    #[test]
    fn entities_turn_back_into_characters() {
        assert_eq!(
            unescaped("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -&gt; 8[0] [send] via NET/IB/0"),
            "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0"
        );
        assert_eq!(
            unescaped("NET/Socket : Using [0]eth0:10.0.0.1&lt;0&gt; &amp;&quot;&#39;&#x27;&nbsp;"),
            "NET/Socket : Using [0]eth0:10.0.0.1<0> &\"'' "
        );
        // Not an entity: as it stands.
        assert_eq!(unescaped("a & b &g; &"), "a & b &g; &");
        assert_eq!(unescaped(""), "");
        assert_eq!(
            unescaped("h:1:1\u{a0}[0]\u{a0}NCCL\u{a0}INFO Ring 00 :\u{a0}\u{a0} 0 é"),
            "h:1:1 [0] NCCL INFO Ring 00 :   0 é"
        );
        // One form undone, the other left.
        let mut text = b"&gt;\xc2\xa0".to_vec();
        let only_nbsp = Form {
            entities: false,
            nbsp: true,
        };
        let len = unescape(&mut text, only_nbsp);
        assert_eq!(&text[..len], b"&gt; ");
    }

    #[test]
    fn a_source_has_no_break_spaces_when_its_nccl_lines_hold_one() {
        let nbsp = |text: &str| form(text.as_bytes()).nbsp;
        assert!(nbsp("x\nh:1:1 [0] NCCL\u{a0}INFO Using network IB\n"));
        assert!(!nbsp(
            "caf\u{e9}\u{a0}ok\nh:1:1 [0] NCCL INFO Using network IB\n"
        ));
        assert!(form(b"h:1:1 [0] NCCL INFO Using network IB\n").plain());
    }

    #[test]
    fn a_source_is_escaped_when_its_nccl_lines_hold_entities() {
        assert!(escaped(
            b"step 1\nh:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -&gt; 8[0] via NET/IB/0\n"
        ));
        assert!(escaped(
            b"h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1&lt;0&gt;"
        ));
        // Entities elsewhere (a page's own text) or none: not escaped.
        assert!(!escaped(
            b"Tom &amp; Jerry\nh:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0]\n"
        ));
        assert!(!escaped(b"h:1:1 [0] NCCL INFO a & b\n"));
        assert!(!escaped(b""));
    }
}
