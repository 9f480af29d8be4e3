//! Logs saved from a web page's HTML source (a CI console's page, a forum thread fetched
//! with `curl`), where `<`, `>` and `&` stand as entities: `0[0] -&gt; 8[0] [send] via
//! NET/IB/0`, `eth0:10.0.0.1&lt;0&gt;`. Read as they stand, the connection lines name no
//! ranks and interface lists no addresses. NCCL never prints an entity itself, so a source
//! whose NCCL lines hold `&gt;`, `&lt;`, `&amp;` or `&quot;` is escaped, and its entities are
//! turned back into the characters they stand for.

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
/// Entities found in other lines before the decision gives up.
const MAX_LOOKS: usize = 256;

/// Whether `head`, lines from the start of a source, is HTML-escaped: a line with `NCCL`
/// holds one of the entities an escaped NCCL line shows.
pub fn escaped(head: &[u8]) -> bool {
    let mut looks = 0;
    for at in memchr::memchr_iter(b'&', head) {
        if looks == MAX_LOOKS {
            return false;
        }
        let rest = &head[at..];
        if !ENTITIES[..TELLING].iter().any(|(e, _)| rest.starts_with(e)) {
            continue;
        }
        looks += 1;
        let start = memchr::memrchr(b'\n', &head[..at]).map_or(0, |i| i + 1);
        let end = memchr::memchr(b'\n', rest).map_or(head.len(), |i| at + i);
        if memmem::find(&head[start..end], b"NCCL").is_some() {
            return true;
        }
    }
    false
}

/// Turns the entities of `bytes` back into their characters, in place; returns the new
/// length (entities are longer than what they stand for, so the text only shrinks).
pub fn unescape(bytes: &mut [u8]) -> usize {
    let Some(first) = memchr::memchr(b'&', bytes) else {
        return bytes.len();
    };
    let mut read = first;
    let mut write = first;
    while read < bytes.len() {
        if bytes[read] == b'&'
            && let Some(&(entity, char)) =
                ENTITIES.iter().find(|(e, _)| bytes[read..].starts_with(e))
        {
            bytes[write] = char;
            write += 1;
            read += entity.len();
            continue;
        }
        bytes[write] = bytes[read];
        write += 1;
        read += 1;
    }
    write
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unescaped(text: &str) -> String {
        let mut bytes = text.as_bytes().to_vec();
        let len = unescape(&mut bytes);
        String::from_utf8(bytes[..len].to_vec()).unwrap()
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
