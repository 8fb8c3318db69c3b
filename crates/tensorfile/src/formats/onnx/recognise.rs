//! Recognising a `ModelProto` from its first bytes.
//!
//! A model starts with field 1 (`ir_version`, wire type varint: tag byte `0x08`), a version
//! from 1 to [`MAX_IR_VERSION`]; then, in increasing field order, only fields 2 to 6 with
//! their wire types (strings 2, 3, 4, 6 as UTF-8, the varint 5), then field 7, the graph
//! (length-delimited), whose first field must be one of `GraphProto`'s length-delimited
//! fields and fit inside it. Bytes are accepted when the graph's start is seen, or when the head
//! ends inside that prefix (a long doc string) after at least [`MIN_SEEN`] bytes. No other
//! format's file and no text starts that way: text does not start with the byte `0x08`, and
//! every other format has a magic its unit checks first.

/// The highest IR version recognised (ONNX 1.20 writes 11 or 12; room for growth).
pub const MAX_IR_VERSION: u64 = 64;

/// A head this short that never reaches the graph is not taken for a model.
const MIN_SEEN: usize = 16;

/// Whether `head` (a file's first bytes) starts like an ONNX model.
pub fn looks_like(head: &[u8]) -> bool {
    let mut at = 0usize;
    // ir_version first.
    if head.first() != Some(&0x08) {
        return false;
    }
    at += 1;
    let Some((version, n)) = varint(&head[at..]) else { return false };
    if version == 0 || version > MAX_IR_VERSION {
        return false;
    }
    at += n;
    let mut last_field = 1u64;
    loop {
        let Some((tag, n)) = varint(&head[at..]) else {
            // The head ends in a tag: fine only for a long head.
            return head.len() >= MIN_SEEN && at == head.len();
        };
        let (field, wire) = (tag >> 3, tag & 7);
        if field <= last_field || !(2..=7).contains(&field) {
            return false;
        }
        at += n;
        match (field, wire) {
            (7, 2) => {
                // The graph's length: a varint that must be complete when the head has room.
                return match varint(&head[at..]) {
                    Some((len, n)) => len > 0 && graph_starts(&head[at + n..], len),
                    None => head.len() - at < 10 && head.len() >= MIN_SEEN,
                };
            }
            (5, 0) => {
                let Some((_, n)) = varint(&head[at..]) else { return head.len() >= MIN_SEEN };
                at += n;
            }
            (2 | 3 | 4 | 6, 2) => {
                let Some((len, n)) = varint(&head[at..]) else { return head.len() >= MIN_SEEN };
                at += n;
                let available = head.len() - at;
                let take = usize::try_from(len).map_or(available, |l| l.min(available));
                if !utf8_prefix(&head[at..at + take]) {
                    return false;
                }
                if take == available && (len as u128) > available as u128 {
                    // The string runs past the head.
                    return head.len() >= MIN_SEEN;
                }
                at += take;
            }
            _ => return false,
        }
        last_field = field;
    }
}

/// Whether `b` (the start of a graph of `len` bytes, maybe cut by the head's end) starts
/// with a field of `GraphProto` that holds a message or a string (`node` 1, `name` 2,
/// `initializer` 5, `doc_string` 10, `input` 11, `output` 12, `value_info` 13,
/// `quantization_annotation` 14, `sparse_initializer` 15, `metadata_props` 16) whose length
/// fits inside the graph.
fn graph_starts(b: &[u8], len: u64) -> bool {
    let Some((tag, n)) = varint(b) else { return b.len() < 3 };
    if tag & 7 != 2 || ![1, 2, 5, 10, 11, 12, 13, 14, 15, 16].contains(&(tag >> 3)) {
        return false;
    }
    match varint(&b[n..]) {
        // A length near 2^64 (as read from the file) must not overflow the sum.
        Some((inner, m)) => ((n + m) as u64).checked_add(inner).is_some_and(|end| end <= len),
        None => b.len() - n < 10,
    }
}

/// A protobuf varint at the start of `b`: its value and length; `None` when `b` ends first or
/// it is longer than 10 bytes.
pub(crate) fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &byte) in b.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Whether `b` is UTF-8 up to a character cut at its end.
fn utf8_prefix(b: &[u8]) -> bool {
    match std::str::from_utf8(b) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}
