//! A SentencePiece `ModelProto` read from its protobuf bytes: the pieces (text, score, type),
//! every other field parsed past. Hostile input is refused with a rule, never a panic: varints
//! stop at 10 bytes, lengths are checked against the bytes left, and the pieces are capped.

use crate::error::{Error, Result, Rule};
use crate::limits::MAX_ENTRIES;

/// One `SentencePiece` of the model: its text, its score and its type (the enum's number).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Piece {
    /// `piece` (field 1).
    pub(crate) text: String,
    /// `score` (field 2, a float; 0 when absent).
    pub(crate) score: f32,
    /// `type` (field 3; NORMAL = 1 when absent or a value the enum does not define, as a
    /// proto2 closed enum keeps it).
    pub(crate) kind: u8,
}

/// `SentencePiece.Type.NORMAL`.
pub(crate) const NORMAL: u8 = 1;

/// A field's value as its wire type carries it.
enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1 (no field read here has it: skipped).
    Fixed64,
    /// Wire type 2.
    Bytes(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

/// A cursor over one message's bytes; `top` tells whether its end is the file's.
struct Reader<'a> {
    /// The message's bytes.
    buf: &'a [u8],
    /// The next byte to read.
    pos: usize,
    /// Whether this is the file's outermost message (running past its end is a truncation).
    top: bool,
}

impl<'a> Reader<'a> {
    /// The error for a field running past the end of this message, in words.
    fn past_end(&self, what: &str) -> Error {
        if self.top {
            Error::invalid(Rule::Truncated, format!("protobuf: the file ends inside {what} at byte {}", self.pos))
        } else {
            Error::invalid(Rule::BadProtobuf, format!("protobuf: {what} runs past the end of its message"))
        }
    }

    /// A base-128 varint of at most 10 bytes.
    fn varint(&mut self, what: &str) -> Result<u64> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&byte) = self.buf.get(self.pos) else { return Err(self.past_end(what)) };
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Error::invalid(Rule::BadProtobuf, format!("protobuf: {what} is a varint longer than 10 bytes")))
    }

    /// The next `n` bytes.
    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8]> {
        let left = (self.buf.len() - self.pos) as u64;
        if n > left {
            return Err(self.past_end(what));
        }
        let start = self.pos;
        self.pos += n as usize;
        Ok(&self.buf[start..self.pos])
    }

    /// The next field, `None` at the end of the message.
    fn field(&mut self) -> Result<Option<(u64, Value<'a>)>> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint("a field's tag")?;
        let number = key >> 3;
        if number == 0 {
            return Err(Error::invalid(Rule::BadProtobuf, "protobuf: field number 0"));
        }
        let value = match key & 7 {
            0 => Value::Varint(self.varint("a varint field")?),
            1 => {
                self.take(8, "a 64-bit field")?;
                Value::Fixed64
            }
            2 => {
                let n = self.varint("a length")?;
                Value::Bytes(self.take(n, "a length-delimited field")?)
            }
            5 => Value::Fixed32(u32::from_le_bytes(self.take(4, "a 32-bit field")?.try_into().unwrap_or([0; 4]))),
            other => {
                return Err(Error::invalid(
                    Rule::BadProtobuf,
                    format!("protobuf: field {number} has wire type {other}, which this reader refuses"),
                ));
            }
        };
        Ok(Some((number, value)))
    }
}

/// The pieces of a SentencePiece `ModelProto`, in id order.
pub(crate) fn pieces(bytes: &[u8]) -> Result<Vec<Piece>> {
    let mut reader = Reader { buf: bytes, pos: 0, top: true };
    let mut out = Vec::new();
    while let Some((number, value)) = reader.field()? {
        if number != 1 {
            continue;
        }
        let Value::Bytes(body) = value else {
            return Err(Error::invalid(
                Rule::BadProtobuf,
                "protobuf: ModelProto.pieces (field 1) is not length-delimited",
            ));
        };
        if out.len() >= MAX_ENTRIES {
            return Err(Error::invalid(Rule::TooManyEntries, format!("more than {MAX_ENTRIES} SentencePiece pieces")));
        }
        out.push(piece(body, out.len())?);
    }
    Ok(out)
}

/// One `SentencePiece` message.
fn piece(body: &[u8], id: usize) -> Result<Piece> {
    let mut reader = Reader { buf: body, pos: 0, top: false };
    let mut p = Piece { text: String::new(), score: 0.0, kind: NORMAL };
    let bad = |what: &str| Error::invalid(Rule::BadProtobuf, format!("protobuf: piece {id}: {what}"));
    while let Some((number, value)) = reader.field().map_err(|e| e.within(format!("piece {id}"), Rule::BadProtobuf))? {
        match (number, value) {
            (1, Value::Bytes(text)) => {
                p.text = std::str::from_utf8(text)
                    .map_err(|_| {
                        Error::invalid(Rule::BadProtobuf, format!("protobuf: piece {id}: its text is not UTF-8"))
                    })?
                    .to_string();
            }
            (1, _) => return Err(bad("`piece` (field 1) is not length-delimited")),
            (2, Value::Fixed32(bits)) => p.score = f32::from_bits(bits),
            (2, _) => return Err(bad("`score` (field 2) is not a 32-bit float")),
            (3, Value::Varint(kind)) => p.kind = if (1..=6).contains(&kind) { kind as u8 } else { p.kind },
            (3, _) => return Err(bad("`type` (field 3) is not a varint")),
            _ => {}
        }
    }
    Ok(p)
}
